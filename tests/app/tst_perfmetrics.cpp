// The performance overlay's computations (PerfMetrics) and their QML-facing wrapper (PerfMonitor),
// with injected timestamps only: no sleeps, no real clocks.
#include <QSignalSpy>
#include <QtTest>

#include "perfmetrics.h"
#include "perfmonitor.h"

namespace {

// Tokens every `stepMs` from `fromMs` (inclusive) while < `toMs`; returns the next time.
double feed(PerfMetrics& m, double fromMs, double toMs, double stepMs) {
    double t = fromMs;
    for (; t < toMs - 1e-9; t += stepMs) m.addToken(t);
    return t;
}

}  // namespace

class TestPerfMetrics : public QObject {
    Q_OBJECT
private slots:
    // Windows are asked for at the newest token or later (older tokens are dropped as they go).
    void steadyRateOverTheWindow() {
        PerfMetrics m;
        m.beginResponse(900);
        QCOMPARE(m.windowRate(1000), 0.0);  // no token yet
        m.addToken(1000);
        QCOMPARE(m.windowRate(1000), 0.0);  // one token is no rate yet
        double t = feed(m, 1010, 1101, 10);
        // Shorter than a window since the first token: measured from the first token.
        QCOMPARE(m.windowRate(1100), 100.0);
        QCOMPARE(m.windowRate(1150), 10 * 1000.0 / 150);
        t = feed(m, t, 2501, 10);
        QCOMPARE(m.windowRate(2500), 100.0);
        feed(m, t, 3001, 10);  // 100 tok/s, tokens at 1000, 1010, ..., 3000
        QCOMPARE(m.windowRate(3000), 100.0);
        QCOMPARE(m.liveTokensPerSecond(3000), 100.0);
    }

    void movingWindowFollowsAChange() {
        PerfMetrics m;
        m.beginResponse(0);
        double t = feed(m, 0, 2000, 10);  // 100 tok/s for 2 s
        QCOMPARE(m.windowRate(1990), 100.0);
        t = feed(m, t, 2501, 50);  // then 20 tok/s from 2000
        // Half of the window at each speed: 49 + 11 tokens over one second.
        QCOMPARE(m.windowRate(2500), 60.0);
        feed(m, t, 4001, 50);
        QCOMPARE(m.windowRate(4000), 20.0);
        QCOMPARE(m.liveTokensPerSecond(4000), 20.0);
    }

    void liveRateFreezesWhenTheResponseEnds() {
        PerfMetrics m;
        m.beginResponse(0);
        feed(m, 100, 1101, 20);  // 50 tok/s, last token at 1100
        QVERIFY(m.generating());
        m.finishResponse({});
        QVERIFY(!m.generating());
        // The raw window empties as time passes, the shown live rate stays at its last value.
        QCOMPARE(m.windowRate(1600), 25.0);
        QCOMPARE(m.windowRate(2200), 0.0);
        QCOMPARE(m.liveTokensPerSecond(99999), 50.0);
    }

    void responseRateTtftAndCountsFromTimestamps() {
        PerfMetrics m;
        QCOMPARE(m.timeToFirstTokenMs(), -1.0);
        QCOMPARE(m.responseTokensPerSecond(), 0.0);
        m.beginResponse(1000);
        m.addToken(1250);
        QCOMPARE(m.timeToFirstTokenMs(), 250.0);
        QCOMPARE(m.responseTokensPerSecond(), 0.0);
        m.addToken(1275);
        m.addToken(1300);
        m.addToken(1350);  // 3 tokens after the first in 100 ms
        QCOMPARE(m.responseTokensPerSecond(), 30.0);
        QCOMPARE(m.generatedTokens(), 4);
        QCOMPARE(m.promptTokensPerSecond(), 0.0);  // known when the engine reports it
    }

    void engineTotalsReplaceEstimatesAtTheEnd() {
        PerfMetrics m;
        m.beginResponse(0);
        m.addToken(100);
        m.addToken(200);
        ResponseTotals totals;
        totals.promptTokens = 48;
        totals.promptMs = 60;
        totals.timeToFirstTokenMs = 95.5;
        totals.tokensPerSecond = 9.75;
        totals.generatedTokens = 3;  // e.g. the last token's text was held back
        totals.contextUsed = 51;
        m.finishResponse(totals);
        QCOMPARE(m.promptTokensPerSecond(), 800.0);
        QCOMPARE(m.promptTokens(), 48);
        QCOMPARE(m.timeToFirstTokenMs(), 95.5);
        QCOMPARE(m.responseTokensPerSecond(), 9.75);
        QCOMPARE(m.generatedTokens(), 3);
        QCOMPARE(m.contextUsed(), 51);
        // Totals the engine did not give fall back to the timestamps.
        PerfMetrics n;
        n.beginResponse(0);
        n.addToken(100);
        n.addToken(200);
        n.finishResponse({});
        QCOMPARE(n.responseTokensPerSecond(), 10.0);
        QCOMPARE(n.timeToFirstTokenMs(), 100.0);
        QCOMPARE(n.generatedTokens(), 2);
    }

