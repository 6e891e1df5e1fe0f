// Conversations and their messages in SQLite. Every write is one transaction, committed as soon
// as the message is complete; the database runs in WAL mode so that a crash in the middle of a
// write loses at most that write.
#pragma once

#include <QByteArray>
#include <QDateTime>
#include <QList>
#include <QString>
#include <QVariantMap>

struct StoredMessage {
    qint64 id = 0;
    QString role;
    QString content;
    bool complete = true;  // false: the app closed while it was being generated
    QDateTime created;
    int reasoningMs = 0;  // a reasoning model's thinking time before the answer (0: none)
    // Versions: messages form a tree (each one follows its parent; 0: the first message), so
    // that a regenerated reply or an edited message is a sibling of the one it replaces. The
    // conversation shown is the path through the selected sibling at each step.
    qint64 parentId = 0;
    int version = 1;   // this message's place among its siblings (1-based)
    int versions = 1;  // how many siblings it has, itself included
    // Details of a reply: what made it and how fast (0 / empty: not recorded).
    QString model;
    int tokens = 0;
    double tokensPerSecond = 0;
    double ttftMs = 0;   // time to first token
    QString stopReason;  // the engine's: "eog", "max_tokens", "cancelled", ...
};

// How a reply was made, stored with it.
struct MessageDetails {
    QString model;
    int tokens = 0;
    double tokensPerSecond = 0;
    double ttftMs = 0;
    QString stopReason;
};

struct ConversationSummary {
    qint64 id = 0;
    QString title;
    QDateTime updated;
};

class ConversationStore {
public:
    ConversationStore();
    ~ConversationStore();
    ConversationStore(const ConversationStore&) = delete;
    ConversationStore& operator=(const ConversationStore&) = delete;

    // Opens (creating if needed) the database file; false with lastError() on failure.
    bool open(const QString& path);
    void close();
    bool isOpen() const;
    QString lastError() const { return m_error; }
    QString connectionName() const { return m_connection; }

    qint64 createConversation(const QString& title);  // 0 on failure
    bool renameConversation(qint64 id, const QString& title);
    bool deleteConversation(qint64 id);
    // The conversation's "think" switch (reasoning models think before answering; on unless
    // switched off).
    bool setThinking(qint64 conversationId, bool thinking);
    bool thinking(qint64 conversationId) const;
    // Newest first; search matches titles and message text (case-insensitive).
    QList<ConversationSummary> conversations(const QString& search = {}) const;
    ConversationSummary conversation(qint64 id) const;

    // The conversation as shown: from the first message, the selected version at each step.
    QList<StoredMessage> messages(qint64 conversationId) const;
    // Every message of every version, in the order they were written.
    QList<StoredMessage> allMessages(qint64 conversationId) const;
    // Appends a message after parentId (-1: after the last message shown). It becomes the
    // selected version among the parent's replies. 0 on failure.
    qint64 appendMessage(qint64 conversationId, const QString& role, const QString& content,
                         bool complete = true, qint64 parentId = -1);
    // The versions a message is one of (its siblings, itself included), oldest first.
    QList<qint64> versions(qint64 messageId) const;
    // Shows this version of its message (and the versions that follow it).
    bool selectVersion(qint64 messageId);
    bool setDetails(qint64 messageId, const MessageDetails& details);
    // The conversation's own settings (model, systemPrompt, sampling overrides, contextPolicy):
    // a JSON object; empty when it takes the defaults.
    QVariantMap conversationSettings(qint64 conversationId) const;
    bool setConversationSettings(qint64 conversationId, const QVariantMap& settings);
    // Replaces a message's text and completeness in one small transaction (a reply being
    // generated is saved this way as it grows); false with lastError() on failure.
    bool updateMessage(qint64 messageId, const QString& content, bool complete);
    // How long a reply's reasoning took ("Thought for 12 s").
    bool setReasoningMs(qint64 messageId, int ms);
    // Deletes the message with this id and every message that follows it (all versions).
    bool deleteMessagesFrom(qint64 conversationId, qint64 messageId);

    // settings: what the answers came from, recorded in the export ("model", "systemPrompt",
    // "sampling": a map of the sampling settings); empty entries are left out.
    QString exportMarkdown(qint64 conversationId, const QVariantMap& settings = {}) const;
    QByteArray exportJson(qint64 conversationId, const QVariantMap& settings = {}) const;
    // Where exports go unless the user picks another folder: the documents folder (XDG) where
    // the account has one, else the home folder. Nothing is created.
    static QString defaultExportFolder();
    // format: "markdown" or "json"
    bool exportToFile(qint64 conversationId, const QString& path, const QString& format,
                      const QVariantMap& settings = {});

private:
    bool fail(const QString& what, const QString& detail) const;

    QString m_connection;
    mutable QString m_error;
};
