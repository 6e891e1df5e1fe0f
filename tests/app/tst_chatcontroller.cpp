// ChatController with the fake engine and a real store: sending, saving, regenerating, editing,
// and keeping a response that is still generating when the app closes.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include "chatcontroller.h"
#include "fakechatengine.h"

namespace {
FakeScript words(int n, std::chrono::microseconds delay = {}) {
    FakeScript s;
    for (int i = 0; i < n; ++i) s.pieces.push_back(i ? " w" : "w");
    s.delay = delay;
    return s;
}
// What the engine was sent, one "role: content" line per message.
QStringList sent(const std::vector<EngineMessage>& messages) {
    QStringList out;
    for (const EngineMessage& m : messages)
        out << QString::fromStdString(m.role + ": " + m.content);
    return out;
}
}  // namespace

class TestChatController : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    std::unique_ptr<ConversationStore> m_store;
    std::unique_ptr<InferenceController> m_inference;
    std::unique_ptr<Settings> m_settings;
    std::unique_ptr<ChatController> m_chat;
    FakeChatEngine* m_engine = nullptr;

    void setUp(const FakeScript& script) {
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
        m_settings->setSystemPrompt("You are terse.");
        m_settings->setLastConversationId(0);  // each test starts with no conversation open
        m_chat =
            std::make_unique<ChatController>(m_store.get(), m_inference.get(), m_settings.get());
        QSignalSpy loaded(m_inference.get(), &InferenceController::modelChanged);
        EngineLoadOptions o;
        o.path = "fake.gguf";
        m_inference->loadModel(o);
        QVERIFY(loaded.wait(5000));
    }

    QString sendAndWait(const QString& text) {
        QSignalSpy done(m_chat.get(), &ChatController::responseFinished);
        if (!m_chat->send(text)) return "<not sent>";
        if (!done.wait(10000)) return "<timeout>";
        return done.at(0).at(0).toString();
    }

