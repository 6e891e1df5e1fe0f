// ChatController with the fake engine and a real store: sending, saving, regenerating, editing,
// and keeping a response that is still generating when the app closes.
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

    void regenerateReplacesLastAnswer() {
        setUp(words(2));
        sendAndWait("Hi");
        const qint64 conv = m_chat->currentConversationId();
        const qint64 oldId = m_store->messages(conv)[1].id;
        QSignalSpy done(m_chat.get(), &ChatController::responseFinished);
        m_chat->regenerate();
        QVERIFY(done.wait(5000));
        const auto saved = m_store->messages(conv);
        QCOMPARE(saved.size(), 2);
        QVERIFY(saved[1].id != oldId);
        QCOMPARE(m_chat->messages()->count(), 2);
    }

    void editAndResendDropsLaterTurns() {
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
        QCOMPARE(m_engine->lastMessages().size(), size_t(2));
        QCOMPARE(m_engine->lastMessages()[1].content, std::string("Edited question"));
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
        // Stopped, it is one complete reply, not a second row.
        QSignalSpy done(m_chat.get(), &ChatController::responseFinished);
        m_chat->stop();
        QVERIFY(done.wait(5000));
        QCOMPARE(reader.messages(conv).size(), 2);
        QVERIFY(savedReply().complete);
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
