// The SQLite conversation store, including a writer killed in the middle of a transaction.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QSqlDatabase>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QtTest>
#include <cstdio>
#include <thread>

#include "conversationstore.h"

namespace {

// Child modes of this binary, run through QProcess and killed with SIGKILL.
// "--open-transaction DB": commits 3 messages, then writes many rows inside a transaction
// (enough to spill pages to the WAL file) and waits to be killed before committing.
int openTransactionWriter(const QString& path) {
    ConversationStore store;
    if (!store.open(path)) return 3;
    const qint64 conv = store.createConversation("crash");
    for (int i = 0; i < 3; ++i)
        if (store.appendMessage(conv, i % 2 ? "assistant" : "user", QString("done %1").arg(i)) == 0)
            return 4;
    QSqlDatabase db = QSqlDatabase::database(store.connectionName());
    if (!db.transaction()) return 5;
    QSqlQuery q(db);
    const QString big(64 * 1024, QChar('x'));
    for (int i = 0; i < 200; ++i) {
        q.prepare(
            "INSERT INTO messages(conversation_id, role, content, complete, created_at)"
            " VALUES(?, 'assistant', ?, 1, 0)");
        q.addBindValue(conv);
        q.addBindValue(big);
        if (!q.exec()) return 6;
    }
    std::printf("IN-TRANSACTION\n");
    std::fflush(stdout);
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}

// "--append-loop DB": appends messages as fast as it can, printing each id once committed.
int appendLoopWriter(const QString& path) {
    ConversationStore store;
    if (!store.open(path)) return 3;
    const qint64 conv = store.createConversation("loop");
    const QString text(4096, QChar('y'));
    for (int i = 0;; ++i) {
        const qint64 id = store.appendMessage(conv, "user", QString::number(i) + text);
        if (id == 0) return 4;
        std::printf("%lld\n", static_cast<long long>(id));
        std::fflush(stdout);
    }
}

bool integrityOk(const QString& path) {
    const QString name = "integrity-check";
    bool ok = false;
    {
        QSqlDatabase db = QSqlDatabase::addDatabase("QSQLITE", name);
        db.setDatabaseName(path);
        QSqlQuery q(db);
        ok = db.open() && q.exec("PRAGMA integrity_check") && q.next() &&
             q.value(0).toString() == "ok";
    }
    QSqlDatabase::removeDatabase(name);
    return ok;
}

}  // namespace

class TestConversationStore : public QObject {
    Q_OBJECT
private:
    QTemporaryDir m_dir;
    QString dbPath(const QString& name) { return m_dir.filePath(name + ".sqlite"); }

private slots:
    void createAppendReload() {
        const QString path = dbPath("basic");
        qint64 a = 0, b = 0;
        {
            ConversationStore store;
            QVERIFY2(store.open(path), qPrintable(store.lastError()));
            a = store.createConversation("First");
            b = store.createConversation("Second");
            QVERIFY(a > 0 && b > a);
            QVERIFY(store.appendMessage(a, "user", "Hi there") > 0);
            QVERIFY(store.appendMessage(a, "assistant", "Hello! How can I help?") > 0);
            QVERIFY(store.appendMessage(b, "user", "Tell me about **cats**") > 0);
            QVERIFY(store.appendMessage(b, "assistant", "partial ans", false) > 0);
        }
        ConversationStore store;
        QVERIFY(store.open(path));
        const auto list = store.conversations();
        QCOMPARE(list.size(), 2);
        QCOMPARE(list[0].id, b);  // most recently updated first
        QCOMPARE(list[1].title, QString("First"));
        const auto msgs = store.messages(a);
        QCOMPARE(msgs.size(), 2);
        QCOMPARE(msgs[0].role, QString("user"));
        QCOMPARE(msgs[1].content, QString("Hello! How can I help?"));
        QVERIFY(msgs[1].complete);
        QVERIFY(!store.messages(b)[1].complete);

        // Search matches titles and message text.
        QCOMPARE(store.conversations("cats").size(), 1);
        QCOMPARE(store.conversations("cats")[0].id, b);
        QCOMPARE(store.conversations("first").size(), 1);
        QCOMPARE(store.conversations("100%").size(), 0);  // LIKE wildcards are literal

        QVERIFY(store.renameConversation(a, "Renamed"));
        QCOMPARE(store.conversation(a).title, QString("Renamed"));
        QVERIFY(!store.renameConversation(9999, "x"));
    }

