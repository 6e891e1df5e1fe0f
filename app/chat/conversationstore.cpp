#include "conversationstore.h"

#include <QAtomicInt>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSaveFile>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QStandardPaths>
#include <QStringList>
#include <QVariant>

namespace {

QAtomicInt g_connectionCounter;

const char* kSchema[] = {
    "CREATE TABLE IF NOT EXISTS conversations ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT, title TEXT NOT NULL,"
    " created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS messages ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,"
    " role TEXT NOT NULL, content TEXT NOT NULL, complete INTEGER NOT NULL DEFAULT 1,"
    " created_at INTEGER NOT NULL)",
    "CREATE INDEX IF NOT EXISTS messages_by_conversation ON messages(conversation_id, id)",
};

// Columns added after the first release: (table, column, definition). A database made before
// gets them, with their defaults, when opened.
const char* kAddedColumns[][3] = {
    {"messages", "reasoning_ms", "INTEGER NOT NULL DEFAULT 0"},
    {"conversations", "thinking", "INTEGER NOT NULL DEFAULT 1"},
    // Versions: -1 until linked to the message before it (see kLinkParents).
    {"messages", "parent_id", "INTEGER NOT NULL DEFAULT -1"},
    {"messages", "active", "INTEGER NOT NULL DEFAULT 1"},
    {"messages", "model", "TEXT NOT NULL DEFAULT ''"},
    {"messages", "tokens", "INTEGER NOT NULL DEFAULT 0"},
    {"messages", "tokens_per_second", "REAL NOT NULL DEFAULT 0"},
    {"messages", "ttft_ms", "REAL NOT NULL DEFAULT 0"},
    {"messages", "stop_reason", "TEXT NOT NULL DEFAULT ''"},
    {"conversations", "settings", "TEXT NOT NULL DEFAULT ''"},
};

// Messages written before versions existed (or by an older Ember) follow the message before
// them: a database of single-version conversations reads exactly as it did.
const char* kLinkParents =
    "UPDATE messages SET parent_id = COALESCE((SELECT MAX(p.id) FROM messages p"
    " WHERE p.conversation_id = messages.conversation_id AND p.id < messages.id), 0)"
    " WHERE parent_id = -1";

const char* kMessageColumns =
    "id, role, content, complete, created_at, reasoning_ms, parent_id, active, model, tokens,"
    " tokens_per_second, ttft_ms, stop_reason";

// A row of kMessageColumns; `active` is returned apart (it is not part of StoredMessage).
StoredMessage readMessage(const QSqlQuery& q, bool* active) {
    StoredMessage m;
    m.id = q.value(0).toLongLong();
    m.role = q.value(1).toString();
    m.content = q.value(2).toString();
    m.complete = q.value(3).toBool();
    m.created = QDateTime::fromMSecsSinceEpoch(q.value(4).toLongLong());
    m.reasoningMs = q.value(5).toInt();
    m.parentId = q.value(6).toLongLong();
    *active = q.value(7).toBool();
    m.model = q.value(8).toString();
    m.tokens = q.value(9).toInt();
    m.tokensPerSecond = q.value(10).toDouble();
    m.ttftMs = q.value(11).toDouble();
    m.stopReason = q.value(12).toString();
    return m;
}

qint64 nowMs() {
    return QDateTime::currentMSecsSinceEpoch();
}

}  // namespace

ConversationStore::ConversationStore()
    : m_connection(QString("ember-store-%1").arg(g_connectionCounter.fetchAndAddRelaxed(1))) {}

ConversationStore::~ConversationStore() {
    close();
}

bool ConversationStore::fail(const QString& what, const QString& detail) const {
    m_error = what + ": " + detail;
    return false;
}

