// The worker over the real engine (EmberChatEngine) with the tiny stories260K model.
#include <QFileInfo>
#include <QSignalSpy>
#include <QtTest>

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
        const QVariantMap stats = result.at(1).toMap();
        QVERIFY2(text.trimmed().size() > 10, qPrintable(text));
        QVERIFY(stats.value("generatedTokens").toInt() > 0);
        QVERIFY(stats.value("templateFallback").toBool());  // stories260K has no chat template
        QString streamed;
        for (const auto& b : batches) streamed += b.at(0).toString();
        QCOMPARE(streamed, text);

        // The next turn reuses the cached prefix: far fewer tokens are evaluated than sent.
        QString second;
        const QVariantList again =
            turn({{"user", "Once upon a time"}, {"assistant", text}, {"user", "Then what?"}}, 16,
                 &second);
        QCOMPARE(again.size(), 2);
        const QVariantMap s2 = again.at(1).toMap();
        QVERIFY2(s2.value("evaluatedTokens").toInt() < s2.value("promptTokens").toInt() / 2,
                 qPrintable(QString("%1 of %2")
                                .arg(s2.value("evaluatedTokens").toInt())
                                .arg(s2.value("promptTokens").toInt())));
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
        const QVariantMap stats = result.at(1).toMap();
        QVERIFY(stats.value("droppedMessages").toInt() > 0);
        QVERIFY(stats.value("promptTokens").toInt() <= 256);
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