    void deleteConversationAndTail() {
        ConversationStore store;
        QVERIFY(store.open(dbPath("delete")));
        const qint64 c = store.createConversation("c");
        const qint64 m1 = store.appendMessage(c, "user", "one");
        const qint64 m2 = store.appendMessage(c, "assistant", "two");
        store.appendMessage(c, "user", "three");
        QVERIFY(store.deleteMessagesFrom(c, m2));
        QCOMPARE(store.messages(c).size(), 1);
        QCOMPARE(store.messages(c)[0].id, m1);
        QVERIFY(store.deleteConversation(c));
        QCOMPARE(store.conversations().size(), 0);
        QCOMPARE(store.messages(c).size(), 0);  // cascaded
    }

    void exportMarkdownAndJson() {
        ConversationStore store;
        QVERIFY(store.open(dbPath("export")));
        const qint64 c = store.createConversation("Code help");
        store.appendMessage(c, "system", "Be brief.");
        store.appendMessage(c, "user", "Print hello in C");
        store.appendMessage(c, "assistant", "```c\nputs(\"hello\");\n```");
        const QString md = store.exportMarkdown(c);
        QVERIFY(md.startsWith("# Code help\n"));
        QVERIFY(md.contains("## User\n\nPrint hello in C\n"));
        QVERIFY(md.contains("## Assistant\n\n```c\nputs(\"hello\");\n```\n"));
        QVERIFY(!md.contains("Be brief."));

        const QString jsonPath = m_dir.filePath("export.json");
        QVERIFY2(store.exportToFile(c, jsonPath, "json"), qPrintable(store.lastError()));
        QFile f(jsonPath);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QJsonObject root = QJsonDocument::fromJson(f.readAll()).object();
        QCOMPARE(root.value("title").toString(), QString("Code help"));
        const QJsonArray msgs = root.value("messages").toArray();
        QCOMPARE(msgs.size(), 3);
        QCOMPARE(msgs[2].toObject().value("content").toString(),
                 QString("```c\nputs(\"hello\");\n```"));
        QVERIFY(store.exportToFile(c, m_dir.filePath("export.md"), "markdown"));
        QVERIFY(!store.exportToFile(c, m_dir.filePath("x.txt"), "pdf"));
        QVERIFY(store.lastError().contains("unknown format"));
        QVERIFY(!store.exportToFile(424242, m_dir.filePath("y.md"), "markdown"));
    }

    // An export says what the answers came from: the model, the system prompt, the sampling.
    void exportRecordsModelAndSettings() {
        ConversationStore store;
        QVERIFY(store.open(dbPath("export-settings")));
        const qint64 c = store.createConversation("Poem");
        store.appendMessage(c, "user", "A poem");
        store.appendMessage(c, "assistant", "Roses");
        const QVariantMap settings{{"model", "stories260K.gguf"},
                                   {"systemPrompt", "Be brief.\nRhyme."},
                                   {"sampling", QVariantMap{{"temperature", 0.8}, {"top_k", 40}}}};
        const QString md = store.exportMarkdown(c, settings);
        QVERIFY2(md.startsWith("# Poem\n\n- Model: stories260K.gguf\n"), qPrintable(md));
        QVERIFY2(md.contains("- Sampling: temperature 0.8, top_k 40\n"), qPrintable(md));
        QVERIFY2(md.contains("- System prompt:\n\n  > Be brief.\n  > Rhyme.\n"), qPrintable(md));
        QVERIFY(md.contains("## Assistant\n\nRoses\n"));
        const QJsonObject root = QJsonDocument::fromJson(store.exportJson(c, settings)).object();
        QCOMPARE(root.value("model").toString(), QString("stories260K.gguf"));
        QCOMPARE(root.value("systemPrompt").toString(), QString("Be brief.\nRhyme."));
        QCOMPARE(root.value("sampling").toObject().value("temperature").toDouble(), 0.8);
        QCOMPARE(root.value("sampling").toObject().value("top_k").toInt(), 40);
        // Without settings, nothing is made up.
        QVERIFY(!store.exportMarkdown(c).contains("Model:"));
        QVERIFY(!store.exportJson(c).contains("\"model\""));
    }

