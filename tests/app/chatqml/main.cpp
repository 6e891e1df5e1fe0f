// The chat's QML (the Ember module's app/chat/, compiled as the app has it) against the real
// ChatController, its MessageModel (messages parsed by MessageBlocks) and a conversation store,
// over a fake engine. `fixture` makes chats, stores conversations in them, and streams text
// into a chat's view.
#include <QClipboard>
#include <QGuiApplication>
#include <QQmlContext>
#include <QQmlEngine>
#include <QQuickTextDocument>
#include <QSettings>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTextCursor>
#include <QTextDocument>
#include <QtQml/QQmlExtensionPlugin>
#include <QtQuickTest>
#include <atomic>
#include <map>
#include <memory>

#include "chatcontroller.h"
#include "conversationstore.h"
#include "fakechatengine.h"
#include "inferencecontroller.h"
#include "markdownhtml.h"
#include "messageblocks.h"
#include "messagemodel.h"
#include "settings.h"

Q_IMPORT_QML_PLUGIN(EmberPlugin)

// The fake engine, whose models named "think..." have a template that takes enable_thinking.
class ChatQmlEngine : public FakeChatEngine {
public:
    using FakeChatEngine::FakeChatEngine;
    ember::Result<EngineLoadResult> load(const EngineLoadOptions& options,
                                         const EngineProgressCallback& progress,
                                         const std::atomic<bool>* cancel) override {
        auto loaded = FakeChatEngine::load(options, progress, cancel);
        if (loaded) loaded.value().thinkingSwitch = options.path.starts_with("think");
        return loaded;
    }
};

class ChatFixture : public QObject {
    Q_OBJECT
public:
    using QObject::QObject;
    ~ChatFixture() override {
        m_hold.store(false);
        // The chats go first: they end their generations and save into their stores.
        for (Chat& c : m_chats) c.chat.reset();
        for (Chat& c : m_chats) c.inference.reset();
    }

    // A chat over its own store and a loaded fake engine (model file "fake.gguf"; a model named
    // "think..." takes enable_thinking). Each reply is "New answer." in 2 tokens at 42.25 tok/s,
    // 350 ms to its first token, stopped at the token limit; the reasoning clock is advance()d.
    Q_INVOKABLE ChatController* chat() {
        Chat c;
        c.store = std::make_unique<ConversationStore>();
        c.store->open(m_dir.filePath(QStringLiteral("chat-%1.sqlite").arg(m_chats.size())));
        c.settings = std::make_unique<Settings>();
        c.settings->setLastConversationId(0);
        const std::atomic<bool>* hold = &m_hold;
        c.inference = std::make_unique<InferenceController>([hold] {
            FakeScript s;
            s.pieces = {"New", " answer."};
            s.stopReason = "max_tokens";
            s.tokensPerSecond = 42.25;
            s.ttftMs = 350;
            s.hold = hold;
            return std::make_unique<ChatQmlEngine>(s);
        });
        c.chat = std::make_unique<ChatController>(
            c.store.get(), c.inference.get(), c.settings.get(), nullptr, [this] { return m_now; });
        QQmlEngine::setObjectOwnership(c.chat.get(), QQmlEngine::CppOwnership);
        m_chats.push_back(std::move(c));
        load(m_chats.back().chat.get(), QStringLiteral("fake.gguf"));
        return m_chats.back().chat.get();
    }
    // Loads a model (waits until it is loaded); false when it was not.
    Q_INVOKABLE bool load(ChatController* chat, const QString& path) {
        InferenceController* inference = find(chat).inference.get();
        QSignalSpy loaded(inference, &InferenceController::modelChanged);
        EngineLoadOptions o;
        o.path = path.toStdString();
        inference->loadModel(o);
        return loaded.wait(30000) && inference->modelPath() == path;
    }
    // Replies wait (generating) while held, until released or stopped.
    Q_INVOKABLE void hold(bool on) { m_hold.store(on); }
    // Stores a conversation of [role, content, complete] messages and opens it in the chat.
    Q_INVOKABLE qint64 conversation(ChatController* chat, const QVariantList& messages) {
        ConversationStore* store = find(chat).store.get();
        const qint64 id = store->createConversation(QStringLiteral("Test"));
        for (const QVariant& m : messages) {
            const QVariantList parts = m.toList();
            store->appendMessage(id, parts.value(0).toString(), parts.value(1).toString(),
                                 parts.value(2, true).toBool());
        }
        chat->selectConversation(id);
        return id;
    }
    // The stored conversation as the chat is on it, one content per message.
    Q_INVOKABLE QStringList stored(ChatController* chat) {
        QStringList out;
        for (const StoredMessage& m : find(chat).store->messages(chat->currentConversationId()))
            out << m.content;
        return out;
    }
    Q_INVOKABLE QString clipboard() { return QGuiApplication::clipboard()->text(); }