bool ConversationStore::open(const QString& path) {
    close();
    QDir().mkpath(QFileInfo(path).absolutePath());
    QSqlDatabase db = QSqlDatabase::addDatabase("QSQLITE", m_connection);
    db.setDatabaseName(path);
    if (!db.open())
        return fail("cannot open the conversation database " + path, db.lastError().text());
    QSqlQuery q(db);
    // WAL: a crash keeps every committed transaction; FULL syncs each commit to disk.
    for (const char* pragma :
         {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL", "PRAGMA foreign_keys=ON"}) {
        if (!q.exec(pragma)) return fail(QString("cannot set ") + pragma, q.lastError().text());
    }
    for (const char* stmt : kSchema) {
        if (!q.exec(stmt)) return fail("cannot create the database schema", q.lastError().text());
    }
    // The schema update is one transaction: a database is either updated whole or left as it was.
    if (!db.transaction()) return fail("cannot update the database schema", db.lastError().text());
    bool ok = true;
    for (const auto& [table, column, definition] : kAddedColumns) {
        bool present = false;
        ok = q.exec(QString("PRAGMA table_info(%1)").arg(table));
        while (ok && q.next()) present = present || q.value(1).toString() == column;
        if (ok && !present)
            ok = q.exec(QString("ALTER TABLE %1 ADD COLUMN %2 %3").arg(table, column, definition));
        if (!ok) break;
    }
    ok = ok && q.exec(kLinkParents) &&
         q.exec("CREATE INDEX IF NOT EXISTS messages_by_parent ON messages(parent_id)");
    const QString error = q.lastError().text();
    if (!ok || !db.commit()) {
        db.rollback();
        return fail("cannot update the database schema", ok ? db.lastError().text() : error);
    }
    return true;
}

void ConversationStore::close() {
    if (!QSqlDatabase::contains(m_connection)) return;
    QSqlDatabase::database(m_connection, false).close();
    QSqlDatabase::removeDatabase(m_connection);
}

bool ConversationStore::isOpen() const {
    return QSqlDatabase::contains(m_connection) &&
           QSqlDatabase::database(m_connection, false).isOpen();
}

qint64 ConversationStore::createConversation(const QString& title) {
    QSqlQuery q(QSqlDatabase::database(m_connection));
    q.prepare("INSERT INTO conversations(title, created_at, updated_at) VALUES(?, ?, ?)");
    const qint64 now = nowMs();
    q.addBindValue(title);
    q.addBindValue(now);
    q.addBindValue(now);
    if (!q.exec()) {
        fail("cannot create a conversation", q.lastError().text());
        return 0;
    }
    return q.lastInsertId().toLongLong();
}

bool ConversationStore::renameConversation(qint64 id, const QString& title) {
    QSqlQuery q(QSqlDatabase::database(m_connection));
    q.prepare("UPDATE conversations SET title = ? WHERE id = ?");
    q.addBindValue(title);
    q.addBindValue(id);
    if (!q.exec())
        return fail("cannot rename conversation " + QString::number(id), q.lastError().text());
    return q.numRowsAffected() == 1 ||
           fail("cannot rename conversation " + QString::number(id), "no such conversation");
}

bool ConversationStore::setReasoningMs(qint64 messageId, int ms) {
    QSqlQuery q(QSqlDatabase::database(m_connection));
    q.prepare("UPDATE messages SET reasoning_ms = ? WHERE id = ?");
    q.addBindValue(ms);
    q.addBindValue(messageId);
    if (!q.exec())
        return fail("cannot save message " + QString::number(messageId), q.lastError().text());
    return true;
}

bool ConversationStore::setThinking(qint64 conversationId, bool thinking) {
    QSqlQuery q(QSqlDatabase::database(m_connection));
    q.prepare("UPDATE conversations SET thinking = ? WHERE id = ?");
    q.addBindValue(thinking ? 1 : 0);
    q.addBindValue(conversationId);
    if (!q.exec())
        return fail("cannot save conversation " + QString::number(conversationId),
                    q.lastError().text());
    return true;
}

bool ConversationStore::thinking(qint64 conversationId) const {
    QSqlQuery q(QSqlDatabase::database(m_connection));
    q.prepare("SELECT thinking FROM conversations WHERE id = ?");
    q.addBindValue(conversationId);
    return !q.exec() || !q.next() || q.value(0).toBool();
}

bool ConversationStore::deleteConversation(qint64 id) {
    QSqlDatabase db = QSqlDatabase::database(m_connection);
    QSqlQuery q(db);
    q.prepare("DELETE FROM conversations WHERE id = ?");  // messages follow (ON DELETE CASCADE)
    q.addBindValue(id);
    if (!q.exec())
        return fail("cannot delete conversation " + QString::number(id), q.lastError().text());
    return true;
}

QList<ConversationSummary> ConversationStore::conversations(const QString& search) const {
    QList<ConversationSummary> out;
    QSqlQuery q(QSqlDatabase::database(m_connection));
    if (search.trimmed().isEmpty()) {
        q.prepare(
            "SELECT id, title, updated_at FROM conversations ORDER BY updated_at DESC, id DESC");
    } else {
        q.prepare(
            "SELECT id, title, updated_at FROM conversations c WHERE title LIKE ? ESCAPE '\\'"
            " OR EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = c.id"
            " AND m.content LIKE ? ESCAPE '\\') ORDER BY updated_at DESC, id DESC");
        QString pattern = search.trimmed();
        pattern.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_");
        q.addBindValue("%" + pattern + "%");
        q.addBindValue("%" + pattern + "%");
    }
    if (!q.exec()) {
        fail("cannot list conversations", q.lastError().text());
        return out;
    }
    while (q.next()) {
        out.append({q.value(0).toLongLong(), q.value(1).toString(),
                    QDateTime::fromMSecsSinceEpoch(q.value(2).toLongLong())});
    }
    return out;
}

ConversationSummary ConversationStore::conversation(qint64 id) const {
    QSqlQuery q(QSqlDatabase::database(m_connection));
    q.prepare("SELECT id, title, updated_at FROM conversations WHERE id = ?");
    q.addBindValue(id);
    if (!q.exec() || !q.next()) return {};
    return {q.value(0).toLongLong(), q.value(1).toString(),
            QDateTime::fromMSecsSinceEpoch(q.value(2).toLongLong())};
}

QList<StoredMessage> ConversationStore::allMessages(qint64 conversationId) const {
    QList<StoredMessage> out;
    QSqlQuery q(QSqlDatabase::database(m_connection));
    q.prepare(QString("SELECT %1 FROM messages WHERE conversation_id = ? ORDER BY id")
                  .arg(kMessageColumns));
    q.addBindValue(conversationId);
    if (!q.exec()) {
        fail("cannot read messages", q.lastError().text());
        return out;
    }
    bool active = true;
    while (q.next()) out.append(readMessage(q, &active));
    return out;
}

QList<StoredMessage> ConversationStore::messages(qint64 conversationId) const {
    QSqlQuery q(QSqlDatabase::database(m_connection));
    q.prepare(QString("SELECT %1 FROM messages WHERE conversation_id = ? ORDER BY id")
                  .arg(kMessageColumns));
    q.addBindValue(conversationId);
    if (!q.exec()) {
        fail("cannot read messages", q.lastError().text());
        return {};
    }
    // Each parent's replies, oldest first, and which of them is selected.
    QHash<qint64, QList<StoredMessage>> children;
    QHash<qint64, qint64> selected;
    while (q.next()) {
        bool active = true;
        StoredMessage m = readMessage(q, &active);
        if (active) selected[m.parentId] = m.id;  // the newest selected one wins
        children[m.parentId].append(std::move(m));
    }
    // From the first message, follow the selected reply (the newest when none is selected).
    QList<StoredMessage> path;
    for (qint64 parent = 0; children.contains(parent);) {
        const QList<StoredMessage>& siblings = children[parent];
        const qint64 pick = selected.value(parent, siblings.last().id);
        int i = static_cast<int>(siblings.size()) - 1;
        for (int k = 0; k < siblings.size(); ++k)
            if (siblings[k].id == pick) i = k;
        StoredMessage m = siblings[i];
        m.version = i + 1;
        m.versions = static_cast<int>(siblings.size());
        children.remove(parent);  // a damaged database with a cycle ends here
        parent = m.id;
        path.append(std::move(m));
    }
    return path;
}

QList<qint64> ConversationStore::versions(qint64 messageId) const {
    QList<qint64> out;
    QSqlQuery q(QSqlDatabase::database(m_connection));
    q.prepare(
        "SELECT s.id FROM messages s JOIN messages m ON s.conversation_id = m.conversation_id"
        " AND s.parent_id = m.parent_id WHERE m.id = ? ORDER BY s.id");
    q.addBindValue(messageId);
    if (!q.exec()) {
        fail("cannot read the versions of message " + QString::number(messageId),
             q.lastError().text());
        return out;
    }
    while (q.next()) out.append(q.value(0).toLongLong());
    return out;
}

bool ConversationStore::selectVersion(qint64 messageId) {
    QSqlDatabase db = QSqlDatabase::database(m_connection);
    const QString what = "cannot select version " + QString::number(messageId);
    if (!db.transaction()) return fail(what, db.lastError().text());
    QSqlQuery q(db);
    q.prepare(
        "UPDATE messages SET active = (id = ?) WHERE id IN (SELECT s.id FROM messages s JOIN"
        " messages m ON s.conversation_id = m.conversation_id AND s.parent_id = m.parent_id"
        " WHERE m.id = ?)");
    q.addBindValue(messageId);
    q.addBindValue(messageId);
    bool ok = q.exec();
    QString error = ok ? QString("no such message") : q.lastError().text();
    ok = ok && q.numRowsAffected() > 0;
    if (!ok || !db.commit()) {
        if (ok) error = db.lastError().text();
        db.rollback();
        return fail(what, error);
    }
    return true;
}

bool ConversationStore::setDetails(qint64 messageId, const MessageDetails& d) {
    QSqlQuery q(QSqlDatabase::database(m_connection));
    q.prepare(
        "UPDATE messages SET model = ?, tokens = ?, tokens_per_second = ?, ttft_ms = ?,"
        " stop_reason = ? WHERE id = ?");
    q.addBindValue(d.model);
    q.addBindValue(d.tokens);
    q.addBindValue(d.tokensPerSecond);
    q.addBindValue(d.ttftMs);
    q.addBindValue(d.stopReason);
    q.addBindValue(messageId);
    if (!q.exec())
        return fail("cannot save message " + QString::number(messageId), q.lastError().text());
    return true;
}

QVariantMap ConversationStore::conversationSettings(qint64 conversationId) const {
    QSqlQuery q(QSqlDatabase::database(m_connection));
    q.prepare("SELECT settings FROM conversations WHERE id = ?");
    q.addBindValue(conversationId);
    if (!q.exec() || !q.next()) return {};
    return QJsonDocument::fromJson(q.value(0).toString().toUtf8()).object().toVariantMap();
}

bool ConversationStore::setConversationSettings(qint64 conversationId,
                                                const QVariantMap& settings) {
    QSqlQuery q(QSqlDatabase::database(m_connection));
    q.prepare("UPDATE conversations SET settings = ? WHERE id = ?");
    const QByteArray json =
        settings.isEmpty()
            ? QByteArray()
            : QJsonDocument(QJsonObject::fromVariantMap(settings)).toJson(QJsonDocument::Compact);
    q.addBindValue(json.isEmpty() ? QString("") : QString::fromUtf8(json));  // NOT NULL
    q.addBindValue(conversationId);
    if (!q.exec())
        return fail("cannot save conversation " + QString::number(conversationId),
                    q.lastError().text());
    return true;
}

qint64 ConversationStore::appendMessage(qint64 conversationId, const QString& role,
                                        const QString& content, bool complete, qint64 parentId) {
    if (parentId < 0) {
        const QList<StoredMessage> shown = messages(conversationId);
        parentId = shown.isEmpty() ? 0 : shown.last().id;
    }
    QSqlDatabase db = QSqlDatabase::database(m_connection);
    if (!db.transaction()) {
        fail("cannot begin a transaction", db.lastError().text());
        return 0;
    }
    const qint64 now = nowMs();
    // The new message is the selected version among the parent's replies.
    QSqlQuery q(db);
    q.prepare("UPDATE messages SET active = 0 WHERE conversation_id = ? AND parent_id = ?");
    q.addBindValue(conversationId);
    q.addBindValue(parentId);
    bool ok = q.exec();
    if (ok) {
        q.prepare(
            "INSERT INTO messages(conversation_id, role, content, complete, created_at, parent_id,"
            " active) VALUES(?, ?, ?, ?, ?, ?, 1)");
        q.addBindValue(conversationId);
        q.addBindValue(role);
        q.addBindValue(content);
        q.addBindValue(complete ? 1 : 0);
        q.addBindValue(now);
        q.addBindValue(parentId);
        ok = q.exec();
    }
    const qint64 id = ok ? q.lastInsertId().toLongLong() : 0;
    QString error = q.lastError().text();
    if (ok) {
        QSqlQuery touch(db);
        touch.prepare("UPDATE conversations SET updated_at = ? WHERE id = ?");
        touch.addBindValue(now);
        touch.addBindValue(conversationId);
        ok = touch.exec();
        if (!ok) error = touch.lastError().text();
    }
    if (!ok || !db.commit()) {
        if (ok) error = db.lastError().text();
        db.rollback();
        fail("cannot save a message of conversation " + QString::number(conversationId), error);
        return 0;
    }
    return id;
}

bool ConversationStore::updateMessage(qint64 messageId, const QString& content, bool complete) {
    QSqlDatabase db = QSqlDatabase::database(m_connection);
    const QString what = "cannot save message " + QString::number(messageId);
    if (!db.transaction()) return fail(what, db.lastError().text());
    QSqlQuery q(db);
    q.prepare("UPDATE messages SET content = ?, complete = ? WHERE id = ?");
    q.addBindValue(content);
    q.addBindValue(complete ? 1 : 0);
    q.addBindValue(messageId);
    bool ok = q.exec();
    QString error = ok ? QString("no such message") : q.lastError().text();
    ok = ok && q.numRowsAffected() == 1;
    if (ok) {
        QSqlQuery touch(db);
        touch.prepare(
            "UPDATE conversations SET updated_at = ? WHERE id ="
            " (SELECT conversation_id FROM messages WHERE id = ?)");
        touch.addBindValue(nowMs());
        touch.addBindValue(messageId);
        ok = touch.exec();
        if (!ok) error = touch.lastError().text();
    }
    if (!ok || !db.commit()) {
        if (ok) error = db.lastError().text();
        db.rollback();
        return fail(what, error);
    }
    return true;
}

bool ConversationStore::deleteMessagesFrom(qint64 conversationId, qint64 messageId) {
    QSqlQuery q(QSqlDatabase::database(m_connection));
    // The message and everything that follows it, in every version.
    q.prepare(
        "WITH RECURSIVE doomed(id) AS (SELECT id FROM messages WHERE conversation_id = ? AND id = ?"
        " UNION ALL SELECT m.id FROM messages m JOIN doomed ON m.parent_id = doomed.id)"
        " DELETE FROM messages WHERE id IN doomed");
    q.addBindValue(conversationId);
    q.addBindValue(messageId);
    if (!q.exec()) return fail("cannot delete messages", q.lastError().text());
    return true;
}

QString ConversationStore::exportMarkdown(qint64 conversationId,
                                          const QVariantMap& settings) const {
    const ConversationSummary c = conversation(conversationId);
    QString md = "# " + c.title + "\n";
    // The settings as a list under the title; the system prompt quoted, line by line.
    QStringList about;
    if (const QString model = settings.value("model").toString(); !model.isEmpty())
        about << "- Model: " + model;
    const QVariantMap sampling = settings.value("sampling").toMap();
    if (!sampling.isEmpty()) {
        QStringList values;
        for (auto it = sampling.cbegin(); it != sampling.cend(); ++it)
            values << it.key() + " " + it.value().toString();
        about << "- Sampling: " + values.join(", ");
    }
    if (const QString system = settings.value("systemPrompt").toString(); !system.isEmpty())
        about << "- System prompt:\n\n  > " + system.trimmed().replace("\n", "\n  > ");
    if (!about.isEmpty()) md += "\n" + about.join("\n") + "\n";
    for (const StoredMessage& m : messages(conversationId)) {
        if (m.role == "system") continue;
        QString who = m.role == "user" ? "User" : "Assistant";
        if (m.versions > 1) who += QString(" (version %1 of %2)").arg(m.version).arg(m.versions);
        md += "\n## " + who + "\n\n" + m.content.trimmed() + "\n";
    }
    return md;
}

QByteArray ConversationStore::exportJson(qint64 conversationId, const QVariantMap& settings) const {
    const ConversationSummary c = conversation(conversationId);
    auto toJson = [](const StoredMessage& m) {
        QJsonObject o{{"id", m.id},
                      {"role", m.role},
                      {"content", m.content},
                      {"complete", m.complete},
                      {"created", m.created.toUTC().toString(Qt::ISODateWithMs)}};
        if (!m.model.isEmpty()) o.insert("model", m.model);
        if (m.tokens > 0) o.insert("tokens", m.tokens);
        if (m.tokensPerSecond > 0) o.insert("tokensPerSecond", m.tokensPerSecond);
        if (m.ttftMs > 0) o.insert("timeToFirstTokenMs", m.ttftMs);
        if (!m.stopReason.isEmpty()) o.insert("stopReason", m.stopReason);
        if (m.reasoningMs > 0) o.insert("reasoningMs", m.reasoningMs);
        return o;
    };
    // "messages": the conversation as shown; "allMessages": every version, each with the id
    // of the message it follows (0: the first), so that no version is lost.
    QJsonArray list, all;
    for (const StoredMessage& m : messages(conversationId)) {
        QJsonObject o = toJson(m);
        if (m.versions > 1) {
            o.insert("version", m.version);
            o.insert("versions", m.versions);
        }
        list.append(o);
    }
    for (const StoredMessage& m : allMessages(conversationId)) {
        QJsonObject o = toJson(m);
        o.insert("parent", m.parentId);
        all.append(o);
    }
    QJsonObject root{{"title", c.title},
                     {"updated", c.updated.toUTC().toString(Qt::ISODateWithMs)},
                     {"messages", list},
                     {"allMessages", all}};
    if (const QString model = settings.value("model").toString(); !model.isEmpty())
        root.insert("model", model);
    if (const QString system = settings.value("systemPrompt").toString(); !system.isEmpty())
        root.insert("systemPrompt", system);
    if (const QVariantMap sampling = settings.value("sampling").toMap(); !sampling.isEmpty())
        root.insert("sampling", QJsonObject::fromVariantMap(sampling));
    return QJsonDocument(root).toJson(QJsonDocument::Indented);
}

QString ConversationStore::defaultExportFolder() {
    const QString documents = QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation);
    if (!documents.isEmpty() && QFileInfo(documents).isDir()) return documents;
    return QDir::homePath();
}

bool ConversationStore::exportToFile(qint64 conversationId, const QString& path,
                                     const QString& format, const QVariantMap& settings) {
    if (conversation(conversationId).id == 0)
        return fail("cannot export conversation " + QString::number(conversationId),
                    "no such conversation");
    QByteArray data;
    if (format == "json") {
        data = exportJson(conversationId, settings);
    } else if (format == "markdown") {
        data = exportMarkdown(conversationId, settings).toUtf8();
    } else {
        return fail("cannot export", "unknown format '" + format + "' (expected markdown or json)");
    }
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly) || file.write(data) != data.size() || !file.commit())
        return fail("cannot write " + path, file.errorString());
    return true;
}
