// The inference controller and its worker thread, driven by the fake engine.
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QtTest>

#include "fakechatengine.h"
#include "inferencecontroller.h"

namespace {

FakeScript tokens(int n, std::chrono::microseconds delay) {
    FakeScript s;
    for (int i = 0; i < n; ++i) s.pieces.push_back(QString("t%1 ").arg(i).toStdString());
    s.delay = delay;
    return s;
}

std::string joined(const FakeScript& s) {
    std::string out;
    for (const auto& p : s.pieces) out += p;
    return out;
}

// A controller over a fake engine; `engine` stays valid as long as the controller.
std::unique_ptr<InferenceController> makeController(const FakeScript& script,
                                                    FakeChatEngine** engine = nullptr) {
    return std::make_unique<InferenceController>([script, engine] {
        auto e = std::make_unique<FakeChatEngine>(script);
        if (engine) *engine = e.get();
        return e;
    });
}

void load(InferenceController& c, const std::string& device = "auto") {
    EngineLoadOptions o;
    o.path = "/models/fake.gguf";
    o.device = device;
    QSignalSpy changed(&c, &InferenceController::modelChanged);
    c.loadModel(o);
    QVERIFY(c.loading());
    QVERIFY(changed.wait(5000));
    QVERIFY(c.modelLoaded());
    QVERIFY(!c.loading());
}

QList<ChatTurn> prompt() {
    return {{"system", "Be brief."}, {"user", "Hello"}};
}

}  // namespace

class TestInferenceWorker : public QObject {
    Q_OBJECT
private slots:
    void loadReportsBackendAndFallback() {
        auto c = makeController(tokens(1, {}));
        load(*c, "0");
        QCOMPARE(c->modelPath(), QString("/models/fake.gguf"));
        QCOMPARE(c->modelName(), QString("fake:/models/fake.gguf"));
        QCOMPARE(c->backend(), QString("cpu"));
        QCOMPARE(c->device(), QString("Fake CPU"));
        QCOMPARE(c->fallbackReason(), QString("no suitable GPU (fake)"));
        QCOMPARE(c->loadProgress(), 1.0);
        QTRY_COMPARE(c->devices(), QStringList{"Fake GPU"});
    }

    void streamsBatchedText() {
        // 400 tokens, 1 ms apart: unbatched this would be ~1000 updates per second.
        const FakeScript script = tokens(400, std::chrono::milliseconds(1));
        FakeChatEngine* engine = nullptr;
        auto c = makeController(script, &engine);
        load(*c);
        QSignalSpy batches(c.get(), &InferenceController::textReady);
        QSignalSpy finished(c.get(), &InferenceController::generationFinished);
        QVERIFY(c->generate(prompt(), {}) != 0);
        QVERIFY(c->generating());
        QVERIFY(finished.wait(20000));
        QVERIFY(!c->generating());

        QString concatenated;
        for (const auto& args : batches) concatenated += args.at(0).toString();
        const QString full = finished.at(0).at(0).toString();
        QCOMPARE(full, QString::fromStdString(joined(script)));
        QCOMPARE(concatenated, full);
        // Streamed in several updates: the tokens take at least 400 ms (the fake engine sleeps
        // 1 ms before each), i.e. a dozen 33-ms intervals. The rate limit itself is checked on a
        // fake clock in tst_textbatcher, not here against the real one.
        QVERIFY2(batches.size() >= 3, qPrintable(QString::number(batches.size())));
        QCOMPARE(finished.at(0).at(1).value<GenerationStats>().generatedTokens, 400);
        QCOMPARE(finished.at(0).at(1).value<GenerationStats>().stopReason, StopReason::EndOfText);

        // The engine saw the conversation as sent.
        const auto seen = engine->lastMessages();
        QCOMPARE(seen.size(), size_t(2));
        QCOMPARE(seen[0].role, std::string("system"));
        QCOMPARE(seen[1].content, std::string("Hello"));
    }

