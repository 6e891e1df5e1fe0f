// The worker over the real engine (EmberChatEngine) with the tiny stories260K model.
#include <QFile>
#include <QFileInfo>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>
#include <set>

#include "emberchatengine.h"
#include "inferencecontroller.h"

namespace {
QString storiesModel() {
    const QByteArray env = qgetenv("EMBER_SHARED_DIR");
    return (env.isEmpty() ? QString(EMBER_SHARED_DIR) : QString::fromLocal8Bit(env)) +
           "/models/stories260K.gguf";
}
}  // namespace

class TestEmberChatEngine : public QObject {
    Q_OBJECT
    std::unique_ptr<InferenceController> m_c;

    bool load(int contextLength = 512) {
        EngineLoadOptions o;
        o.path = storiesModel().toStdString();
        o.device = "cpu";
        o.contextLength = contextLength;
        QSignalSpy changed(m_c.get(), &InferenceController::modelChanged);
        m_c->loadModel(o);
        return changed.wait(30000) && m_c->modelLoaded();
    }

    QVariantList turn(const QList<ChatTurn>& messages, int maxTokens, QString* text) {
        QSignalSpy finished(m_c.get(), &InferenceController::generationFinished);
        QSignalSpy failed(m_c.get(), &InferenceController::generationFailed);
        EngineSampling s;
        s.temperature = 0;  // greedy: repeatable
        s.maxTokens = maxTokens;
        if (m_c->generate(messages, s) == 0) return {};
        QDeadlineTimer deadline(60000);
        while (finished.isEmpty() && failed.isEmpty() && !deadline.hasExpired()) QTest::qWait(10);
        if (finished.isEmpty() && failed.isEmpty()) {
            qWarning() << "generation timed out";
            return {};
        }
        if (!failed.isEmpty()) {
            qWarning() << "generation failed:" << failed.at(0).at(0).toString();
            return {};
        }
        *text = finished.at(0).at(0).toString();
        return finished.at(0);
    }

private slots:
    void init() {
        m_c = std::make_unique<InferenceController>(
            [] { return std::make_unique<EmberChatEngine>(); });
    }
    void cleanup() { m_c.reset(); }

    void fullTurnProducesText() {
        QVERIFY2(QFileInfo::exists(storiesModel()), qPrintable(storiesModel()));
        QVERIFY(load());
        QCOMPARE(m_c->backend(), QString("cpu"));
        QVERIFY(!m_c->device().isEmpty());
        QSignalSpy batches(m_c.get(), &InferenceController::textReady);
        QString text;
        const QList<ChatTurn> first{{"user", "Once upon a time"}};
        const QVariantList result = turn(first, 48, &text);
        QCOMPARE(result.size(), 2);
        const auto stats = result.at(1).value<GenerationStats>();
        QVERIFY2(text.trimmed().size() > 10, qPrintable(text));
        QVERIFY(stats.generatedTokens > 0);
        QVERIFY(stats.templateFallback);  // stories260K has no chat template
        QString streamed;
        for (const auto& b : batches) streamed += b.at(0).toString();
        QCOMPARE(streamed, text);

        // The next turn reuses the cached prefix: far fewer tokens are evaluated than sent.
        // The prompt's numbers come before the reply (the overlay's live context), as the
        // stats give them at the end.
        QSignalSpy prompts(m_c.get(), &InferenceController::promptEvaluating);
        QString second;
        const QVariantList again =
            turn({{"user", "Once upon a time"}, {"assistant", text}, {"user", "Then what?"}}, 16,
                 &second);
        QCOMPARE(again.size(), 2);
        const auto s2 = again.at(1).value<GenerationStats>();
        QCOMPARE(prompts.size(), 1);
        QCOMPARE(prompts.at(0).at(0).toInt(), s2.promptTokens);
        QCOMPARE(prompts.at(0).at(1).toInt(), s2.evaluatedTokens);
        QVERIFY2(s2.evaluatedTokens < s2.promptTokens / 2,
                 qPrintable(QString("%1 of %2").arg(s2.evaluatedTokens).arg(s2.promptTokens)));
    }

