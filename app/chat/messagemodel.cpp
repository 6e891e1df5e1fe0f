#include "messagemodel.h"

#include <QElapsedTimer>

MessageModel::MessageModel(QObject* parent, Clock clock)
    : QAbstractListModel(parent), m_clock(std::move(clock)) {
    if (!m_clock) {
        m_clock = [timer = std::make_shared<QElapsedTimer>()] {
            if (!timer->isValid()) timer->start();
            return timer->elapsed();
        };
    }
}

MessageModel::Row MessageModel::makeRow(const StoredMessage& message, bool streaming) {
    Row r{message, streaming, new MessageBlocks(this)};
    r.blocks->setText(message.content);
    return r;
}

void MessageModel::dropRow(Row& row) {
    // QML may still hold the object until its delegate goes.
    if (row.blocks) row.blocks->deleteLater();
    row.blocks = nullptr;
}

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
        case BlocksRole:
            return QVariant::fromValue<QObject*>(r.blocks);
        case ReasoningMsRole:
            return r.message.reasoningMs;
        case VersionRole:
            return r.message.version;
        case VersionsRole:
            return r.message.versions;
        case ModelRole:
            return r.message.model;
        case TokensRole:
            return r.message.tokens;
        case TokensPerSecondRole:
            return r.message.tokensPerSecond;
        case TtftMsRole:
            return r.message.ttftMs;
        case StopReasonRole:
            return r.message.stopReason;
    }
    return {};
}

QHash<int, QByteArray> MessageModel::roleNames() const {
    return {{IdRole, "messageId"},
            {RoleRole, "role"},
            {ContentRole, "content"},
            {CompleteRole, "complete"},
            {StreamingRole, "streaming"},
            {BlocksRole, "blocks"},
            {ReasoningMsRole, "reasoningMs"},
            {VersionRole, "version"},
            {VersionsRole, "versions"},
            {ModelRole, "model"},
            {TokensRole, "tokens"},
            {TokensPerSecondRole, "tokensPerSecond"},
            {TtftMsRole, "ttftMs"},
            {StopReasonRole, "stopReason"}};
}

void MessageModel::reset(const QList<StoredMessage>& messages) {
    beginResetModel();
    for (Row& r : m_rows) dropRow(r);
    m_rows.clear();
    for (const auto& m : messages) m_rows.append(makeRow(m, false));
    endResetModel();
    emit countChanged();
}

void MessageModel::append(const StoredMessage& message, bool streaming) {
    beginInsertRows({}, count(), count());
    m_rows.append(makeRow(message, streaming));
    m_reasoningStart = -1;
    endInsertRows();
    emit countChanged();
}

void MessageModel::appendText(const QString& text) {
    if (m_rows.isEmpty()) return;
    Row& r = m_rows.last();
    r.message.content += text;
    // Only the message's last block is parsed again.
    const bool wasThinking = r.blocks->thinking();
    r.blocks->setText(r.message.content);
    QList<int> roles{ContentRole};
    if (r.streaming && r.blocks->thinking() && !wasThinking) m_reasoningStart = m_clock();
    if (r.streaming && wasThinking && !r.blocks->thinking() && m_reasoningStart >= 0) {
        r.message.reasoningMs = static_cast<int>(m_clock() - m_reasoningStart);
        roles.append(ReasoningMsRole);
    }
    const QModelIndex i = index(count() - 1);
    emit dataChanged(i, i, roles);
}

void MessageModel::finishLast(qint64 id, const QString& content, bool complete) {
    if (m_rows.isEmpty()) return;
    Row& r = m_rows.last();
    r.message.id = id;
    r.message.content = content;
    r.message.complete = complete;
    // Stopped while still reasoning: it took this long so far.
    if (r.streaming && r.blocks->thinking() && m_reasoningStart >= 0)
        r.message.reasoningMs = static_cast<int>(m_clock() - m_reasoningStart);
    r.streaming = false;
    r.blocks->setText(content);
    const QModelIndex i = index(count() - 1);
    emit dataChanged(i, i);
}

void MessageModel::setLastDetails(const MessageDetails& d) {
    if (m_rows.isEmpty()) return;
    StoredMessage& m = m_rows.last().message;
    m.model = d.model;
    m.tokens = d.tokens;
    m.tokensPerSecond = d.tokensPerSecond;
    m.ttftMs = d.ttftMs;
    m.stopReason = d.stopReason;
    const QModelIndex i = index(count() - 1);
    emit dataChanged(i, i,
                     {ModelRole, TokensRole, TokensPerSecondRole, TtftMsRole, StopReasonRole});
}

void MessageModel::resumeLast() {
    if (m_rows.isEmpty()) return;
    m_rows.last().streaming = true;
    m_reasoningStart = m_rows.last().blocks->thinking() ? m_clock() : -1;
    const QModelIndex i = index(count() - 1);
    emit dataChanged(i, i, {StreamingRole});
}

void MessageModel::removeFrom(int row) {
    if (row < 0 || row >= count()) return;
    beginRemoveRows({}, row, count() - 1);
    for (int i = row; i < count(); ++i) dropRow(m_rows[i]);
    m_rows.erase(m_rows.begin() + row, m_rows.end());
    endRemoveRows();
    emit countChanged();
}
