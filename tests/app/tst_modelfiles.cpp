// Loading a model by its path: a name with '#', '%' or spaces reaches the engine unchanged, as a
// path from the model list and as a file dialog's URL ("file://" + path would cut it at '#').
#include <QFile>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include "chatcontroller.h"
#include "fakechatengine.h"

class TestModelFiles : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    std::unique_ptr<ConversationStore> m_store;
    std::unique_ptr<InferenceController> m_inference;
    std::unique_ptr<Settings> m_settings;
    std::unique_ptr<ChatController> m_chat;

    QString makeModel(const QString& name) {
        const QString path = m_dir.filePath(name);
        QFile f(path);
        if (!f.open(QIODevice::WriteOnly)) return {};
        f.write("GGUF");
        return path;
    }

private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        QCoreApplication::setApplicationName("ember-test-modelfiles");
        QVERIFY(m_dir.isValid());
        m_store = std::make_unique<ConversationStore>();
        QVERIFY(m_store->open(m_dir.filePath("chat.sqlite")));
        m_inference = std::make_unique<InferenceController>(
            [] { return std::make_unique<FakeChatEngine>(FakeScript{}); });
        m_settings = std::make_unique<Settings>();
        m_chat =
            std::make_unique<ChatController>(m_store.get(), m_inference.get(), m_settings.get());
    }
    void cleanupTestCase() {
        m_chat.reset();
        m_inference.reset();
    }

    void aPathIsLoadedAsItIs() {
        const QString path = makeModel("tiny #1 at 100%25 (q4).gguf");
        QVERIFY(!path.isEmpty());
        QSignalSpy loaded(m_inference.get(), &InferenceController::modelChanged);
        m_chat->loadModelFile(path);
        QVERIFY(loaded.wait(5000));
        QCOMPARE(m_inference->modelPath(), path);
        QCOMPARE(m_chat->errorMessage(), QString());
    }

    void aDialogsUrlIsLoadedAsItsPath() {
        const QString path = makeModel("other #2 50%.gguf");
        QSignalSpy loaded(m_inference.get(), &InferenceController::modelChanged);
        m_chat->loadModel(QUrl::fromLocalFile(path));
        QVERIFY(loaded.wait(5000));
        QCOMPARE(m_inference->modelPath(), path);
    }

    void aMissingFileOrARemoteUrlIsAnError() {
        const QString before = m_inference->modelPath();
        m_chat->loadModelFile(m_dir.filePath("missing #3.gguf"));
        QVERIFY2(m_chat->errorMessage().contains("missing #3.gguf"),
                 qPrintable(m_chat->errorMessage()));
        m_chat->loadModel(QUrl("https://example.com/model.gguf"));
        QVERIFY2(m_chat->errorMessage().contains("https://example.com/model.gguf"),
                 qPrintable(m_chat->errorMessage()));
        QCOMPARE(m_inference->modelPath(), before);
    }
};

QTEST_GUILESS_MAIN(TestModelFiles)
#include "tst_modelfiles.moc"
