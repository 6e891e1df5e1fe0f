// The chat's QML (the Ember module's app/chat/) against the real C++ message model: messages are
// parsed by MessageBlocks and shown by MessageDelegate, as in the app. `fixture` builds models and
// streams text.
#include <QQmlContext>
#include <QQmlEngine>
#include <QQuickTextDocument>
#include <QTextCursor>
#include <QTextDocument>
#include <QtQuickTest>

#include "markdownhtml.h"
#include "messageblocks.h"
#include "messagemodel.h"

class ChatFixture : public QObject {
    Q_OBJECT
public:
    using QObject::QObject;
    // A message model whose reasoning clock is advance()d by the test.
    Q_INVOKABLE QObject* messages() {
        return new MessageModel(this, [this] { return m_now; });
    }
    Q_INVOKABLE void append(QObject* model, qint64 id, const QString& role, const QString& content,
                            bool complete, bool streaming, int reasoningMs = 0) {
        StoredMessage m{id, role, content, complete, QDateTime::currentDateTime()};
        m.reasoningMs = reasoningMs;
        as(model)->append(m, streaming);
    }
    // A message that is version `version` of `versions`.
    Q_INVOKABLE void appendVersion(QObject* model, qint64 id, const QString& role,
                                   const QString& content, int version, int versions) {
        StoredMessage m{id, role, content, true, QDateTime::currentDateTime()};
        m.version = version;
        m.versions = versions;
        as(model)->append(m, false);
    }
    Q_INVOKABLE void setLastDetails(QObject* model, const QString& name, int tokens,
                                    double tokensPerSecond, double ttftMs,
                                    const QString& stopReason) {
        as(model)->setLastDetails({name, tokens, tokensPerSecond, ttftMs, stopReason});
    }
    Q_INVOKABLE void appendText(QObject* model, const QString& text) {
        as(model)->appendText(text);
    }
    Q_INVOKABLE void finishLast(QObject* model, qint64 id, const QString& content, bool complete) {
        as(model)->finishLast(id, content, complete);
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
    Q_INVOKABLE QObject* blocks(const QString& text) {
        auto* b = new MessageBlocks(this);
        b->setText(text);
        return b;
    }

private:
    static MessageModel* as(QObject* o) { return qobject_cast<MessageModel*>(o); }
    qint64 m_now = 0;
};

class Setup : public QObject {
    Q_OBJECT
public slots:
    void qmlEngineAvailable(QQmlEngine* engine) {
        // The Ember module's QML from the sources (the C++ types come with ember_app).
        engine->addImportPath(QStringLiteral(EMBER_QML_TEST_IMPORT_DIR));
        engine->rootContext()->setContextProperty("fixture", new ChatFixture(engine));
    }
};

QUICK_TEST_MAIN_WITH_SETUP(chat_qml, Setup)

#include "main.moc"
