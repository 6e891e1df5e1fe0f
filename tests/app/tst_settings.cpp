// Settings: the sampling defaults are the engine's (ember::GenerateParams), the one source, for a
// fresh install and after "Reset to defaults"; EngineSampling starts from them too.
#include <QCoreApplication>
#include <QSettings>
#include <QTemporaryDir>
#include <QtTest>

#include "chatengine.h"
#include "ember/ember.h"
#include "settings.h"

class TestSettings : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;  // this test's own settings files

    static double shown(float v) { return QString::number(v).toDouble(); }

    static void checkEngineDefaults(const Settings& s) {
        const ember::GenerateParams e{};
        QCOMPARE(s.temperature(), shown(e.sampling.temperature));
        QCOMPARE(s.topK(), e.sampling.top_k);
        QCOMPARE(s.topP(), shown(e.sampling.top_p));
        QCOMPARE(s.minP(), shown(e.sampling.min_p));
        QCOMPARE(s.repeatPenalty(), shown(e.sampling.repeat_penalty));
        QCOMPARE(s.maxTokens(), e.max_tokens);
        const EngineSampling sampling = s.sampling();
        QCOMPARE(sampling.temperature, e.sampling.temperature);
        QCOMPARE(sampling.topK, e.sampling.top_k);
        QCOMPARE(sampling.topP, e.sampling.top_p);
        QCOMPARE(sampling.minP, e.sampling.min_p);
        QCOMPARE(sampling.repeatPenalty, e.sampling.repeat_penalty);
        QCOMPARE(sampling.maxTokens, e.max_tokens);
    }

private slots:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, m_dir.path());
    }

    void freshSettingsTakeTheEnginesDefaults() {
        Settings s;
        checkEngineDefaults(s);
        // Shown as the user would type them: 0.8, not 0.800000011920929.
        QCOMPARE(QString::number(s.temperature()),
                 QString::number(ember::SamplingParams{}.temperature));
    }

    void resetGoesBackToTheEnginesDefaults() {
        Settings s;
        s.setTemperature(1.5);
        s.setTopK(7);
        s.setTopP(0.5);
        s.setMinP(0.2);
        s.setRepeatPenalty(1.3);
        s.setMaxTokens(99);
        QCOMPARE(s.maxTokens(), 99);
        s.resetToDefaults();
        checkEngineDefaults(s);
    }

    // "Leave N GiB for other programs": saved, in the load options as bytes, never negative.
    void gpuReserveIsSavedAndReachesTheLoadOptions() {
        Settings s;
        QCOMPARE(s.gpuReserveGiB(), 0);
        QCOMPARE(s.loadOptions("m.gguf").gpuMemReserve, uint64_t(0));
        QSignalSpy changed(&s, &Settings::gpuReserveGiBChanged);
        s.setGpuReserveGiB(3);
        QCOMPARE(changed.count(), 1);
        Settings later;
        QCOMPARE(later.gpuReserveGiB(), 3);
        QCOMPARE(later.loadOptions("m.gguf").gpuMemReserve, uint64_t(3) << 30);
        s.setGpuReserveGiB(-2);
        QCOMPARE(s.gpuReserveGiB(), 0);
        s.setGpuReserveGiB(5);
        s.resetToDefaults();
        QCOMPARE(s.gpuReserveGiB(), 0);
    }

    void engineSamplingStartsFromTheEnginesDefaults() {
        const ember::GenerateParams e{};
        const EngineSampling s{};
        QCOMPARE(s.temperature, e.sampling.temperature);
        QCOMPARE(s.topK, e.sampling.top_k);
        QCOMPARE(s.topP, e.sampling.top_p);
        QCOMPARE(s.minP, e.sampling.min_p);
        QCOMPARE(s.repeatPenalty, e.sampling.repeat_penalty);
        QCOMPARE(s.maxTokens, e.max_tokens);
    }
};

QTEST_GUILESS_MAIN(TestSettings)
#include "tst_settings.moc"