    // The prompt's size reaches the UI before the reply's first text, so the context can
    // count up while the reply is generated.
    void reportsThePromptBeforeTheText() {
        FakeScript script = tokens(5, std::chrono::milliseconds(1));
        script.promptTokens = 120;
        script.evaluatedTokens = 7;
        auto c = makeController(script);
        load(*c);
        QList<QString> order;
        connect(c.get(), &InferenceController::promptEvaluating, c.get(),
                [&](int total, int evaluated) {
                    order << QString("prompt %1 %2").arg(total).arg(evaluated);
                });
        connect(c.get(), &InferenceController::textReady, c.get(),
                [&](const QString&) { order << "text"; });
        QSignalSpy finished(c.get(), &InferenceController::generationFinished);
        QVERIFY(c->generate(prompt(), {}) != 0);
        QVERIFY(finished.wait(20000));
        QVERIFY(order.size() >= 2);
        QCOMPARE(order.front(), QString("prompt 120 7"));
        QCOMPARE(order.count(QString("prompt 120 7")), 1);
    }

    void stopsWithinOneToken() {
        FakeChatEngine* engine = nullptr;
        auto c = makeController(tokens(2000, std::chrono::milliseconds(2)), &engine);
        load(*c);
        QSignalSpy batches(c.get(), &InferenceController::textReady);
        QSignalSpy finished(c.get(), &InferenceController::generationFinished);
        QVERIFY(c->generate(prompt(), {}) != 0);
        QVERIFY(batches.wait(5000));
        c->stop();
        const int atStop = engine->emitted();
        QVERIFY(finished.wait(5000));
        const auto stats = finished.at(0).at(1).value<GenerationStats>();
        QCOMPARE(stats.stopReason, StopReason::Cancelled);
        QVERIFY2(stats.generatedTokens <= atStop + 1,
                 qPrintable(
                     QString("%1 tokens after stop at %2").arg(stats.generatedTokens).arg(atStop)));
        QString concatenated;
        for (const auto& args : batches) concatenated += args.at(0).toString();
        QCOMPARE(concatenated, finished.at(0).at(0).toString());
        // The next request runs normally: the cancel flag does not stick.
        QVERIFY(!c->generating());
        finished.clear();
        QVERIFY(c->generate(prompt(), {}) != 0);
        QTest::qWait(100);
        c->stop();
        QVERIFY(finished.wait(5000));
        QVERIFY(finished.at(0).at(1).value<GenerationStats>().generatedTokens > 0);
    }

    // A Stop pressed while the request still waits in the worker's queue (behind other work)
    // is not lost when the worker gets to it.
    void stopBeforeTheWorkerStarts() {
        auto c = makeController(tokens(200, std::chrono::milliseconds(2)));
        load(*c);
        std::atomic<bool> busy{true};
        QMetaObject::invokeMethod(c->worker(), [&busy] {
            while (busy.load()) QThread::msleep(1);
        });
        QSignalSpy finished(c.get(), &InferenceController::generationFinished);
        QVERIFY(c->generate(prompt(), {}) != 0);
        c->stop();
        busy = false;
        QVERIFY(finished.wait(5000));
        const auto stats = finished.at(0).at(1).value<GenerationStats>();
        QCOMPARE(stats.stopReason, StopReason::Cancelled);
        QCOMPARE(stats.generatedTokens, 0);
        // The next request runs normally.
        finished.clear();
        QVERIFY(c->generate(prompt(), {}) != 0);
        QVERIFY(finished.wait(5000));
        QCOMPARE(finished.at(0).at(1).value<GenerationStats>().generatedTokens, 200);
    }

    // The typed stop reason keeps the engine's names, which the conversation store saves.
    void stopReasonsKeepTheEngineNames() {
        for (const auto& [reason, name] :
             std::initializer_list<std::pair<StopReason::Value, const char*>>{
                 {StopReason::EndOfText, "eog"},
                 {StopReason::MaxTokens, "max_tokens"},
                 {StopReason::Cancelled, "cancelled"},
                 {StopReason::ContextFull, "context_full"},
                 {StopReason::Callback, "callback"}}) {
            QCOMPARE(StopReason::name(reason), QString(name));
            QCOMPARE(StopReason::fromName(name), reason);
        }
        QCOMPARE(StopReason::name(StopReason::None), QString());
        QCOMPARE(StopReason::fromName("no_such_reason"), StopReason::None);
    }

    void loadFailureBecomesSignal() {
        FakeScript script = tokens(3, {});
        script.loadError = "tensor 'x': offset past end of file";
        auto c = makeController(script);
        QSignalSpy failed(c.get(), &InferenceController::loadFailed);
        EngineLoadOptions o;
        o.path = "/models/broken.gguf";
        c->loadModel(o);
        QVERIFY(failed.wait(5000));
        QCOMPARE(failed.at(0).at(0).toString(), QString("tensor 'x': offset past end of file"));
        QVERIFY(!c->modelLoaded());
        QVERIFY(!c->loading());
        // Without a model, generation is refused rather than queued.
        QCOMPARE(c->generate(prompt(), {}), quint64(0));
    }

