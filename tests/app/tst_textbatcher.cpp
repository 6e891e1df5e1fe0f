// The worker's batching of streamed text, on a fake clock: no sleeps, no real time.
#include <QtTest>

#include "textbatcher.h"

class TestTextBatcher : public QObject {
    Q_OBJECT
private slots:
    // 400 tokens 1 ms apart with a 33 ms interval: a hand-over every 33 ms, none in between,
    // and every byte exactly once, in order.
    void handsOverAtMostOncePerInterval() {
        qint64 now = 1000;
        TextBatcher b(33, [&now] { return now; });
        std::string all, handed;
        int handovers = 0;
        qint64 last = now;
        for (int i = 0; i < 400; ++i) {
            now += 1;
            std::string tok = "t" + std::to_string(i) + " ";
            all += tok;
            if (b.add(tok)) {
                QVERIFY2(now - last >= 33, qPrintable(QString::number(now - last)));
                last = now;
                handed += b.take();
                ++handovers;
            }
        }
        handed += b.take();  // the final flush
        QCOMPARE(handed, all);
        QCOMPARE(handovers, 400 / 33);
        QVERIFY(b.empty());
    }

    // A slow stream (one token per 50 ms) hands every token over as it comes.
    void slowTokensGoOutAtOnce() {
        qint64 now = 0;
        TextBatcher b(33, [&now] { return now; });
        for (int i = 0; i < 5; ++i) {
            now += 50;
            QVERIFY(b.add("x"));
            QCOMPARE(b.take(), std::string("x"));
        }
    }

    // Nothing is due before the first interval has passed, however much text arrives.
    void burstBeforeTheIntervalWaits() {
        qint64 now = 7;
        TextBatcher b(33, [&now] { return now; });
        for (int i = 0; i < 1000; ++i) QVERIFY(!b.add("y"));
        now += 32;
        QVERIFY(!b.add("y"));
        now += 1;
        QVERIFY(b.add("y"));
        QCOMPARE(b.take().size(), size_t(1002));
    }
};

QTEST_GUILESS_MAIN(TestTextBatcher)
#include "tst_textbatcher.moc"
