// Reasoning models in the chat: earlier replies' reasoning stays out of the prompt (checked on
// the prompt the real templates render from what the app sends), the per-conversation "think"
// switch reaches the engine and survives a restart, and the reasoning time is stored.
#include <QFile>
#include <QSignalSpy>
#include <QSqlDatabase>
#include <QSqlQuery>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include <QProcess>

#include "chatcontroller.h"
#include "emberchatengine.h"
#include "fakechatengine.h"
#include "official_templates.h"
#include "reasoning.h"
#include "templates/chat_template.h"

namespace {

// What the app sent, rendered by `tmpl` as the engine renders it.
std::string render(const std::string& tmpl, const std::vector<EngineMessage>& sent, bool thinking) {
    ember::ChatTemplateInputs in;
    for (const auto& m : sent) in.messages.push_back({m.role, m.content});
    in.vars_json["enable_thinking"] = thinking ? "true" : "false";
    auto out = ember::render_chat_template(tmpl, in);
    return out.ok() ? out.value() : "<error: " + out.error().message + ">";
}

std::string sharedTemplate(const char* name) {
    QFile f(QString(EMBER_SHARED_DIR) + "/templates/" + name);
    return f.open(QIODevice::ReadOnly) ? f.readAll().toStdString() : std::string();
}

// A small Qwen 3-shaped file made by `ember-cli mkmodel` with the Qwen 3 vocabulary and its
// template, or `chatTemplate` instead; empty on failure (logged).
QString makeModel(const QTemporaryDir& dir, const QString& name, const char* chatTemplate) {
    const QString out = dir.filePath(name + ".gguf");
    QStringList args = {"mkmodel",
                        "-o",
                        out,
                        "--preset",
                        "qwen3-8b",
                        "--type",
                        "q8_0",
                        "--vocab-from",
                        QString(EMBER_SHARED_DIR) + "/vocab/ggml-vocab-qwen3.gguf",
                        "--threads",
                        "1",
                        "--embd",
                        "64",
                        "--heads",
                        "2",
                        "--kv-heads",
                        "1",
                        "--ffn",
                        "128",
                        "--layers",
                        "2",
                        "--head-dim",
                        "32"};
    if (chatTemplate) {
        QFile file(dir.filePath(name + ".jinja"));
        if (!file.open(QIODevice::WriteOnly)) return {};
        file.write(chatTemplate);
        args += {"--chat-template", file.fileName()};
    }
    QProcess p;
    p.start(EMBER_CLI_PATH, args);
    if (!p.waitForFinished(300000) || p.exitCode() != 0) {
        qWarning() << "mkmodel failed:" << p.readAllStandardError();
        return {};
    }
    return out;
}

}  // namespace

class TestReasoning : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    std::unique_ptr<ConversationStore> m_store;
    std::unique_ptr<InferenceController> m_inference;
    std::unique_ptr<Settings> m_settings;
    std::unique_ptr<ChatController> m_chat;
    FakeChatEngine* m_engine = nullptr;

    // A controller over the store in m_dir (a restart when called again).
    void start(const FakeScript& script) {
        m_chat.reset();
        m_inference.reset();
        m_store = std::make_unique<ConversationStore>();
        QVERIFY(m_store->open(m_dir.filePath("chat.sqlite")));
        m_inference = std::make_unique<InferenceController>([this, script] {
            auto e = std::make_unique<FakeChatEngine>(script);
            m_engine = e.get();
            return e;
        });
        m_settings = std::make_unique<Settings>();
        m_settings->resetToDefaults();
        m_settings->setSystemPrompt("");
        m_settings->setLastConversationId(0);
        m_chat =
            std::make_unique<ChatController>(m_store.get(), m_inference.get(), m_settings.get());
        QSignalSpy loaded(m_inference.get(), &InferenceController::modelChanged);
        EngineLoadOptions o;
        o.path = "fake.gguf";
        m_inference->loadModel(o);
        QVERIFY(loaded.wait(5000));
    }
    void sendAndWait(const QString& text) {
        QSignalSpy done(m_chat.get(), &ChatController::responseFinished);
        QVERIFY(m_chat->send(text));
        QVERIFY(done.wait(10000));
    }
    static FakeScript reasoningReply() {
        FakeScript s;
        s.pieces = {"<think>", "\nThe secret plan: add them.", "</think>", "\n\nThe answer is 4."};
        return s;
    }