    // Greedy sampling with the app's repeat penalty: a regeneration (which reuses the cached
    // prompt) gives exactly the first answer's tokens.
    void greedyRegenerationRepeatsTheFirstAnswer() {
        QVERIFY(load());
        const QList<ChatTurn> prompt{{"system", "Tell a story about a cat."},
                                     {"user", "Once upon a time there was a cat"}};
        QString first, again, third;
        QCOMPARE(turn(prompt, 48, &first).size(), 2);
        const QVariantList second = turn(prompt, 48, &again);
        QCOMPARE(second.size(), 2);
        const auto stats = second.at(1).value<GenerationStats>();
        QVERIFY(stats.evaluatedTokens < stats.promptTokens);
        QCOMPARE(again, first);
        QCOMPARE(turn(prompt, 48, &third).size(), 2);
        QCOMPARE(third, first);
    }

    void longConversationDropsOldestTurns() {
        QVERIFY(load(256));
        QList<ChatTurn> history{{"system", "Tell stories."}};
        const QString filler =
            QString("The little dog ran in the park and played with a ball. ").repeated(4);
        for (int i = 0; i < 8; ++i)
            history << ChatTurn{"user", filler} << ChatTurn{"assistant", filler};
        history << ChatTurn{"user", "Once upon a time"};
        QString text;
        const QVariantList result = turn(history, 32, &text);
        QCOMPARE(result.size(), 2);
        const auto stats = result.at(1).value<GenerationStats>();
        QVERIFY(stats.droppedMessages > 0);
        QVERIFY(stats.promptTokens <= 256);
    }

    // A full context, on 256 tokens, by the conversation's policy: the oldest turns are left out
    // (the system prompt stays), or the window rolls over the system prompt too, or nothing is
    // left out and the request fails saying what it needs.
    void contextPolicyModesOn256Tokens() {
        QVERIFY(load(256));
        QList<ChatTurn> history{{"system", "Tell stories."}};
        const QString filler =
            QString("The little dog ran in the park and played with a ball. ").repeated(4);
        for (int i = 0; i < 8; ++i)
            history << ChatTurn{"user", filler} << ChatTurn{"assistant", filler};
        history << ChatTurn{"user", "Once upon a time"};
        auto run = [&](const QList<ChatTurn>& messages, ContextPolicy policy) -> QVariantList {
            QSignalSpy finished(m_c.get(), &InferenceController::generationFinished);
            QSignalSpy failed(m_c.get(), &InferenceController::generationFailed);
            EngineSampling s;
            s.temperature = 0;
            s.maxTokens = 32;
            s.contextPolicy = policy;
            if (m_c->generate(messages, s) == 0) return {};
            QDeadlineTimer deadline(60000);
            while (finished.isEmpty() && failed.isEmpty() && !deadline.hasExpired())
                QTest::qWait(10);
            if (!finished.isEmpty()) return {"finished", finished.at(0).at(1)};
            if (!failed.isEmpty()) return {"failed", failed.at(0).at(0), failed.at(0).at(2)};
            return {};
        };
        const QVariantList drop = run(history, ContextPolicy::DropOldest);
        QCOMPARE(drop.value(0).toString(), QString("finished"));
        const auto dropStats = drop.at(1).value<GenerationStats>();
        QVERIFY(dropStats.droppedMessages > 0);
        QVERIFY(!dropStats.systemPromptDropped);
        QVERIFY(dropStats.promptTokens <= 256 - 32);

        const QVariantList rolling = run(history, ContextPolicy::RollingWindow);
        QCOMPARE(rolling.value(0).toString(), QString("finished"));
        const auto rollingStats = rolling.at(1).value<GenerationStats>();
        QVERIFY(rollingStats.systemPromptDropped);
        QVERIFY(rollingStats.droppedMessages > 0);
        QVERIFY(rollingStats.promptTokens <= 256 - 32);

        const QVariantList stop = run(history, ContextPolicy::Stop);
        QCOMPARE(stop.value(0).toString(), QString("failed"));
        QCOMPARE(stop.at(2).toString(), QString("app.context_full"));
        QVERIFY2(stop.at(1).toString().startsWith("the conversation needs") &&
                     stop.at(1).toString().contains("the context of 256 tokens"),
                 qPrintable(stop.at(1).toString()));
        // What fits is sent whole whatever the policy.
        const QList<ChatTurn> shortChat{{"system", "Tell stories."}, {"user", "Once upon a time"}};
        const QVariantList fits = run(shortChat, ContextPolicy::Stop);
        QCOMPARE(fits.value(0).toString(), QString("finished"));
        QCOMPARE(fits.at(1).value<GenerationStats>().droppedMessages, 0);

        // The token counter counts what generate() renders.
        QSignalSpy counted(m_c.get(), &InferenceController::tokensCounted);
        m_c->countTokens(shortChat, EngineSampling{});
        QVERIFY(counted.wait(30000));
        QCOMPARE(counted.at(0).at(0).toInt(), fits.at(1).value<GenerationStats>().promptTokens);
    }

