#include "perfmonitor.h"

#include "inferencecontroller.h"
#include "memorymonitor.h"

PerfMonitor::PerfMonitor(InferenceController* inference, QObject* parent)
    : QObject(parent), m_inference(inference) {
    m_refresh.setInterval(kRefreshMs);
    connect(&m_refresh, &QTimer::timeout, this, &PerfMonitor::refresh);
    if (!m_inference) return;

    auto* monitor = new MemoryMonitor(m_inference->memoryProbe());
    monitor->moveToThread(&m_monitorThread);
    m_monitor = monitor;
    connect(&m_monitorThread, &QThread::finished, monitor, &QObject::deleteLater);
    connect(this, &PerfMonitor::requestMonitorStart, monitor, &MemoryMonitor::start);
    connect(this, &PerfMonitor::requestMonitorStop, monitor, &MemoryMonitor::stop);
    connect(monitor, &MemoryMonitor::sampled, this, &PerfMonitor::onMemorySample);
    m_monitorThread.setObjectName("ember-memory");
    m_monitorThread.start();

    connect(m_inference, &InferenceController::modelChanged, this, &PerfMonitor::onModelChanged);
    connect(m_inference, &InferenceController::generatingChanged, this, [this] {
        if (m_inference->generating()) onGenerationStarted();
    });
    connect(m_inference, &InferenceController::promptEvaluating, this, &PerfMonitor::onPrompt);
    connect(m_inference, &InferenceController::tokensGenerated, this, &PerfMonitor::onTokens);
    connect(m_inference, &InferenceController::generationFinished, this,
            [this](const QString&, const GenerationStats& stats) { onGenerationFinished(stats); });
    connect(m_inference, &InferenceController::generationFailed, this,
            [this] { onGenerationFinished({}); });
    onModelChanged();
}

PerfMonitor::~PerfMonitor() {
    m_monitorThread.quit();
    m_monitorThread.wait();
}

QList<qreal> PerfMonitor::history() const {
    const auto& h = m_metrics.history();
    return QList<qreal>(h.begin(), h.end());
}

void PerfMonitor::onModelChanged() {
    const bool loaded = m_inference->modelLoaded();
    setModel(loaded ? m_inference->modelPath() : QString(),
             loaded ? m_inference->backend() : QString(),
             loaded ? m_inference->device() : QString(), loaded ? m_inference->contextLength() : 0,
             loaded ? m_inference->fallbackReason() : QString());
}

void PerfMonitor::setModel(const QString& path, const QString& backend, const QString& device,
                           int contextSize, const QString& fallbackReason) {
    // The previous model's rates, prompt and context say nothing about this one.
    if (path != m_modelPath || backend != m_backend || device != m_device ||
        contextSize != m_contextSize) {
        m_metrics.reset();
        emit ratesChanged();
        emit responseChanged();
        emit historyChanged();
    }
    m_modelPath = path;
    m_modelLoaded = !path.isEmpty();
    m_backend = backend;
    m_device = device;
    m_contextSize = contextSize;
    m_fallbackReason = fallbackReason;
    emit modelChanged();
    m_memoryUsed = m_memoryBudget = 0;
    m_memorySource.clear();
    emit memoryChanged();
    if (!m_inference) return;
    if (m_modelLoaded) {
        emit requestMonitorStart();
        m_refresh.start();
    } else {
        emit requestMonitorStop();
        m_refresh.stop();
    }
}

void PerfMonitor::onGenerationStarted() {
    m_metrics.beginResponse(m_clock());
    emit ratesChanged();
    emit responseChanged();
}

void PerfMonitor::onPrompt(int total, int evaluated) {
    m_metrics.setPrompt(total, evaluated);
    emit responseChanged();
}

void PerfMonitor::onTokens(const QList<double>& timesMs) {
    for (double t : timesMs) m_metrics.addToken(t);
    // The live rate itself refreshes on the timer; counts (and the context) move at every batch.
    emit ratesChanged();
    emit responseChanged();
}

void PerfMonitor::onGenerationFinished(const GenerationStats& stats) {
    ResponseTotals totals;
    totals.promptTokens = stats.evaluatedTokens;
    totals.promptTotal = stats.promptTokens;
    totals.promptMs = stats.promptMs;
    totals.timeToFirstTokenMs = stats.timeToFirstTokenMs;
    totals.tokensPerSecond = stats.tokensPerSecond;
    totals.generatedTokens = stats.generatedTokens;
    totals.contextUsed = stats.contextUsed;
    m_metrics.finishResponse(totals);
    emit ratesChanged();
    emit responseChanged();
}

void PerfMonitor::onMemorySample(quint64 used, quint64 budget, const QString& source) {
    // A sample queued before an unload may arrive after it.
    if (m_inference && !m_modelLoaded) return;
    if (used == m_memoryUsed && budget == m_memoryBudget && source == m_memorySource) return;
    m_memoryUsed = used;
    m_memoryBudget = budget;
    m_memorySource = source;
    emit memoryChanged();
}

void PerfMonitor::refresh() {
    if (m_metrics.sampleUntil(m_clock())) emit historyChanged();
    if (m_metrics.generating()) emit ratesChanged();
}
