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