    // What does not fit is named, with the numbers: the system prompt or the message.
    void overflowSaysWhatDoesNotFit() {
        QVERIFY(load(256));
        const QString longText =
            QString("The little dog ran in the park and played with a ball. ").repeated(40);
        auto failure = [&](const QList<ChatTurn>& messages) -> QStringList {
            QSignalSpy failed(m_c.get(), &InferenceController::generationFailed);
            EngineSampling s;
            s.temperature = 0;
            s.maxTokens = 64;
            if (m_c->generate(messages, s) == 0 || !failed.wait(60000)) return {};
            return {failed.at(0).at(0).toString(), failed.at(0).at(2).toString()};
        };
        const QStringList system = failure({{"system", longText}, {"user", "Hi"}});
        QCOMPARE(system.size(), 2);
        QCOMPARE(system[1], QString("app.prompt_too_long"));
        QVERIFY2(system[0].contains("the system prompt alone needs") &&
                     system[0].contains("the context of 256 tokens leaves 192 for the prompt"),
                 qPrintable(system[0]));
        const QStringList message = failure({{"system", "Be brief."}, {"user", longText}});
        QCOMPARE(message.size(), 2);
        QVERIFY2(
            message[0].startsWith("the message needs") && !message[0].contains("system prompt"),
            qPrintable(message[0]));
        // The message and the system prompt fit apart but not together.
        const QString half =
            QString("The little dog ran in the park and played with a ball. ").repeated(5);
        const QStringList both = failure({{"system", half}, {"user", half}});
        QCOMPARE(both.size(), 2);
        QVERIFY2(both[0].contains("the system prompt (") && both[0].contains("need"),
                 qPrintable(both[0]));
    }

    // Continue: the prompt is the conversation with the generation prompt, then the reply's
    // text so far; a greedy continuation of a prefix of a reply gives the rest of that reply.
    void continueGoesOnFromThePartialReply() {
        QVERIFY(load());
        const QList<ChatTurn> prompt{{"user", "Once upon a time"}};
        QString full;
        QCOMPARE(turn(prompt, 40, &full).size(), 2);
        QVERIFY(full.size() > 20);
        // Cut before a space: a token boundary of the reply (its words start with a space).
        const int cut = full.lastIndexOf(' ', full.size() / 2);
        QVERIFY(cut > 0);
        const QString head = full.left(cut);
        QList<ChatTurn> partial = prompt;
        partial << ChatTurn{"assistant", head};
        QSignalSpy finished(m_c.get(), &InferenceController::generationFinished);
        EngineSampling s;
        s.temperature = 0;
        s.maxTokens = 40;
        s.continueLast = true;
        QVERIFY(m_c->generate(partial, s) != 0);
        QVERIFY(finished.wait(60000));
        const QString rest = finished.at(0).at(0).toString();
        QVERIFY(!rest.isEmpty());
        // Tokens may split differently at the seam; the text right after it matches.
        const QString expected = full.mid(head.size());
        const int n = std::min<int>(8, std::min(rest.size(), expected.size()));
        QVERIFY2(rest.left(n) == expected.left(n),
                 qPrintable(QString("'%1' vs '%2'").arg(rest, expected)));
    }

    // A truncated copy of the model is refused in plain words, and the loaded model stays.
    void truncatedFileKeepsTheLoadedModel() {
        QVERIFY(load());
        QTemporaryDir dir;
        QFile source(storiesModel());
        QVERIFY(source.open(QIODevice::ReadOnly));
        const QByteArray bytes = source.readAll();
        QFile cut(dir.filePath("cut.gguf"));
        QVERIFY(cut.open(QIODevice::WriteOnly));
        QCOMPARE(cut.write(bytes.left(bytes.size() * 2 / 3)), qint64(bytes.size() * 2 / 3));
        cut.close();
        QSignalSpy failed(m_c.get(), &InferenceController::loadFailed);
        QSignalSpy changed(m_c.get(), &InferenceController::modelChanged);
        EngineLoadOptions o;
        o.path = cut.fileName().toStdString();
        o.device = "cpu";
        m_c->loadModel(o);
        QVERIFY(failed.wait(30000));
        const QString message = failed.at(0).at(0).toString();
        QVERIFY2(message.startsWith("the file is incomplete: ") &&
                     message.contains(" of at least ") && message.endsWith("download it again"),
                 qPrintable(message));
        QVERIFY(failed.at(0).at(1).toString().contains("past the end of the file"));
        QCOMPARE(changed.count(), 0);
        QVERIFY(m_c->modelLoaded());
        QCOMPARE(m_c->modelPath(), storiesModel());
        QString text;
        QCOMPARE(turn({{"user", "Once upon a time"}}, 8, &text).size(), 2);
    }

