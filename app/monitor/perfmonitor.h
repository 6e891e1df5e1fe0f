// The performance overlay's data, on the UI thread: rates and times from the inference
// controller's signals (through PerfMetrics), and the device memory that a MemoryMonitor samples
// on a thread of its own while a model is loaded.
#pragma once

#include <QtQml/qqmlregistration.h>
#include <QList>
#include <QObject>
#include <QString>
#include <QThread>
#include <QTimer>
#include <QVariantMap>
#include <functional>

#include "inferencevalues.h"
#include "perfmetrics.h"

class InferenceController;
class MemoryMonitor;

class PerfMonitor : public QObject {
    Q_OBJECT
    QML_ELEMENT
    QML_UNCREATABLE("made by main.cpp")
    Q_PROPERTY(bool generating READ generating NOTIFY ratesChanged)
    Q_PROPERTY(double tokensPerSecond READ tokensPerSecond NOTIFY ratesChanged)
    Q_PROPERTY(double responseTokensPerSecond READ responseTokensPerSecond NOTIFY ratesChanged)
    Q_PROPERTY(int generatedTokens READ generatedTokens NOTIFY ratesChanged)
    Q_PROPERTY(double promptTokensPerSecond READ promptTokensPerSecond NOTIFY responseChanged)
    Q_PROPERTY(int promptTokens READ promptTokens NOTIFY responseChanged)
    Q_PROPERTY(int promptTokensTotal READ promptTokensTotal NOTIFY responseChanged)
    Q_PROPERTY(double timeToFirstTokenMs READ timeToFirstTokenMs NOTIFY ratesChanged)
    Q_PROPERTY(int contextUsed READ contextUsed NOTIFY responseChanged)
    Q_PROPERTY(int contextSize READ contextSize NOTIFY modelChanged)
    Q_PROPERTY(bool modelLoaded READ modelLoaded NOTIFY modelChanged)
    Q_PROPERTY(QString backend READ backend NOTIFY modelChanged)
    Q_PROPERTY(QString device READ device NOTIFY modelChanged)
    Q_PROPERTY(QString fallbackReason READ fallbackReason NOTIFY modelChanged)
    Q_PROPERTY(double memoryUsed READ memoryUsed NOTIFY memoryChanged)
    Q_PROPERTY(double memoryBudget READ memoryBudget NOTIFY memoryChanged)
    Q_PROPERTY(QString memorySource READ memorySource NOTIFY memoryChanged)
    Q_PROPERTY(QList<qreal> history READ history NOTIFY historyChanged)
    Q_PROPERTY(int historyCapacity READ historyCapacity NOTIFY historyChanged)

public:
    // Live values refresh at this rate; the history samples every 500 ms (PerfMetrics).
    static constexpr int kRefreshMs = 250;

    // inference may be null (tests feed the slots directly).
    explicit PerfMonitor(InferenceController* inference, QObject* parent = nullptr);
    ~PerfMonitor() override;

    bool generating() const { return m_metrics.generating(); }
    double tokensPerSecond() const { return m_metrics.liveTokensPerSecond(m_clock()); }
    double responseTokensPerSecond() const { return m_metrics.responseTokensPerSecond(); }
    int generatedTokens() const { return m_metrics.generatedTokens(); }
    double promptTokensPerSecond() const { return m_metrics.promptTokensPerSecond(); }
    int promptTokens() const { return m_metrics.promptTokens(); }  // evaluated
    int promptTokensTotal() const { return m_metrics.promptTotal(); }
    double timeToFirstTokenMs() const { return m_metrics.timeToFirstTokenMs(); }
    int contextUsed() const { return m_metrics.contextUsed(); }
    int contextSize() const { return m_contextSize; }
    bool modelLoaded() const { return m_modelLoaded; }
    QString backend() const { return m_backend; }
    QString device() const { return m_device; }
    QString fallbackReason() const { return m_fallbackReason; }
    double memoryUsed() const { return static_cast<double>(m_memoryUsed); }
    double memoryBudget() const { return static_cast<double>(m_memoryBudget); }
    QString memorySource() const { return m_memorySource; }
    QList<qreal> history() const;
    int historyCapacity() const { return static_cast<int>(m_metrics.historyCapacity()); }

    // Tests replace the clock (PerfMetrics::nowMs() by default).
    void setClock(std::function<double()> clock) { m_clock = std::move(clock); }

public slots:
    void onGenerationStarted();
    void onPrompt(int total, int evaluated);  // the prompt of the response under way
    void onTokens(const QList<double>& timesMs);
    void onGenerationFinished(const GenerationStats& stats);  // all zero: it failed
    void onMemorySample(quint64 used, quint64 budget, const QString& source);
    // The model now loaded (path empty: none); another model than before resets the numbers.
    void setModel(const QString& path, const QString& backend, const QString& device,
                  int contextSize, const QString& fallbackReason);
    void refresh();  // the timer's tick

signals:
    void ratesChanged();
    void responseChanged();
    void modelChanged();
    void memoryChanged();
    void historyChanged();
    // Queued into the memory monitor.
    void requestMonitorStart();
    void requestMonitorStop();

private:
    void onModelChanged();

    InferenceController* m_inference;
    PerfMetrics m_metrics;
    std::function<double()> m_clock = &PerfMetrics::nowMs;
    QTimer m_refresh;
    QThread m_monitorThread;
    MemoryMonitor* m_monitor = nullptr;
    bool m_modelLoaded = false;
    int m_contextSize = 0;
    QString m_modelPath, m_backend, m_device, m_fallbackReason, m_memorySource;
    quint64 m_memoryUsed = 0, m_memoryBudget = 0;
};