    // The view's rows only (what the chat shows, not what is stored).
    Q_INVOKABLE void append(QObject* model, qint64 id, const QString& role, const QString& content,
                            bool complete, bool streaming, int reasoningMs = 0) {
        StoredMessage m{id, role, content, complete, QDateTime::currentDateTime()};
        m.reasoningMs = reasoningMs;
        as(model)->append(m, streaming);
    }
    Q_INVOKABLE void appendText(QObject* model, const QString& text) {
        as(model)->appendText(text);
    }
    Q_INVOKABLE void removeFrom(QObject* model, int row) { as(model)->removeFrom(row); }
    Q_INVOKABLE QString content(QObject* model, int row) { return as(model)->at(row).content; }
    Q_INVOKABLE void advance(int ms) { m_now += ms; }
    Q_INVOKABLE QString html(const QString& markdown) { return markdown::toHtml(markdown); }
    // The text colour at `position` of a text item's document ("" where none is set).
    Q_INVOKABLE QString colourAt(QQuickTextDocument* document, int position) {
        QTextCursor c(document->textDocument());
        c.setPosition(position + 1);  // the format of the character before the cursor
        const QBrush b = c.charFormat().foreground();
        return b.style() == Qt::NoBrush ? QString() : b.color().name();
    }
    // A message's blocks on their own (a code block's highlighter).
    Q_INVOKABLE MessageBlocks* blocks(const QString& text) {
        auto* b = new MessageBlocks(this);
        QQmlEngine::setObjectOwnership(b, QQmlEngine::CppOwnership);
        b->setText(text);
        return b;
    }

private:
    struct Chat {
        std::unique_ptr<ConversationStore> store;
        std::unique_ptr<Settings> settings;
        std::unique_ptr<InferenceController> inference;
        std::unique_ptr<ChatController> chat;
    };
    Chat& find(ChatController* chat) {
        for (Chat& c : m_chats)
            if (c.chat.get() == chat) return c;
        qFatal("not a chat of the fixture");
    }
    static MessageModel* as(QObject* o) { return qobject_cast<MessageModel*>(o); }

    QTemporaryDir m_dir;
    std::atomic<bool> m_hold{false};
    std::vector<Chat> m_chats;
    qint64 m_now = 0;
};

class Setup : public QObject {
    Q_OBJECT
public slots:
    void applicationAvailable() {
        // The settings of this run only.
        QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, m_config.path());
        QCoreApplication::setApplicationName(QStringLiteral("ember-chat-qml-test"));
    }
    void qmlEngineAvailable(QQmlEngine* engine) {
        engine->addImportPath(QStringLiteral("qrc:/"));  // the compiled Ember module
        engine->rootContext()->setContextProperty("fixture", new ChatFixture(engine));
    }

private:
    QTemporaryDir m_config;
};

QUICK_TEST_MAIN_WITH_SETUP(chat_qml, Setup)

#include "main.moc"