    // The worker words a cancelled load by the engine's error code: the two must agree.
    void cancelledLoadHasTheCodeTheWorkerNames() {
        EmberChatEngine engine;
        EngineLoadOptions o;
        o.path = storiesModel().toStdString();
        o.device = "cpu";
        auto result = engine.load(
            o, [](float) { return false; }, nullptr);
        QVERIFY(!result.ok());
        QCOMPARE(QString::fromStdString(result.error().code), QString("model.cancelled"));
    }

    // The progress the app shows is the engine's true progress: several steps between 0 and 1,
    // never going back, ending at 1 (a CPU load reports per tensor checked and repacked).
    void loadReportsSteadyProgress() {
        EmberChatEngine engine;
        EngineLoadOptions o;
        o.path = storiesModel().toStdString();
        o.device = "cpu";
        std::vector<float> seen;
        auto result = engine.load(
            o,
            [&](float p) {
                seen.push_back(p);
                return true;
            },
            nullptr);
        QVERIFY2(result.ok(), result.ok() ? "" : result.error().message.c_str());
        QVERIFY(!seen.empty());
        QVERIFY(std::is_sorted(seen.begin(), seen.end()));
        QCOMPARE(seen.back(), 1.0f);
        std::set<float> between;
        for (float p : seen)
            if (p > 0.05f && p < 1.0f) between.insert(p);
        QVERIFY2(between.size() >= 5, qPrintable(QString::number(between.size())));
    }

    // The app's load options as the engine's parameters: the GPU reserve setting among them.
    void loadOptionsReachTheEngine() {
        EngineLoadOptions o;
        o.path = "m.gguf";
        o.device = "1";
        o.threads = 3;
        o.contextLength = 4096;
        o.gpuMemReserve = uint64_t(2) << 30;
        const ember::LoadParams p = EmberChatEngine::loadParams(o);
        QCOMPARE(p.backend, ember::BackendKind::Vulkan);
        QCOMPARE(QString::fromStdString(p.device), QString("1"));
        QCOMPARE(p.n_threads, 3);
        QCOMPARE(p.n_ctx, 4096);
        QCOMPARE(p.gpu_mem_reserve, uint64_t(2) << 30);
        o.device = "cpu";
        QCOMPARE(EmberChatEngine::loadParams(o).backend, ember::BackendKind::Cpu);
    }

    // A context longer than the model's (stories260K: 2048) fails the load with the engine's
    // message naming both, and the previous model stays.
    void contextLongerThanTheModelIsALoadError() {
        QVERIFY(load());
        QSignalSpy failed(m_c.get(), &InferenceController::loadFailed);
        EngineLoadOptions o;
        o.path = storiesModel().toStdString();
        o.device = "cpu";
        o.contextLength = 4096;
        m_c->loadModel(o);
        QVERIFY(failed.wait(30000));
        const QString message = failed.at(0).at(0).toString();
        QVERIFY2(message.contains("a context of 4096 tokens is longer than the 2048 tokens"),
                 qPrintable(message));
        QVERIFY(m_c->modelLoaded());
    }

    void missingFileIsALoadError() {
        QSignalSpy failed(m_c.get(), &InferenceController::loadFailed);
        EngineLoadOptions o;
        o.path = "/nonexistent/model.gguf";
        m_c->loadModel(o);
        QVERIFY(failed.wait(10000));
        QVERIFY2(failed.at(0).at(0).toString().contains("model.gguf"),
                 qPrintable(failed.at(0).at(0).toString()));
        QVERIFY(!m_c->modelLoaded());
    }
};

QTEST_MAIN(TestEmberChatEngine)
#include "tst_emberchatengine.moc"