    // A fresh account without ~/Documents: exports go to home, and no folder is created.
    void exportFolderIsDocumentsOrHome() {
        const QString home = m_dir.filePath("home");
        QVERIFY(QDir().mkpath(home));
        const QByteArray oldHome = qgetenv("HOME"), oldConfig = qgetenv("XDG_CONFIG_HOME");
        qputenv("HOME", home.toUtf8());
        qputenv("XDG_CONFIG_HOME", (home + "/.config").toUtf8());
        QCOMPARE(ConversationStore::defaultExportFolder(), home);
        QVERIFY(!QFileInfo::exists(home + "/Documents"));
        QVERIFY(QDir().mkpath(home + "/Documents"));
        QCOMPARE(ConversationStore::defaultExportFolder(), home + "/Documents");
        qputenv("HOME", oldHome);
        if (oldConfig.isEmpty())
            qunsetenv("XDG_CONFIG_HOME");
        else
            qputenv("XDG_CONFIG_HOME", oldConfig);
    }

    // A database made before versions: opened, every message is where it was (a chain, each
    // the only version), and the new columns have their defaults.
    void oldDatabaseIsMigratedWithNothingLost() {
        const QString path = dbPath("old-schema");
        {
            QSqlDatabase db = QSqlDatabase::addDatabase("QSQLITE", "old-schema");
            db.setDatabaseName(path);
            QVERIFY(db.open());
            QSqlQuery q(db);
            QVERIFY(
                q.exec("CREATE TABLE conversations (id INTEGER PRIMARY KEY AUTOINCREMENT,"
                       " title TEXT NOT NULL, created_at INTEGER NOT NULL,"
                       " updated_at INTEGER NOT NULL)"));
            QVERIFY(
                q.exec("CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT,"
                       " conversation_id INTEGER NOT NULL REFERENCES conversations(id)"
                       " ON DELETE CASCADE, role TEXT NOT NULL, content TEXT NOT NULL,"
                       " complete INTEGER NOT NULL DEFAULT 1, created_at INTEGER NOT NULL)"));
            QVERIFY(
                q.exec("INSERT INTO conversations VALUES (1, 'Old', 1, 2), (2, 'Other', 1, 3)"));
            // Two conversations' messages interleaved, as they were written.
            QVERIFY(
                q.exec("INSERT INTO messages(conversation_id, role, content, complete,"
                       " created_at) VALUES (1, 'user', 'a', 1, 1), (2, 'user', 'x', 1, 1),"
                       " (1, 'assistant', 'b', 1, 1), (1, 'user', 'c', 1, 1),"
                       " (2, 'assistant', 'y', 0, 1), (1, 'assistant', 'd', 0, 1)"));
        }
        QSqlDatabase::removeDatabase("old-schema");
        for (int reopen = 0; reopen < 2; ++reopen) {
            ConversationStore store;
            QVERIFY2(store.open(path), qPrintable(store.lastError()));
            QStringList texts;
            for (const StoredMessage& m : store.messages(1)) {
                texts << m.content;
                QCOMPARE(m.versions, 1);
            }
            QCOMPARE(texts, QStringList({"a", "b", "c", "d"}));
            QCOMPARE(store.messages(2).size(), 2);
            QVERIFY(!store.messages(2)[1].complete);
            QVERIFY(store.thinking(1));
            QVERIFY(store.conversationSettings(1).isEmpty());
        }
    }

