#include "conversationlistmodel.h"

ConversationListModel::ConversationListModel(ConversationStore* store, QObject* parent)
    : QAbstractListModel(parent), m_store(store) {}

int ConversationListModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : count();
}

QVariant ConversationListModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= count()) return {};
    const ConversationSummary& c = m_rows[index.row()];
    switch (role) {
        case IdRole:
            return c.id;
        case Qt::DisplayRole:
        case TitleRole:
            return c.title;
        case UpdatedRole:
            return c.updated;
    }
    return {};
}

QHash<int, QByteArray> ConversationListModel::roleNames() const {
    return {{IdRole, "conversationId"}, {TitleRole, "title"}, {UpdatedRole, "updated"}};
}

void ConversationListModel::refresh(const QString& search) {
    beginResetModel();
    m_rows = m_store->conversations(search);
    endResetModel();
    emit countChanged();
}

int ConversationListModel::indexOf(qint64 id) const {
    for (int i = 0; i < count(); ++i)
        if (m_rows[i].id == id) return i;
    return -1;
}