    // A broken file chosen in the model menu is refused before the working model is dropped.
    void brokenFileKeepsTheLoadedModel() {
        FakeScript script = tokens(3, {});
        script.checkFailPath = "/models/broken.gguf";
        FakeChatEngine* engine = nullptr;
        auto c = makeController(script, &engine);
        load(*c);
        QSignalSpy failed(c.get(), &InferenceController::loadFailed);
        QSignalSpy changed(c.get(), &InferenceController::modelChanged);
        EngineLoadOptions o;
        o.path = "/models/broken.gguf";
        c->loadModel(o);
        QVERIFY(failed.wait(5000));
        QVERIFY2(failed.at(0).at(0).toString().startsWith("the file is incomplete"),
                 qPrintable(failed.at(0).at(0).toString()));
        QVERIFY(failed.at(0).at(1).toString().contains("past the end"));
        QVERIFY(c->modelLoaded());
        QCOMPARE(c->modelPath(), QString("/models/fake.gguf"));
        QCOMPARE(changed.count(), 0);
        QCOMPARE(engine->loads(), 1);  // the engine never let go of the working model
        QVERIFY(c->generate(prompt(), {}) != 0);
    }

    // When the load itself fails after the working model was dropped, that model is loaded
    // again.
    void failedSwitchReloadsThePreviousModel() {
        FakeScript script = tokens(3, {});
        script.loadFailPath = "/models/odd.gguf";
        FakeChatEngine* engine = nullptr;
        auto c = makeController(script, &engine);
        load(*c);
        QSignalSpy failed(c.get(), &InferenceController::loadFailed);
        EngineLoadOptions o;
        o.path = "/models/odd.gguf";
        c->loadModel(o);
        QVERIFY(failed.wait(5000));
        QVERIFY2(failed.at(0).at(0).toString().contains("previous model is loaded again"),
                 qPrintable(failed.at(0).at(0).toString()));
        QVERIFY(c->modelLoaded());
        QCOMPARE(c->modelPath(), QString("/models/fake.gguf"));
        QVERIFY(engine->isLoaded());
        QCOMPARE(engine->loads(), 3);
        QVERIFY(!c->loading());
    }

    // The installed models are listed once, by ModelLibrary.installed (the model menu shows
    // that list): the controller keeps no second list, nor a way to refresh one.
    void noSecondListOfInstalledModels() {
        const QMetaObject& mo = InferenceController::staticMetaObject;
        QCOMPARE(mo.indexOfProperty("installedModels"), -1);
        QCOMPARE(mo.indexOfMethod("refreshModels()"), -1);
        QCOMPARE(mo.indexOfSignal("installedModelsChanged()"), -1);
    }

    void generationFailureBecomesSignal() {
        FakeScript script = tokens(10, {});
        script.generateError = "vulkan: device lost";
        script.failAfter = 4;
        auto c = makeController(script);
        load(*c);
        QSignalSpy failed(c.get(), &InferenceController::generationFailed);
        QSignalSpy finished(c.get(), &InferenceController::generationFinished);
        QVERIFY(c->generate(prompt(), {}) != 0);
        QVERIFY(failed.wait(5000));
        QCOMPARE(failed.at(0).at(0).toString(), QString("vulkan: device lost"));
        QCOMPARE(failed.at(0).at(1).toString(), QString("t0 t1 t2 t3 "));
        QCOMPARE(finished.size(), 0);
        QVERIFY(!c->generating());
    }

    void workerAloneReportsMissingModel() {
        // The worker's slots also work when called directly (same thread).
        InferenceWorker worker(std::make_unique<FakeChatEngine>(tokens(2, {})));
        QSignalSpy failed(&worker, &InferenceWorker::generationFailed);
        worker.generate(7, prompt(), {});
        QCOMPARE(failed.size(), 1);
        QCOMPARE(failed.at(0).at(0).value<quint64>(), quint64(7));
        QCOMPARE(failed.at(0).at(1).toString(), QString("no model is loaded"));
    }
};

QTEST_MAIN(TestInferenceWorker)
#include "tst_inferenceworker.moc"
