// The messages of the open conversation, for the chat view. The last row may be a response
// still being generated (streaming).
#pragma once

#include <QtQml/qqmlregistration.h>
#include <QAbstractListModel>
#include <QList>
#include <functional>

#include "conversationstore.h"
#include "messageblocks.h"

class MessageModel : public QAbstractListModel {
    Q_OBJECT
    QML_ELEMENT
    QML_UNCREATABLE("ChatController.messages")
    Q_PROPERTY(int count READ count NOTIFY countChanged)
public:
    enum Role {
        IdRole = Qt::UserRole + 1,
        RoleRole,
        ContentRole,
        CompleteRole,
        StreamingRole,
        BlocksRole,       // MessageBlocks*: the content parsed for display
        ReasoningMsRole,  // how long the reply's reasoning took (0: not measured)
        VersionRole,      // which version of the message this is (1-based)
        VersionsRole,     // how many versions it has
        ModelRole,        // details of a reply: the model's file name
        TokensRole,
        TokensPerSecondRole,
        TtftMsRole,     // time to first token
        StopReasonRole  // "eog", "max_tokens", "cancelled", ... (empty: not recorded)
    };
    using Clock = std::function<qint64()>;  // milliseconds, never decreasing

    // clock: times the reasoning of streamed replies; a monotonic one unless a test injects one.
    explicit MessageModel(QObject* parent = nullptr, Clock clock = {});

    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QHash<int, QByteArray> roleNames() const override;
    int count() const { return static_cast<int>(m_rows.size()); }

    void reset(const QList<StoredMessage>& messages);
    void append(const StoredMessage& message, bool streaming = false);
    void appendText(const QString& text);  // to the last row
    // Replaces the last row's content and marks it done.
    void finishLast(qint64 id, const QString& content, bool complete);
    // The last row's details, once its reply is done.
    void setLastDetails(const MessageDetails& details);
    void removeFrom(int row);
    // Marks the last row as streaming again (its reply is being continued).
    void resumeLast();
    const StoredMessage& at(int row) const { return m_rows[row].message; }
    bool lastIsStreaming() const { return !m_rows.isEmpty() && m_rows.last().streaming; }
    bool rowIsStreaming(int row) const { return m_rows[row].streaming; }

signals:
    void countChanged();

private:
    struct Row {
        StoredMessage message;
        bool streaming = false;
        MessageBlocks* blocks = nullptr;  // owned by the model
    };
    Row makeRow(const StoredMessage& message, bool streaming);
    void dropRow(Row& row);

    QList<Row> m_rows;
    Clock m_clock;
    qint64 m_reasoningStart = -1;  // when the streaming reply's reasoning began
};
