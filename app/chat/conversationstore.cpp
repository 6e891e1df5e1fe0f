#include "conversationstore.h"

#include <QAtomicInt>
#include <QDir>
#include <QFile>
#include <QFileInfo>
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
};

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
    for (const auto& [table, column, definition] : kAddedColumns) {
        bool present = false;
        if (!q.exec(QString("PRAGMA table_info(%1)").arg(table)))
            return fail("cannot read the database schema", q.lastError().text());
        while (q.next()) present = present || q.value(1).toString() == column;
        if (!present &&
            !q.exec(QString("ALTER TABLE %1 ADD COLUMN %2 %3").arg(table, column, definition)))
            return fail("cannot update the database schema", q.lastError().text());
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

QList<StoredMessage> ConversationStore::messages(qint64 conversationId) const {
    QList<StoredMessage> out;
    QSqlQuery q(QSqlDatabase::database(m_connection));
    q.prepare(
        "SELECT id, role, content, complete, created_at, reasoning_ms FROM messages"
        " WHERE conversation_id = ? ORDER BY id");
    q.addBindValue(conversationId);
    if (!q.exec()) {
        fail("cannot read messages", q.lastError().text());
        return out;
    }
    while (q.next()) {
        out.append({q.value(0).toLongLong(), q.value(1).toString(), q.value(2).toString(),
                    q.value(3).toBool(), QDateTime::fromMSecsSinceEpoch(q.value(4).toLongLong()),
                    q.value(5).toInt()});
    }
    return out;
}

qint64 ConversationStore::appendMessage(qint64 conversationId, const QString& role,
                                        const QString& content, bool complete) {
    QSqlDatabase db = QSqlDatabase::database(m_connection);
    if (!db.transaction()) {
        fail("cannot begin a transaction", db.lastError().text());
        return 0;
    }
    const qint64 now = nowMs();
    QSqlQuery q(db);
    q.prepare(
        "INSERT INTO messages(conversation_id, role, content, complete, created_at)"
        " VALUES(?, ?, ?, ?, ?)");
    q.addBindValue(conversationId);
    q.addBindValue(role);
    q.addBindValue(content);
    q.addBindValue(complete ? 1 : 0);
    q.addBindValue(now);
    bool ok = q.exec();
    const qint64 id = q.lastInsertId().toLongLong();
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
    q.prepare("DELETE FROM messages WHERE conversation_id = ? AND id >= ?");
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
        const QString who = m.role == "user" ? "User" : "Assistant";
        md += "\n## " + who + "\n\n" + m.content.trimmed() + "\n";
    }
    return md;
}

QByteArray ConversationStore::exportJson(qint64 conversationId, const QVariantMap& settings) const {
    const ConversationSummary c = conversation(conversationId);
    QJsonArray list;
    for (const StoredMessage& m : messages(conversationId)) {
        list.append(QJsonObject{{"role", m.role},
                                {"content", m.content},
                                {"complete", m.complete},
                                {"created", m.created.toUTC().toString(Qt::ISODateWithMs)}});
    }
    QJsonObject root{{"title", c.title},
                     {"updated", c.updated.toUTC().toString(Qt::ISODateWithMs)},
                     {"messages", list}};
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
