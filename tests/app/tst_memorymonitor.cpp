// The GPU memory monitor: the worker hands the engine to the probe only while a model is loaded,
// and the monitor thread keeps sampling while the worker's thread is busy generating.
#include <QSignalSpy>
#include <QtTest>

#include "fakechatengine.h"
#include "inferencecontroller.h"
#include "memorymonitor.h"
#include "perfmonitor.h"

namespace {

std::unique_ptr<InferenceController> makeController(const FakeScript& script,
                                                    FakeChatEngine** engine) {
    return std::make_unique<InferenceController>([script, engine] {
        auto e = std::make_unique<FakeChatEngine>(script);
        *engine = e.get();
        return e;
    });
}

void load(InferenceController& c) {
    EngineLoadOptions o;
    o.path = "/models/fake.gguf";
    QSignalSpy changed(&c, &InferenceController::modelChanged);
    c.loadModel(o);
    QVERIFY(changed.wait(5000));
    QVERIFY(c.modelLoaded());
}

void unload(InferenceController& c) {
    QSignalSpy changed(&c, &InferenceController::modelChanged);
    c.unloadModel();
    QVERIFY(changed.wait(5000));
    QVERIFY(!c.modelLoaded());
}

}  // namespace

class TestMemoryMonitor : public QObject {
    Q_OBJECT
private slots:
    void probeFollowsTheLoadedModel() {
        FakeChatEngine* engine = nullptr;
        auto c = makeController({}, &engine);
        auto probe = c->memoryProbe();
        QVERIFY(probe);
        QVERIFY(!probe->read());  // nothing loaded yet
        load(*c);
        const auto m = probe->read();
        QVERIFY(m.has_value());
        QCOMPARE(m->budget, uint64_t(8000000));
        QCOMPARE(QString::fromStdString(m->source), QString("fake budget"));
        unload(*c);
        QVERIFY(!probe->read());
        QVERIFY(!engine->readWithoutModel());
    }

    void monitorSamplesFromItsOwnThread() {
        FakeChatEngine* engine = nullptr;
        auto c = makeController({}, &engine);
        load(*c);
        QThread thread;
        auto* monitor = new MemoryMonitor(c->memoryProbe());
        monitor->moveToThread(&thread);
        connect(&thread, &QThread::finished, monitor, &QObject::deleteLater);
        thread.start();
        // Collected on this thread (queued), not by a spy written from the monitor's thread.
        struct Sample {
            quint64 used, budget;
            QString source;
        };
        QList<Sample> samples;
        QObject receiver;
        connect(
            monitor, &MemoryMonitor::sampled, &receiver,
            [&](quint64 used, quint64 budget, const QString& source) {
                samples.append({used, budget, source});
            },
            Qt::QueuedConnection);
        QMetaObject::invokeMethod(monitor, &MemoryMonitor::start, Qt::QueuedConnection);
        // The first sample comes at once, the next on the timer.
        QTRY_VERIFY_WITH_TIMEOUT(samples.size() >= 2, 10000);
        QCOMPARE(samples[0].budget, quint64(8000000));
        QVERIFY(samples[1].used > samples[0].used);
        QCOMPARE(samples[0].source, QString("fake budget"));
        QMetaObject::invokeMethod(monitor, &MemoryMonitor::stop, Qt::BlockingQueuedConnection);
        thread.quit();
        thread.wait();
    }

    void perfMonitorUpdatesDuringGenerationAndClearsOnUnload() {
        FakeScript script;
        for (int i = 0; i < 80; ++i) script.pieces.push_back("x ");
        script.delay = std::chrono::milliseconds(50);  // 4 s of generation
        FakeChatEngine* engine = nullptr;
        auto c = makeController(script, &engine);
        PerfMonitor perf(c.get());
        load(*c);
        QCOMPARE(perf.backend(), QString("cpu"));
        QCOMPARE(perf.device(), QString("Fake CPU"));
        QCOMPARE(perf.contextSize(), 2048);
        QTRY_VERIFY_WITH_TIMEOUT(perf.memoryBudget() == 8000000.0, 10000);
        QCOMPARE(perf.memorySource(), QString("fake budget"));

        QSignalSpy memory(&perf, &PerfMonitor::memoryChanged);
        QSignalSpy finished(c.get(), &InferenceController::generationFinished);
        QVERIFY(c->generate({{"user", "hi"}}, EngineSampling{}) != 0);
        QVERIFY(perf.generating());
        // The worker's thread is inside generate(): readings still arrive, and tokens too.
        QTRY_VERIFY_WITH_TIMEOUT(memory.count() >= 1 && perf.generatedTokens() > 0, 10000);
        QVERIFY(c->generating());
        QVERIFY(finished.wait(20000));
        QVERIFY(!perf.generating());
        QCOMPARE(perf.generatedTokens(), 80);

        unload(*c);
        QCOMPARE(perf.memoryUsed(), 0.0);
        QCOMPARE(perf.memoryBudget(), 0.0);
        QVERIFY(!perf.modelLoaded());
        const int reads = engine->memoryReads();
        // Stopped: no more readings (one may have been under way).
        QTest::qWait(1200);
        QVERIFY(engine->memoryReads() <= reads + 1);
        QCOMPARE(perf.memoryBudget(), 0.0);
        QVERIFY(!engine->readWithoutModel());
    }
};

QTEST_MAIN(TestMemoryMonitor)
#include "tst_memorymonitor.moc"