private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        QCoreApplication::setApplicationName("ember-test-reasoning");
    }
    void cleanupTestCase() {
        m_chat.reset();
        m_inference.reset();
    }

    void reasoningIsLeftOutOfTheNextPrompt() {
        start(reasoningReply());
        sendAndWait("What is 2+2?");
        const qint64 conv = m_chat->currentConversationId();
        // Stored and shown whole: the reasoning is there to unfold.
        QCOMPARE(m_store->messages(conv)[1].content,
                 QString("<think>\nThe secret plan: add them.</think>\n\nThe answer is 4."));
        sendAndWait("And 3+3?");
        const auto sent = m_engine->lastMessages();
        QCOMPARE(sent.size(), size_t(3));
        QCOMPARE(sent[1].content, std::string("The answer is 4."));
        // On the prompt the templates render: Qwen 3's (which would also drop it), DeepSeek-R1's
        // (the same) and ChatML's (which would not: only the app leaves it out).
        const std::string qwen3 = sharedTemplate("qwen3.jinja");
        QVERIFY(!qwen3.empty());
        for (const std::string& tmpl :
             {qwen3, std::string(kDeepSeekR1Official), ember::chatml_template()}) {
            const std::string prompt = render(tmpl, sent, true);
            QVERIFY2(prompt.find("The answer is 4.") != std::string::npos, prompt.c_str());
            QVERIFY2(prompt.find("secret plan") == std::string::npos, prompt.c_str());
            QVERIFY2(prompt.find("And 3+3?") != std::string::npos, prompt.c_str());
        }
        // DeepSeek-R1 opens the reasoning in the prompt: the engine tags the reply's start.
        QVERIFY(reasoning::opensReasoning(render(kDeepSeekR1Official, sent, true)));
        QVERIFY(!reasoning::opensReasoning(render(qwen3, sent, true)));
    }

    void thinkSwitchReachesTheTemplateAndSurvivesARestart() {
        start(reasoningReply());
        QVERIFY(m_chat->thinking());  // new conversations think
        QSignalSpy changed(m_chat.get(), &ChatController::thinkingChanged);
        m_chat->setThinking(false);
        QCOMPARE(changed.count(), 1);
        sendAndWait("Quick: 2+2?");
        const qint64 off = m_chat->currentConversationId();
        QCOMPARE(m_engine->lastSampling().thinking, false);
        // Qwen 3's template then closes an empty reasoning block in the prompt.
        const std::string prompt =
            render(sharedTemplate("qwen3.jinja"), m_engine->lastMessages(), false);
        QVERIFY2(prompt.ends_with("<|im_start|>assistant\n<think>\n\n</think>\n\n"),
                 prompt.c_str());

        m_chat->newConversation();
        QVERIFY(m_chat->thinking());
        sendAndWait("Think: 2+2?");
        const qint64 on = m_chat->currentConversationId();
        QCOMPARE(m_engine->lastSampling().thinking, true);

        start(reasoningReply());  // a restart
        m_chat->selectConversation(off);
        QCOMPARE(m_chat->thinking(), false);
        m_chat->selectConversation(on);
        QCOMPARE(m_chat->thinking(), true);
        m_chat->setThinking(false);
        start(reasoningReply());
        m_chat->selectConversation(on);
        QCOMPARE(m_chat->thinking(), false);
    }

    // A database from before the reasoning columns gets them when opened; nothing is lost.
    void olderDatabaseGetsTheNewColumns() {
        const QString path = m_dir.filePath("old.sqlite");
        {
            QSqlDatabase db = QSqlDatabase::addDatabase("QSQLITE", "old");
            db.setDatabaseName(path);
            QVERIFY(db.open());
            QSqlQuery q(db);
            QVERIFY(
                q.exec("CREATE TABLE conversations (id INTEGER PRIMARY KEY AUTOINCREMENT,"
                       " title TEXT NOT NULL, created_at INTEGER NOT NULL,"
                       " updated_at INTEGER NOT NULL)"));
            QVERIFY(
                q.exec("CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT,"
                       " conversation_id INTEGER NOT NULL, role TEXT NOT NULL,"
                       " content TEXT NOT NULL, complete INTEGER NOT NULL DEFAULT 1,"
                       " created_at INTEGER NOT NULL)"));
            QVERIFY(q.exec("INSERT INTO conversations VALUES (1, 'Old', 0, 0)"));
            QVERIFY(q.exec("INSERT INTO messages VALUES (1, 1, 'user', 'Hi', 1, 0)"));
            db.close();
        }
        QSqlDatabase::removeDatabase("old");
        ConversationStore store;
        QVERIFY2(store.open(path), qPrintable(store.lastError()));
        QCOMPARE(store.messages(1).size(), 1);
        QCOMPARE(store.messages(1)[0].reasoningMs, 0);
        QVERIFY(store.thinking(1));
        QVERIFY(store.setReasoningMs(1, 5000) && store.setThinking(1, false));
        store.close();
        QVERIFY(store.open(path));  // opened again: the columns are not added twice
        QCOMPARE(store.messages(1)[0].reasoningMs, 5000);
        QVERIFY(!store.thinking(1));
    }

    // The real engine: a template that opens the reasoning (DeepSeek-R1) gets the reply's
    // start tagged; one that takes enable_thinking (Qwen 3) offers the switch.
    void engineTagsReasoningTheTemplateOpened() {
        const QString deepseek = makeModel(m_dir, "r1", kDeepSeekR1Official);
        const QString qwen3 = makeModel(m_dir, "qwen3", nullptr);
        QVERIFY(!deepseek.isEmpty() && !qwen3.isEmpty());
        for (const QString& path : {deepseek, qwen3}) {
            EmberChatEngine engine;
            EngineLoadOptions o;
            o.path = path.toStdString();
            o.device = "cpu";
            o.threads = 1;
            o.contextLength = 256;
            auto loaded = engine.load(o, {}, nullptr);
            QVERIFY2(loaded.ok(), loaded.ok() ? "" : loaded.error().message.c_str());
            QCOMPARE(loaded.value().thinkingSwitch, path == qwen3);
            EngineSampling s;
            s.temperature = 0;
            s.maxTokens = 3;
            std::vector<std::string> pieces;
            auto out = engine.generate({{"user", "Hi"}}, s, nullptr,
                                       [&](std::string_view t) {
                                           pieces.emplace_back(t);
                                           return true;
                                       },
                                       {});
            QVERIFY2(out.ok(), out.ok() ? "" : out.error().message.c_str());
            QVERIFY(!pieces.empty());
            QCOMPARE(pieces[0] == "<think>\n", path == deepseek);
        }
    }

    void reasoningTimeIsStored() {
        start(reasoningReply());
        sendAndWait("2+2?");
        const qint64 conv = m_chat->currentConversationId();
        const qint64 id = m_store->messages(conv)[1].id;
        QVERIFY(m_store->setReasoningMs(id, 12400));
        start(reasoningReply());
        m_chat->selectConversation(conv);
        QCOMPARE(m_chat->messages()->at(1).reasoningMs, 12400);
        const QModelIndex row = m_chat->messages()->index(1);
        QCOMPARE(row.data(MessageModel::ReasoningMsRole).toInt(), 12400);
        auto* blocks =
            qobject_cast<MessageBlocks*>(row.data(MessageModel::BlocksRole).value<QObject*>());
        QVERIFY(blocks && blocks->hasReasoning() && !blocks->thinking());
    }
};

QTEST_MAIN(TestReasoning)
#include "tst_reasoning.moc"