private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        QCoreApplication::setApplicationName("ember-test-chat");
    }
    void cleanupTestCase() {
        m_chat.reset();
        m_inference.reset();
    }

    void sendSavesBothMessages() {
        setUp(words(3));
        QCOMPARE(sendAndWait("  Hello  "), QString("w w w"));
        const qint64 conv = m_chat->currentConversationId();
        QVERIFY(conv > 0);
        QCOMPARE(m_chat->currentTitle(), QString("Hello"));
        const auto saved = m_store->messages(conv);
        QCOMPARE(saved.size(), 2);
        QCOMPARE(saved[0].content, QString("Hello"));
        QCOMPARE(saved[1].content, QString("w w w"));
        QCOMPARE(m_chat->messages()->count(), 2);
        QCOMPARE(m_chat->messages()->at(1).id, saved[1].id);
        QCOMPARE(m_chat->conversations()->count(), 1);
        // The engine got the system prompt first, then the turns.
        const auto seen = m_engine->lastMessages();
        QCOMPARE(seen.size(), size_t(2));
        QCOMPARE(seen[0].content, std::string("You are terse."));

        // A second turn sends the whole history.
        sendAndWait("More");
        QCOMPARE(m_engine->lastMessages().size(), size_t(4));
        QCOMPARE(m_store->messages(conv).size(), 4);
    }

    // Regenerate keeps the earlier answer as version 1 of 2; the arrows switch back to it,
    // and the choice survives a restart.
    void regenerateKeepsTheEarlierAnswer() {
        setUp(words(2));
        sendAndWait("Hi");
        const qint64 conv = m_chat->currentConversationId();
        const qint64 oldId = m_store->messages(conv)[1].id;
        QSignalSpy done(m_chat.get(), &ChatController::responseFinished);
        m_chat->regenerate();
        QCOMPARE(m_chat->messages()->at(1).version, 2);  // while it streams
        QVERIFY(done.wait(5000));
        const auto saved = m_store->messages(conv);
        QCOMPARE(saved.size(), 2);
        QVERIFY(saved[1].id != oldId);
        QCOMPARE(saved[1].version, 2);
        QCOMPARE(saved[1].versions, 2);
        QCOMPARE(m_store->allMessages(conv).size(), 3);
        QCOMPARE(m_chat->messages()->count(), 2);
        QCOMPARE(m_chat->messages()->at(1).versions, 2);
        // The engine saw the question once, not the earlier answer.
        QCOMPARE(m_engine->lastMessages().size(), size_t(2));

        m_chat->switchVersion(1, -1);
        QCOMPARE(m_chat->messages()->count(), 2);
        QCOMPARE(m_chat->messages()->at(1).id, oldId);
        QCOMPARE(m_chat->messages()->at(1).version, 1);
        m_chat->switchVersion(1, -1);  // there is none before the first
        QCOMPARE(m_chat->messages()->at(1).id, oldId);
        m_chat.reset();  // the app closes and starts again
        m_chat =
            std::make_unique<ChatController>(m_store.get(), m_inference.get(), m_settings.get());
        QCOMPARE(m_chat->currentConversationId(), conv);
        QCOMPARE(m_chat->messages()->at(1).id, oldId);
        QCOMPARE(m_chat->messages()->at(1).versions, 2);
        // The export (the chat's Export menu) has both versions, and the one chosen.
        const QString file = m_dir.filePath("versions.json");
        QVERIFY(m_chat->exportConversation(QUrl::fromLocalFile(file), "json"));
        QFile f(file);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QJsonObject root = QJsonDocument::fromJson(f.readAll()).object();
        const QJsonArray shown = root.value("messages").toArray();
        QCOMPARE(shown.size(), 2);
        QCOMPARE(shown[1].toObject().value("version").toInt(), 1);
        QCOMPARE(shown[1].toObject().value("versions").toInt(), 2);
        QCOMPARE(root.value("allMessages").toArray().size(), 3);
    }

    // Editing a message starts a branch: the old question and what followed it stay stored.
    void editStartsABranch() {
        setUp(words(2));
        sendAndWait("First question");
        sendAndWait("Second question");
        const qint64 conv = m_chat->currentConversationId();
        QSignalSpy done(m_chat.get(), &ChatController::responseFinished);
        m_chat->editAndResend(0, "Edited question");
        QVERIFY(done.wait(5000));
        const auto saved = m_store->messages(conv);
        QCOMPARE(saved.size(), 2);
        QCOMPARE(saved[0].content, QString("Edited question"));
        QCOMPARE(saved[0].version, 2);
        QCOMPARE(saved[0].versions, 2);
        QCOMPARE(m_store->allMessages(conv).size(), 6);
        QCOMPARE(m_engine->lastMessages().size(), size_t(2));
        QCOMPARE(m_engine->lastMessages()[1].content, std::string("Edited question"));
        // Back to the first version: the whole first branch shows again.
        m_chat->switchVersion(0, -1);
        QCOMPARE(m_chat->messages()->count(), 4);
        QCOMPARE(m_chat->messages()->at(0).content, QString("First question"));
        QCOMPARE(m_chat->messages()->at(2).content, QString("Second question"));
        QCOMPARE(m_store->messages(conv).size(), 4);
        // A message sent now follows the branch shown.
        sendAndWait("Third question");
        QCOMPARE(m_engine->lastMessages().size(), size_t(6));
        QCOMPARE(m_store->messages(conv).size(), 6);
    }

    // The prompt is built from the store: after a restart (a new controller on the same database)
    // the same conversation gives the same prompt, with the versions chosen and the branch taken
    // before, and earlier replies' reasoning left out.
    void promptIsTheSameAfterARestart() {
        FakeScript script;
        script.pieces = {"<think>", "secret plan", "</think>", "Answer."};
        setUp(script);
        sendAndWait("Q1");
        const qint64 conv = m_chat->currentConversationId();
        QSignalSpy done(m_chat.get(), &ChatController::responseFinished);
        m_chat->regenerate();  // Q1's reply gets a second version, the one shown
        QVERIFY(done.wait(5000));
        // Its first version is told apart by its text.
        QVERIFY(m_store->updateMessage(m_store->versions(m_store->messages(conv)[1].id)[0],
                                       "Old answer.", true));
        sendAndWait("Q2");
        m_chat->editAndResend(2, "Q2 edited");  // a branch beside Q2
        QVERIFY(done.wait(5000));
        m_chat->switchVersion(2, -1);  // back to Q2 and its reply
        QCOMPARE(m_chat->messages()->at(2).content, QString("Q2"));
        const QStringList expected{"system: You are terse.", "user: Q1", "assistant: Answer.",
                                   "user: Q2"};
        m_chat->regenerate();
        QVERIFY(done.wait(5000));
        const QStringList before = sent(m_engine->lastMessages());
        QCOMPARE(before, expected);

        // The app closes and starts again: a new store connection and a new controller.
        m_chat.reset();
        m_store = std::make_unique<ConversationStore>();
        QVERIFY(m_store->open(m_dir.filePath("chat.sqlite")));
        m_chat =
            std::make_unique<ChatController>(m_store.get(), m_inference.get(), m_settings.get());
        QCOMPARE(m_chat->currentConversationId(), conv);
        QCOMPARE(m_chat->messages()->at(1).version, 2);
        QCOMPARE(m_chat->messages()->at(3).version, 2);
        QSignalSpy doneAfter(m_chat.get(), &ChatController::responseFinished);
        m_chat->regenerate();
        QVERIFY(doneAfter.wait(5000));
        QCOMPARE(sent(m_engine->lastMessages()), before);
        QCOMPARE(m_chat->messages()->at(3).versions, 3);
        sendAndWait("Q3");
        QCOMPARE(sent(m_engine->lastMessages()),
                 (expected + QStringList{"assistant: Answer.", "user: Q3"}));
    }

    // What only the view shows never reaches the model: the prompt is the stored conversation,
    // and a version chosen in the view reaches the prompt through the store.
    void viewOnlyChangesDoNotReachThePrompt() {
        setUp(words(2));
        sendAndWait("Q1");
        sendAndWait("Q2");
        const qint64 conv = m_chat->currentConversationId();
        QCOMPARE(m_chat->messages()->count(), 4);
        // The view loses rows and gains one that was never stored.
        m_chat->messages()->removeFrom(1);
        StoredMessage unstored;
        unstored.role = "user";
        unstored.content = "never stored";
        m_chat->messages()->append(unstored);
        sendAndWait("Q3");
        QCOMPARE(sent(m_engine->lastMessages()),
                 (QStringList{"system: You are terse.", "user: Q1", "assistant: w w", "user: Q2",
                              "assistant: w w", "user: Q3"}));
        // The view shows the stored conversation again.
        QCOMPARE(m_chat->messages()->count(), 6);
        for (int i = 0; i < 6; ++i)
            QCOMPARE(m_chat->messages()->at(i).id, m_store->messages(conv)[i].id);

        // A second reply to Q3; the first one's stored text is told apart.
        const qint64 first = m_store->messages(conv)[5].id;
        QVERIFY(m_store->updateMessage(first, "first reply", true));
        QSignalSpy done(m_chat.get(), &ChatController::responseFinished);
        m_chat->regenerate();
        QVERIFY(done.wait(5000));
        m_chat->switchVersion(5, -1);  // the view's arrows choose the first reply in the store
        QCOMPARE(m_chat->messages()->at(5).content, QString("first reply"));
        sendAndWait("Q4");
        QCOMPARE(sent(m_engine->lastMessages()).at(6), QString("assistant: first reply"));
        QCOMPARE(m_store->messages(conv)[6].parentId, first);
    }

    // Under each reply: the model, tokens, speed and time to first token, stored with it.
    void replyDetailsAreStored() {
        FakeScript script = words(3);
        script.tokensPerSecond = 42.5;
        script.ttftMs = 120;
        setUp(script);
        sendAndWait("Hi");
        const auto saved = m_store->messages(m_chat->currentConversationId());
        QCOMPARE(saved[1].model, QString("fake.gguf"));
        QCOMPARE(saved[1].tokens, 3);
        QCOMPARE(saved[1].tokensPerSecond, 42.5);
        QCOMPARE(saved[1].ttftMs, 120.0);
        QCOMPARE(saved[1].stopReason, QString("eog"));
        const QModelIndex row = m_chat->messages()->index(1);
        QCOMPARE(row.data(MessageModel::ModelRole).toString(), QString("fake.gguf"));
        QCOMPARE(row.data(MessageModel::TokensPerSecondRole).toDouble(), 42.5);
        QCOMPARE(row.data(MessageModel::TtftMsRole).toDouble(), 120.0);
    }

    // A reply cut at the token limit can be continued: it is stored as not complete.
    void replyAtTheTokenLimitCanBeContinued() {
        FakeScript script = words(2);
        script.stopReason = "max_tokens";
        setUp(script);
        QCOMPARE(sendAndWait("Tell a story"), QString("w w"));
        const qint64 conv = m_chat->currentConversationId();
        QVERIFY(!m_store->messages(conv)[1].complete);
        QCOMPARE(m_store->messages(conv)[1].stopReason, QString("max_tokens"));
        QVERIFY(!m_chat->messages()->at(1).complete);
        QSignalSpy done(m_chat.get(), &ChatController::responseFinished);
        m_chat->continueResponse();
        QVERIFY(done.wait(5000));
        QVERIFY(m_engine->lastSampling().continueLast);
        QCOMPARE(m_engine->lastMessages().back().content, std::string("w w"));
        QCOMPARE(m_store->messages(conv).size(), 2);
        QCOMPARE(m_store->messages(conv)[1].content, QString("w ww w"));
    }

    void quitWhileGeneratingKeepsPartialAnswer() {
        setUp(words(5000, std::chrono::milliseconds(1)));
        QSignalSpy generating(m_chat.get(), &ChatController::generatingChanged);
        m_chat->send("Tell a long story");
        const qint64 conv = m_chat->currentConversationId();
        // Wait until some text has streamed into the view.
        QTRY_VERIFY_WITH_TIMEOUT(
            m_chat->messages()->count() == 2 && m_chat->messages()->at(1).content.size() > 10,
            5000);
        m_chat->saveInterrupted();  // what aboutToQuit does
        const auto saved = m_store->messages(conv);
        QCOMPARE(saved.size(), 2);
        QVERIFY(!saved[1].complete);
        QVERIFY(saved[1].content.startsWith("w w"));
        // The worker stops; its late result is not saved a second time.
        QTRY_VERIFY_WITH_TIMEOUT(!m_inference->generating(), 5000);
        QCOMPARE(m_store->messages(conv).size(), 2);
    }

    // A kill -9 or a power cut loses at most about a second of a reply: the growing reply is in
    // the database (marked incomplete) while it is being generated.
    void growingReplyIsSavedEverySecond() {
        setUp(words(5000, std::chrono::milliseconds(1)));
        QVERIFY(m_chat->send("Tell a long story"));
        const qint64 conv = m_chat->currentConversationId();
        // Another connection to the same file sees what a crash would leave.
        ConversationStore reader;
        QVERIFY(reader.open(m_dir.filePath("chat.sqlite")));
        auto savedReply = [&] {
            const auto saved = reader.messages(conv);
            return saved.size() == 2 ? saved[1] : StoredMessage{};
        };
        QTRY_VERIFY_WITH_TIMEOUT(!savedReply().content.isEmpty(), 5000);
        QCOMPARE(savedReply().role, QString("assistant"));
        QVERIFY(!savedReply().complete);
        const int before = savedReply().content.size();
        QTRY_VERIFY_WITH_TIMEOUT(savedReply().content.size() > before, 5000);
        QVERIFY(m_inference->generating());
        QVERIFY(!savedReply().complete);
        // Stopped, it is one reply, not a second row, and it can be continued.
        QSignalSpy done(m_chat.get(), &ChatController::responseFinished);
        m_chat->stop();
        QVERIFY(done.wait(5000));
        QCOMPARE(reader.messages(conv).size(), 2);
        QVERIFY(!savedReply().complete);
        QCOMPARE(savedReply().stopReason, QString("cancelled"));
        QCOMPARE(savedReply().content, done.at(0).at(0).toString());
    }

    // After a crash the conversation ends with an incomplete reply: Continue generates more of
    // it (the engine is asked to continue the last message) into the same message.
    void continueExtendsAnIncompleteReply() {
        setUp(words(3));
        const qint64 conv = m_store->createConversation("Story");
        QVERIFY(m_store->appendMessage(conv, "user", "Tell a story") > 0);
        const qint64 reply = m_store->appendMessage(conv, "assistant", "Once upon", false);
        QVERIFY(reply > 0);
        m_chat->selectConversation(conv);
        QSignalSpy done(m_chat.get(), &ChatController::responseFinished);
        m_chat->continueResponse();
        QVERIFY(done.wait(5000));
        QCOMPARE(done.at(0).at(0).toString(), QString("Once uponw w w"));
        QVERIFY(m_engine->lastSampling().continueLast);
        const auto seen = m_engine->lastMessages();
        QCOMPARE(seen.back().role, std::string("assistant"));
        QCOMPARE(seen.back().content, std::string("Once upon"));
        const auto saved = m_store->messages(conv);
        QCOMPARE(saved.size(), 2);
        QCOMPARE(saved[1].id, reply);
        QCOMPARE(saved[1].content, QString("Once uponw w w"));
        QVERIFY(saved[1].complete);
        QCOMPARE(m_chat->messages()->count(), 2);
        QCOMPARE(m_chat->messages()->at(1).content, QString("Once uponw w w"));
        // A complete reply has nothing to continue; an unanswered message gets its answer.
        m_chat->continueResponse();
        QVERIFY(!m_inference->generating());
        QVERIFY(m_store->deleteMessagesFrom(conv, reply));
        m_chat->newConversation();
        m_chat->selectConversation(conv);
        m_chat->continueResponse();
        QVERIFY(done.wait(5000));
        QCOMPARE(m_store->messages(conv).size(), 2);
        QVERIFY(!m_engine->lastSampling().continueLast);
    }

    // A conversation's own system prompt, sampling and context policy reach the engine; a new
    // conversation takes the defaults again; the settings are stored with the conversation.
    void conversationSettingsReachTheEngine() {
        setUp(words(2));
        QSignalSpy changed(m_chat.get(), &ChatController::conversationSettingsChanged);
        m_chat->setConversationSetting("systemPrompt", "Talk like a pirate.");
        m_chat->setConversationSetting("temperature", 0.25);
        m_chat->setConversationSetting("maxTokens", 77);
        m_chat->setConversationSetting("contextPolicy", "rollingWindow");
        QCOMPARE(changed.size(), 4);
        m_chat->setConversationSetting("contextPolicy", "sometimes");  // refused, said so
        QVERIFY(m_chat->errorMessage().contains("sometimes"));
        m_chat->setConversationSetting("topK", "many");
        QVERIFY(m_chat->errorMessage().contains("number"));
        m_chat->dismissError();
        QVERIFY2(m_chat->settingsSummary().contains("temperature 0.25") &&
                     m_chat->settingsSummary().contains("rolling window"),
                 qPrintable(m_chat->settingsSummary()));
        sendAndWait("Ahoy");
        const qint64 pirate = m_chat->currentConversationId();
        QCOMPARE(m_engine->lastMessages()[0].content, std::string("Talk like a pirate."));
        QCOMPARE(m_engine->lastSampling().temperature, 0.25f);
        QCOMPARE(m_engine->lastSampling().maxTokens, 77);
        QVERIFY(m_engine->lastSampling().contextPolicy == ContextPolicy::RollingWindow);
        QCOMPARE(m_store->conversationSettings(pirate).value("temperature").toDouble(), 0.25);
        QCOMPARE(m_store->conversationSettings(pirate).value("model").toString(),
                 QString("fake.gguf"));

        m_chat->newConversation();
        QVERIFY(m_chat->conversationSettings().value("systemPrompt").isNull());
        sendAndWait("Hello");
        QCOMPARE(m_engine->lastMessages()[0].content, std::string("You are terse."));
        QCOMPARE(m_engine->lastSampling().temperature, m_settings->sampling().temperature);
        QVERIFY(m_engine->lastSampling().contextPolicy == ContextPolicy::DropOldest);

        m_chat->selectConversation(pirate);
        m_chat->setConversationSetting("temperature", QVariant());  // back to the default
        sendAndWait("Again");
        QCOMPARE(m_engine->lastMessages()[0].content, std::string("Talk like a pirate."));
        QCOMPARE(m_engine->lastSampling().temperature, m_settings->sampling().temperature);
        QCOMPARE(m_engine->lastSampling().maxTokens, 77);
    }

    // The settings dialog's sampling fields (top-k, top-p, min-p, repeat penalty) reach the
    // engine call, and a conversation's own values win over them.
    void samplingSettingsReachTheEngine() {
        setUp(words(2));
        m_settings->setTopK(7);
        m_settings->setTopP(0.5);
        m_settings->setMinP(0.125);
        m_settings->setRepeatPenalty(1.25);
        sendAndWait("Hello");
        QCOMPARE(m_engine->lastSampling().topK, 7);
        QCOMPARE(m_engine->lastSampling().topP, 0.5f);
        QCOMPARE(m_engine->lastSampling().minP, 0.125f);
        QCOMPARE(m_engine->lastSampling().repeatPenalty, 1.25f);

        m_chat->setConversationSetting("topK", 3);
        m_chat->setConversationSetting("topP", 0.75);
        m_chat->setConversationSetting("minP", 0.25);
        m_chat->setConversationSetting("repeatPenalty", 1.5);
        sendAndWait("Again");
        QCOMPARE(m_engine->lastSampling().topK, 3);
        QCOMPARE(m_engine->lastSampling().topP, 0.75f);
        QCOMPARE(m_engine->lastSampling().minP, 0.25f);
        QCOMPARE(m_engine->lastSampling().repeatPenalty, 1.5f);
    }

    // Each conversation keeps its model: opening it loads that model again.
    void conversationKeepsItsModel() {
        setUp(words(1));
        const QString a = m_dir.filePath("a.gguf"), b = m_dir.filePath("b.gguf");
        for (const QString& path : {a, b}) {
            QFile f(path);
            QVERIFY(f.open(QIODevice::WriteOnly));
        }
        auto loadAndWait = [&](const QString& path) {
            QSignalSpy loaded(m_inference.get(), &InferenceController::modelChanged);
            m_chat->loadModel(QUrl::fromLocalFile(path));
            return loaded.wait(5000) && m_inference->modelPath() == path;
        };
        QVERIFY(loadAndWait(a));
        sendAndWait("With A");
        const qint64 first = m_chat->currentConversationId();
        m_chat->newConversation();
        QVERIFY(loadAndWait(b));
        sendAndWait("With B");
        QCOMPARE(m_chat->conversationSettings().value("model").toString(), b);
        QSignalSpy loaded(m_inference.get(), &InferenceController::modelChanged);
        m_chat->selectConversation(first);
        QVERIFY(loaded.wait(5000));
        QCOMPARE(m_inference->modelPath(), a);
        QCOMPARE(QString::fromStdString(m_engine->lastLoadPath()), a);
        QVERIFY(m_chat->settingsSummary().startsWith("a.gguf"));
    }

    // The token counter: the conversation and the message being typed, against the context.
    void tokenCounterCountsTheDraft() {
        setUp(words(2));
        QSignalSpy counted(m_chat.get(), &ChatController::contextTokensChanged);
        m_chat->setDraft("one two three");
        // "You are terse." (3 + 3) and the draft (3 + 3).
        QTRY_COMPARE_WITH_TIMEOUT(m_chat->contextTokens(), 12, 5000);
        QVERIFY(!counted.isEmpty());
        QCOMPARE(m_chat->contextLength(), 2048);
        sendAndWait("one two three");
        m_chat->setDraft("four");
        // The reply (3 + 2) is counted too.
        QTRY_COMPARE_WITH_TIMEOUT(m_chat->contextTokens(), 21, 5000);
    }

    // A full conversation whose policy is to stop: the message is not sent and comes back.
    void fullContextWithStopPolicyTakesTheMessageBack() {
        FakeScript script = words(3);
        script.generateError = "the conversation needs 300 tokens, but the context of 256";
        script.generateErrorCode = "app.context_full";
        setUp(script);
        QSignalSpy unsent(m_chat.get(), &ChatController::messageNotSent);
        m_chat->setConversationSetting("contextPolicy", "stop");
        QVERIFY(m_chat->send("Hi there"));
        QTRY_COMPARE_WITH_TIMEOUT(unsent.size(), 1, 5000);
        QVERIFY(m_engine->lastSampling().contextPolicy == ContextPolicy::Stop);
        QVERIFY(m_chat->errorMessage().contains("conversation needs 300 tokens"));
        QCOMPARE(m_chat->messages()->count(), 0);
    }

    void generationErrorShowsBanner() {
        FakeScript script = words(5);
        script.generateError = "device lost";
        script.failAfter = 2;
        setUp(script);
        QSignalSpy failed(m_chat.get(), &ChatController::responseFailed);
        m_chat->send("Hi");
        QVERIFY(failed.wait(5000));
        QVERIFY(m_chat->errorMessage().contains("device lost"));
        const auto saved = m_store->messages(m_chat->currentConversationId());
        QCOMPARE(saved.size(), 2);  // the partial answer is kept, marked incomplete
        QCOMPARE(saved[1].content, QString("w w"));
        QVERIFY(!saved[1].complete);
        m_chat->dismissError();
        QVERIFY(m_chat->errorMessage().isEmpty());
    }

    // A message that does not fit the context never reaches the model: it is not stored (nor
    // its new conversation), its text goes back to the input box, and retries pile up nothing.
    void overflowTakesBackTheUnsentMessage() {
        FakeScript script = words(3);
        script.generateError = "the system prompt alone needs 900 tokens, but 256 are left";
        script.generateErrorCode = "app.prompt_too_long";
        setUp(script);
        QSignalSpy failed(m_chat.get(), &ChatController::responseFailed);
        QSignalSpy unsent(m_chat.get(), &ChatController::messageNotSent);
        const auto conversations = m_store->conversations().size();  // of earlier tests
        for (int attempt = 1; attempt <= 3; ++attempt) {
            QVERIFY(m_chat->send("Hi there"));
            QTRY_COMPARE_WITH_TIMEOUT(failed.size(), attempt, 5000);
            QCOMPARE(unsent.size(), attempt);
            QCOMPARE(unsent.last().at(0).toString(), QString("Hi there"));
            QCOMPARE(m_chat->messages()->count(), 0);
            QCOMPARE(m_store->conversations().size(), conversations);
            QCOMPARE(m_chat->currentConversationId(), qint64(0));
            QVERIFY2(m_chat->errorMessage().contains("system prompt alone needs 900 tokens"),
                     qPrintable(m_chat->errorMessage()));
            QVERIFY(!m_chat->errorMessage().contains('\n'));
        }
    }

    void repeatedNoticesAppearOnce() {
        FakeScript script = words(2);
        script.droppedMessages = 2;
        setUp(script);
        sendAndWait("One");
        sendAndWait("Two");
        sendAndWait("Three");
        QVERIFY2(m_chat->infoMessage().contains("left out"), qPrintable(m_chat->infoMessage()));
        QCOMPARE(m_chat->infoMessage().count("left out"), 1);
    }

    void sendSaysWhenTheMessageIsNotStored() {
        // The input box clears only on true: a message that could not be stored (a full disk)
        // stays there for the user.
        setUp(words(1));
        QVERIFY(!m_chat->send("   "));
        m_store->close();  // writes now fail, as on a full disk
        QVERIFY(!m_chat->send("Keep me"));
        QVERIFY(!m_chat->errorMessage().isEmpty());
        QCOMPARE(m_chat->messages()->count(), 0);
        QVERIFY(!m_inference->generating());
    }

    void reopensTheLastConversationOnStart() {
        setUp(words(2));
        sendAndWait("Remember me");
        const qint64 conv = m_chat->currentConversationId();
        m_chat.reset();  // the app closes and starts again
        m_chat =
            std::make_unique<ChatController>(m_store.get(), m_inference.get(), m_settings.get());
        QCOMPARE(m_chat->currentConversationId(), conv);
        QCOMPARE(m_chat->currentTitle(), QString("Remember me"));
        QCOMPARE(m_chat->messages()->count(), 2);
        // A deleted conversation is not reopened (and is no error).
        m_chat->deleteConversation(conv);
        m_chat.reset();
        m_chat =
            std::make_unique<ChatController>(m_store.get(), m_inference.get(), m_settings.get());
        QCOMPARE(m_chat->currentConversationId(), qint64(0));
        QVERIFY(m_chat->errorMessage().isEmpty());
    }

    void conversationsRenameSearchDelete() {
        setUp(words(1));
        sendAndWait("about apples");
        const qint64 a = m_chat->currentConversationId();
        m_chat->newConversation();
        QCOMPARE(m_chat->messages()->count(), 0);
        sendAndWait("about pears");
        const qint64 b = m_chat->currentConversationId();
        QVERIFY(a != b);
        m_chat->renameConversation(a, "Fruit A");
        m_chat->setSearchText("apples");
        QCOMPARE(m_chat->conversations()->count(), 1);
        m_chat->setSearchText("");
        m_chat->selectConversation(a);
        QCOMPARE(m_chat->currentTitle(), QString("Fruit A"));
        QCOMPARE(m_chat->messages()->at(0).content, QString("about apples"));
        m_chat->deleteConversation(a);
        QCOMPARE(m_chat->currentConversationId(), qint64(0));
        QCOMPARE(m_store->conversation(a).id, qint64(0));
    }
};

QTEST_MAIN(TestChatController)
#include "tst_chatcontroller.moc"
