#include "messagemodel.h"

MessageModel::MessageModel(QObject* parent) : QAbstractListModel(parent) {}

int MessageModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : count();
}

QVariant MessageModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= count()) return {};
    const Row& r = m_rows[index.row()];
    switch (role) {
        case IdRole:
            return r.message.id;
        case RoleRole:
            return r.message.role;
        case Qt::DisplayRole:
        case ContentRole:
            return r.message.content;
        case CompleteRole:
            return r.message.complete;
        case StreamingRole:
            return r.streaming;
    }
    return {};
}

QHash<int, QByteArray> MessageModel::roleNames() const {
    return {{IdRole, "messageId"},
            {RoleRole, "role"},
            {ContentRole, "content"},
            {CompleteRole, "complete"},
            {StreamingRole, "streaming"}};
}

void MessageModel::reset(const QList<StoredMessage>& messages) {
    beginResetModel();
    m_rows.clear();
    for (const auto& m : messages) m_rows.append({m, false});
    endResetModel();
    emit countChanged();
}

void MessageModel::append(const StoredMessage& message, bool streaming) {
    beginInsertRows({}, count(), count());
    m_rows.append({message, streaming});
    endInsertRows();
    emit countChanged();
}

void MessageModel::appendText(const QString& text) {
    if (m_rows.isEmpty()) return;
    m_rows.last().message.content += text;
    const QModelIndex i = index(count() - 1);
    emit dataChanged(i, i, {ContentRole});
}

void MessageModel::finishLast(qint64 id, const QString& content, bool complete) {
    if (m_rows.isEmpty()) return;
    Row& r = m_rows.last();
    r.message.id = id;
    r.message.content = content;
    r.message.complete = complete;
    r.streaming = false;
    const QModelIndex i = index(count() - 1);
    emit dataChanged(i, i);
}

void MessageModel::resumeLast() {
    if (m_rows.isEmpty()) return;
    m_rows.last().streaming = true;
    const QModelIndex i = index(count() - 1);
    emit dataChanged(i, i, {StreamingRole});
}

void MessageModel::removeFrom(int row) {
    if (row < 0 || row >= count()) return;
    beginRemoveRows({}, row, count() - 1);
    m_rows.erase(m_rows.begin() + row, m_rows.end());
    endRemoveRows();
    emit countChanged();
}