    void aNewResponseStartsClean() {
        PerfMetrics m;
        m.beginResponse(0);
        feed(m, 0, 1000, 10);
        ResponseTotals totals;
        totals.promptTokens = 10;
        totals.promptMs = 10;
        m.finishResponse(totals);
        m.beginResponse(1200);
        QCOMPARE(m.generatedTokens(), 0);
        QCOMPARE(m.promptTokensPerSecond(), 0.0);
        QCOMPARE(m.timeToFirstTokenMs(), -1.0);
        // The previous response's tokens, still within a window of 1250, do not count.
        m.addToken(1230);
        m.addToken(1250);
        QCOMPARE(m.windowRate(1250), 50.0);
    }

    void historySamplesEveryInterval() {
        PerfMetrics m;
        m.beginResponse(0);
        QVERIFY(m.sampleUntil(0));  // the first call samples at once
        QCOMPARE(m.history().size(), size_t(1));
        QVERIFY(!m.sampleUntil(499));  // not due yet
        feed(m, 0, 2001, 10);
        QVERIFY(m.sampleUntil(500));
        QCOMPARE(m.history().size(), size_t(2));
        QCOMPARE(m.history().back(), 100.0);
        // A late call fills in each missed instant with the rate at that instant.
        QVERIFY(m.sampleUntil(2100));  // 1000, 1500, 2000
        QCOMPARE(m.history().size(), size_t(5));
        QCOMPARE(m.history()[2], 100.0);
        QCOMPARE(m.history()[4], 100.0);
        m.finishResponse({});
        QVERIFY(m.sampleUntil(2500));  // half a window after the last token
        QCOMPARE(m.history().back(), 50.0);
        QVERIFY(m.sampleUntil(3000));
        QCOMPARE(m.history().back(), 0.0);
    }

    void historyKeepsTheLastMinute() {
        PerfMetrics m;
        QCOMPARE(m.historyCapacity(), size_t(120));
        for (int i = 0; i <= 200; ++i) m.sampleUntil(i * 500.0);
        QCOMPARE(m.history().size(), size_t(120));
        // A stall of ten minutes costs no more than one history's worth of samples.
        m.beginResponse(100000);
        feed(m, 100000, 700001, 100);  // 10 tok/s throughout
        QVERIFY(m.sampleUntil(700000));
        QCOMPARE(m.history().size(), size_t(120));
        for (double v : m.history()) QCOMPARE(v, 10.0);
    }

    void monitorExposesTheMetrics() {
        double now = 1000;
        PerfMonitor perf(nullptr);
        perf.setClock([&now] { return now; });
        QSignalSpy rates(&perf, &PerfMonitor::ratesChanged);
        QSignalSpy history(&perf, &PerfMonitor::historyChanged);
        QSignalSpy memory(&perf, &PerfMonitor::memoryChanged);
        perf.onGenerationStarted();
        QVERIFY(perf.generating());
        perf.onTokens({1100, 1120, 1140});
        perf.onTokens({1160, 1180, 1200});
        now = 1200;
        QCOMPARE(perf.tokensPerSecond(), 50.0);
        QCOMPARE(perf.generatedTokens(), 6);
        QCOMPARE(perf.timeToFirstTokenMs(), 100.0);
        perf.refresh();
        QCOMPARE(perf.history(), QList<qreal>{50.0});
        QCOMPARE(history.count(), 1);
        perf.onGenerationFinished({.evaluatedTokens = 12,
                                   .generatedTokens = 6,
                                   .tokensPerSecond = 48.5,
                                   .timeToFirstTokenMs = 99.0,
                                   .promptMs = 24.0,
                                   .contextUsed = 18});
        QVERIFY(!perf.generating());
        QCOMPARE(perf.promptTokensPerSecond(), 500.0);
        QCOMPARE(perf.responseTokensPerSecond(), 48.5);
        QCOMPARE(perf.timeToFirstTokenMs(), 99.0);
        QCOMPARE(perf.contextUsed(), 18);
        QVERIFY(rates.count() >= 4);
        perf.onMemorySample(300 << 20, 1ULL << 32, "VK_EXT_memory_budget");
        QCOMPARE(memory.count(), 1);
        QCOMPARE(perf.memoryUsed(), double(300 << 20));
        QCOMPARE(perf.memoryBudget(), double(1ULL << 32));
        QCOMPARE(perf.memorySource(), QString("VK_EXT_memory_budget"));
        perf.onMemorySample(300 << 20, 1ULL << 32, "VK_EXT_memory_budget");
        QCOMPARE(memory.count(), 1);  // unchanged numbers notify nothing
    }

