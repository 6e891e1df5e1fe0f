// The app's inference controller and worker thread over the real engine, with the GPU lost in
// the middle of a reply (EMBER_FAULT=vk_device_lost:N on lavapipe): the reply fails with the
// reason, the model is unloaded, and loading it again gives a working model on a fresh device.
#include <QFileInfo>
#include <QSignalSpy>
#include <QtTest>

#include "ember/ember.h"
#include "emberchatengine.h"
#include "inferencecontroller.h"

namespace {

QString storiesModel() {
    const QByteArray env = qgetenv("EMBER_SHARED_DIR");
    return (env.isEmpty() ? QString(EMBER_SHARED_DIR) : QString::fromLocal8Bit(env)) +
           "/models/stories260K.gguf";
}

bool haveLavapipe() {
    auto devs = ember::list_devices();
    if (!devs.ok()) return false;
    for (const auto& d : devs.value())
        if (d.name.find("llvmpipe") != std::string::npos) return true;
    return false;
}

}  // namespace

class TestDeviceLostApp : public QObject {
    Q_OBJECT
    std::unique_ptr<InferenceController> m_c;

    void load() {
        EngineLoadOptions o;
        o.path = storiesModel().toStdString();
        o.device = "llvmpipe";
        o.contextLength = 256;
        QSignalSpy changed(m_c.get(), &InferenceController::modelChanged);
        QSignalSpy failed(m_c.get(), &InferenceController::loadFailed);
        m_c->loadModel(o);
        QTRY_VERIFY_WITH_TIMEOUT(!changed.isEmpty() || !failed.isEmpty(), 60000);
        QVERIFY2(failed.isEmpty(), qPrintable(failed.value(0).value(0).toString()));
        QVERIFY(m_c->modelLoaded());
        QCOMPARE(m_c->backend(), QString("vulkan"));
        QVERIFY2(m_c->fallbackReason().isEmpty(), qPrintable(m_c->fallbackReason()));
    }

    // Sends one turn and waits for it to finish or fail.
    void send(QSignalSpy& finished, QSignalSpy& failed) {
        EngineSampling s;
        s.temperature = 0;
        s.maxTokens = 24;
        QVERIFY(m_c->generate({{"user", "Once upon a time"}}, s) != 0);
        QTRY_VERIFY_WITH_TIMEOUT(!finished.isEmpty() || !failed.isEmpty(), 60000);
        QTRY_VERIFY(!m_c->generating());
    }

private slots:
    void initTestCase() {
        if (!qEnvironmentVariable("EMBER_FAULT").startsWith("vk_device_lost"))
            QSKIP("needs EMBER_FAULT=vk_device_lost:N (set by the ctest entry)");
        if (!haveLavapipe()) QSKIP("no lavapipe Vulkan device");
        QVERIFY2(QFileInfo::exists(storiesModel()), qPrintable(storiesModel()));
    }

    void deviceLostIsReportedAndAReloadWorks() {
        m_c = std::make_unique<InferenceController>(
            [] { return std::make_unique<EmberChatEngine>(); });
        load();
        if (QTest::currentTestFailed()) return;

        QSignalSpy finished(m_c.get(), &InferenceController::generationFinished);
        QSignalSpy failed(m_c.get(), &InferenceController::generationFailed);
        QSignalSpy changed(m_c.get(), &InferenceController::modelChanged);
        send(finished, failed);
        if (QTest::currentTestFailed()) return;
        QVERIFY2(finished.isEmpty(), "the reply finished although the device was lost");
        QCOMPARE(failed.size(), 1);
        const QString message = failed.at(0).at(0).toString();
        QVERIFY2(message.contains("VK_ERROR_DEVICE_LOST"), qPrintable(message));
        QVERIFY2(message.contains("load it again"), qPrintable(message));
        // The worker dropped the dead model, and the UI learns that nothing is loaded.
        QTRY_VERIFY(!m_c->modelLoaded());
        QVERIFY(!changed.isEmpty());

        // No further reply is accepted until a model is loaded again.
        QCOMPARE(m_c->generate({{"user", "Hello"}}, EngineSampling{}), quint64(0));

        // Loading again creates a fresh device; the reply now completes.
        load();
        if (QTest::currentTestFailed()) return;
        finished.clear();
        failed.clear();
        send(finished, failed);
        QVERIFY2(failed.isEmpty(), qPrintable(failed.value(0).value(0).toString()));
        QCOMPARE(finished.size(), 1);
        const QString text = finished.at(0).at(0).toString();
        QVERIFY2(text.trimmed().size() > 10, qPrintable(text));
        QVERIFY(finished.at(0).at(1).value<GenerationStats>().generatedTokens > 0);
        m_c.reset();  // the worker thread and the engine go away without a crash
    }
};

QTEST_MAIN(TestDeviceLostApp)
#include "tst_device_lost_app.moc"