    // Regenerated answers and edited messages are versions: siblings in a tree, one of them
    // shown; the choice and every version survive a restart and an export.
    void versionsAreSiblingsAndSurvive() {
        const QString path = dbPath("versions");
        qint64 c = 0, u1 = 0, a1 = 0, a2 = 0, u2 = 0, a3 = 0;
        {
            ConversationStore store;
            QVERIFY(store.open(path));
            c = store.createConversation("Versions");
            u1 = store.appendMessage(c, "user", "Question");
            a1 = store.appendMessage(c, "assistant", "First answer");
            a2 = store.appendMessage(c, "assistant", "Second answer", true, u1);  // regenerated
            QCOMPARE(store.messages(c).size(), 2);
            QCOMPARE(store.messages(c)[1].id, a2);
            QCOMPARE(store.messages(c)[1].version, 2);
            QCOMPARE(store.messages(c)[1].versions, 2);
            QCOMPARE(store.versions(a1), QList<qint64>({a1, a2}));
            // An edited first message starts a branch of its own.
            u2 = store.appendMessage(c, "user", "Edited question", true, 0);
            a3 = store.appendMessage(c, "assistant", "Third answer");
            QCOMPARE(store.messages(c).size(), 2);
            QCOMPARE(store.messages(c)[0].id, u2);
            QCOMPARE(store.messages(c)[0].version, 2);
            QCOMPARE(store.messages(c)[1].versions, 1);
            // Back to the first question: its branch shows the answer last chosen there.
            QVERIFY(store.selectVersion(u1));
            QCOMPARE(store.messages(c)[1].id, a2);
            QVERIFY(store.selectVersion(a1));
            QVERIFY(!store.selectVersion(987654));
            MessageDetails d;
            d.model = "tiny.gguf";
            d.tokens = 12;
            d.tokensPerSecond = 34.5;
            d.ttftMs = 67;
            d.stopReason = "max_tokens";
            QVERIFY(store.setDetails(a1, d));
        }
        ConversationStore store;
        QVERIFY(store.open(path));
        const auto shown = store.messages(c);
        QCOMPARE(shown.size(), 2);
        QCOMPARE(shown[0].id, u1);
        QCOMPARE(shown[0].version, 1);
        QCOMPARE(shown[0].versions, 2);
        QCOMPARE(shown[1].id, a1);
        QCOMPARE(shown[1].version, 1);
        QCOMPARE(shown[1].versions, 2);
        QCOMPARE(shown[1].model, QString("tiny.gguf"));
        QCOMPARE(shown[1].tokens, 12);
        QCOMPARE(shown[1].tokensPerSecond, 34.5);
        QCOMPARE(shown[1].ttftMs, 67.0);
        QCOMPARE(shown[1].stopReason, QString("max_tokens"));

        const QString md = store.exportMarkdown(c);
        QVERIFY2(md.contains("## User (version 1 of 2)\n\nQuestion\n"), qPrintable(md));
        QVERIFY2(md.contains("## Assistant (version 1 of 2)\n\nFirst answer\n"), qPrintable(md));
        const QJsonObject root = QJsonDocument::fromJson(store.exportJson(c)).object();
        const QJsonArray msgs = root.value("messages").toArray();
        QCOMPARE(msgs.size(), 2);
        QCOMPARE(msgs[1].toObject().value("content").toString(), QString("First answer"));
        QCOMPARE(msgs[1].toObject().value("versions").toInt(), 2);
        QCOMPARE(msgs[1].toObject().value("tokensPerSecond").toDouble(), 34.5);
        // Every version, with what it follows.
        const QJsonArray all = root.value("allMessages").toArray();
        QCOMPARE(all.size(), 5);
        QCOMPARE(all[2].toObject().value("content").toString(), QString("Second answer"));
        QCOMPARE(all[2].toObject().value("parent").toInteger(), u1);
        QCOMPARE(all[4].toObject().value("parent").toInteger(), u2);

        // Deleting a version takes what follows it, not the other versions.
        QVERIFY(store.deleteMessagesFrom(c, u2));
        QCOMPARE(store.allMessages(c).size(), 3);
        QVERIFY(store.deleteMessagesFrom(c, a1));
        QCOMPARE(store.messages(c).size(), 2);
        QCOMPARE(store.messages(c)[1].id, a2);
        QCOMPARE(store.messages(c)[1].versions, 1);
        Q_UNUSED(a3);
    }