    // After a regenerate most of the prompt comes from the cache: both counts are shown.
    void monitorReportsThePromptTotalAndEvaluated() {
        PerfMonitor perf(nullptr);
        double now = 0;
        perf.setClock([&now] { return now; });
        perf.onGenerationStarted();
        perf.onTokens({10, 20});
        perf.onGenerationFinished({.promptTokens = 120,
                                   .evaluatedTokens = 1,
                                   .generatedTokens = 2,
                                   .promptMs = 5.0,
                                   .contextUsed = 122});
        QCOMPARE(perf.promptTokensTotal(), 120);
        QCOMPARE(perf.promptTokens(), 1);
        QCOMPARE(perf.contextUsed(), 122);
    }

    // The context counts up while a reply is generated: the previous value until the prompt is
    // known, then the prompt and each token; the engine's figure at the end.
    void monitorUpdatesTheContextWhileGenerating() {
        PerfMonitor perf(nullptr);
        double now = 0;
        perf.setClock([&now] { return now; });
        perf.setModel("/m/a.gguf", "cpu", "CPU", 2048, "");
        perf.onGenerationStarted();
        perf.onTokens({10});
        perf.onGenerationFinished({.promptTokens = 40, .contextUsed = 41});
        QCOMPARE(perf.contextUsed(), 41);

        QSignalSpy response(&perf, &PerfMonitor::responseChanged);
        perf.onGenerationStarted();
        QCOMPARE(perf.contextUsed(), 41);
        perf.onPrompt(120, 79);
        QCOMPARE(perf.contextUsed(), 120);
        QCOMPARE(perf.promptTokensTotal(), 120);
        QCOMPARE(perf.promptTokens(), 79);
        response.clear();
        perf.onTokens({20, 30, 40});
        QCOMPARE(perf.contextUsed(), 123);
        QVERIFY(response.count() >= 1);  // the overlay's context row follows
        perf.onTokens({50});
        QCOMPARE(perf.contextUsed(), 124);
        perf.onGenerationFinished(
            {.promptTokens = 120, .evaluatedTokens = 79, .generatedTokens = 4, .contextUsed = 123});
        QCOMPARE(perf.contextUsed(), 123);
        // A prompt reported outside a response changes nothing.
        perf.onPrompt(500, 500);
        QCOMPARE(perf.contextUsed(), 123);
        QCOMPARE(perf.promptTokensTotal(), 120);
    }

    // Another model: the previous model's numbers go; the same model keeps them.
    void monitorResetsOnAnotherModel() {
        PerfMonitor perf(nullptr);
        double now = 1000;
        perf.setClock([&now] { return now; });
        perf.setModel("/m/a.gguf", "vulkan", "GPU 0", 2048, "");
        perf.onGenerationStarted();
        perf.onTokens({1100, 1120, 1140});
        now = 1500;
        perf.refresh();
        perf.onGenerationFinished({.promptTokens = 50,
                                   .evaluatedTokens = 50,
                                   .generatedTokens = 3,
                                   .tokensPerSecond = 50.0,
                                   .promptMs = 10.0,
                                   .contextUsed = 53});
        QVERIFY(!perf.history().isEmpty());
        perf.setModel("/m/a.gguf", "vulkan", "GPU 0", 2048, "");  // the same model again
        QCOMPARE(perf.contextUsed(), 53);

        QSignalSpy response(&perf, &PerfMonitor::responseChanged);
        perf.setModel("/m/b.gguf", "cpu", "CPU", 4096, "no Vulkan device");
        QVERIFY(response.count() >= 1);
        QCOMPARE(perf.contextUsed(), 0);
        QCOMPARE(perf.contextSize(), 4096);
        QCOMPARE(perf.promptTokensTotal(), 0);
        QCOMPARE(perf.generatedTokens(), 0);
        QCOMPARE(perf.tokensPerSecond(), 0.0);
        QCOMPARE(perf.responseTokensPerSecond(), 0.0);
        QCOMPARE(perf.timeToFirstTokenMs(), -1.0);
        QVERIFY(perf.history().isEmpty());
        QCOMPARE(perf.backend(), QString("cpu"));
        QCOMPARE(perf.fallbackReason(), QString("no Vulkan device"));
        QVERIFY(perf.modelLoaded());
        perf.setModel("", "", "", 0, "");
        QVERIFY(!perf.modelLoaded());
    }
};

QTEST_GUILESS_MAIN(TestPerfMetrics)
#include "tst_perfmetrics.moc"