    void conversationSettingsAreStored() {
        ConversationStore store;
        QVERIFY(store.open(dbPath("conv-settings")));
        const qint64 c = store.createConversation("S");
        QVERIFY(store.conversationSettings(c).isEmpty());
        const QVariantMap s{{"systemPrompt", "Be brief."}, {"temperature", 0.2}};
        QVERIFY(store.setConversationSettings(c, s));
        QCOMPARE(store.conversationSettings(c).value("systemPrompt").toString(),
                 QString("Be brief."));
        QCOMPARE(store.conversationSettings(c).value("temperature").toDouble(), 0.2);
        QVERIFY(store.setConversationSettings(c, {}));
        QVERIFY(store.conversationSettings(c).isEmpty());
    }

    void killedInsideTransactionKeepsCompletedMessages() {
        const QString path = dbPath("crash");
        QProcess child;
        child.start(QCoreApplication::applicationFilePath(), {"--open-transaction", path});
        QVERIFY(child.waitForStarted());
        QVERIFY(child.waitForReadyRead(30000));
        QCOMPARE(child.readLine().trimmed(), QByteArray("IN-TRANSACTION"));
        // The uncommitted rows have reached the WAL file: this is a crash mid-write.
        QVERIFY(QFileInfo(path + "-wal").size() > 0);
        child.kill();  // SIGKILL
        QVERIFY(child.waitForFinished());
        QCOMPARE(child.exitStatus(), QProcess::CrashExit);

        QVERIFY(integrityOk(path));
        ConversationStore store;
        QVERIFY2(store.open(path), qPrintable(store.lastError()));
        const auto list = store.conversations();
        QCOMPARE(list.size(), 1);
        const auto msgs = store.messages(list[0].id);
        QCOMPARE(msgs.size(), 3);
        for (int i = 0; i < 3; ++i) QCOMPARE(msgs[i].content, QString("done %1").arg(i));
    }

    void killedDuringAppendsKeepsEveryCommittedMessage() {
        const QString path = dbPath("loop");
        QProcess child;
        child.start(QCoreApplication::applicationFilePath(), {"--append-loop", path});
        QVERIFY(child.waitForStarted());
        QList<qint64> committed;
        while (committed.size() < 50) {
            if (!child.canReadLine() && !child.waitForReadyRead(30000)) break;
            while (child.canReadLine()) committed << child.readLine().trimmed().toLongLong();
        }
        child.kill();
        QVERIFY(child.waitForFinished());
        // Lines printed between our last read and the kill are committed too.
        while (child.canReadLine()) committed << child.readLine().trimmed().toLongLong();
        QVERIFY(committed.size() >= 50);

        QVERIFY(integrityOk(path));
        ConversationStore store;
        QVERIFY(store.open(path));
        const auto msgs = store.messages(store.conversations()[0].id);
        QVERIFY(msgs.size() >= committed.size());
        for (int i = 0; i < committed.size(); ++i) {
            QCOMPARE(msgs[i].id, committed[i]);
            QCOMPARE(msgs[i].content.size(), 4096 + QString::number(i).size());
        }
    }
};

int main(int argc, char* argv[]) {
    QCoreApplication app(argc, argv);
    if (argc == 3 && QByteArray(argv[1]) == "--open-transaction")
        return openTransactionWriter(argv[2]);
    if (argc == 3 && QByteArray(argv[1]) == "--append-loop") return appendLoopWriter(argv[2]);
    TestConversationStore test;
    return QTest::qExec(&test, argc, argv);
}

#include "tst_conversationstore.moc"
