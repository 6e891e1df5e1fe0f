#include "inferencecontroller.h"

#include <QDir>
#include <QFileInfo>
#include <QStandardPaths>

InferenceController::InferenceController(const EngineFactory& factory, QObject* parent)
    : QObject(parent) {
    qRegisterMetaType<ChatTurn>();
    qRegisterMetaType<QList<ChatTurn>>();
    qRegisterMetaType<EngineLoadOptions>();
    qRegisterMetaType<EngineSampling>();

    auto* worker = new InferenceWorker(factory());
    worker->moveToThread(&m_thread);
    m_worker = worker;
    m_probe = worker->memoryProbe();
    connect(&m_thread, &QThread::finished, worker, &QObject::deleteLater);

    // Requests go to the worker's thread; replies come back to this one (queued both ways).
    connect(this, &InferenceController::requestLoad, worker, &InferenceWorker::loadModel);
    connect(this, &InferenceController::requestUnload, worker, &InferenceWorker::unloadModel);
    connect(this, &InferenceController::requestGenerate, worker, &InferenceWorker::generate);
    connect(this, &InferenceController::requestDevices, worker, &InferenceWorker::listDevices);
    connect(this, &InferenceController::requestCount, worker, &InferenceWorker::countTokens);
    connect(worker, &InferenceWorker::tokensCounted, this, [this](int tokens) {
        m_counting = false;
        if (m_nextCount) {
            auto [messages, sampling] = *std::exchange(m_nextCount, std::nullopt);
            return countTokens(messages, sampling);
        }
        emit tokensCounted(tokens);
    });
    connect(worker, &InferenceWorker::loadProgress, this, [this](double p) {
        m_loadProgress = p;
        emit loadProgressChanged();
    });
    connect(worker, &InferenceWorker::modelLoaded, this, &InferenceController::onModelLoaded);
    connect(worker, &InferenceWorker::loadFailed, this, &InferenceController::onLoadFailed);
    connect(worker, &InferenceWorker::modelUnloaded, this, [this] {
        m_modelLoaded = false;
        m_modelPath.clear();
        m_modelName.clear();
        emit modelChanged();
    });
    connect(worker, &InferenceWorker::devicesListed, this, [this](const QStringList& names) {
        m_devices = names;
        emit devicesChanged();
    });
    connect(worker, &InferenceWorker::textReady, this, &InferenceController::onTextReady);
    connect(worker, &InferenceWorker::promptReady, this,
            [this](quint64 requestId, int total, int evaluated) {
                if (requestId == m_currentRequest) emit promptEvaluating(total, evaluated);
            });
    connect(worker, &InferenceWorker::tokensTimed, this,
            [this](quint64 requestId, const QList<double>& times) {
                if (requestId == m_currentRequest) emit tokensGenerated(times);
            });
    connect(worker, &InferenceWorker::generationFinished, this, &InferenceController::onFinished);
    connect(worker, &InferenceWorker::generationFailed, this, &InferenceController::onFailed);

    m_thread.setObjectName("ember-inference");
    m_thread.start();
    emit requestDevices();
}

InferenceController::~InferenceController() {
    if (m_worker) m_worker->requestCancel();
    m_thread.quit();
    m_thread.wait();
}

QString InferenceController::modelsDirectory() const {
    return QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + "/models";
}

void InferenceController::loadModel(const EngineLoadOptions& options) {
    if (m_loading || m_generating) return;
    m_pendingPath = QString::fromStdString(options.path);
    m_loadProgress = 0;
    emit loadProgressChanged();
    setLoading(true);
    emit requestLoad(options);
}

void InferenceController::unloadModel() {
    if (m_loading || m_generating) return;
    emit requestUnload();
}

quint64 InferenceController::generate(const QList<ChatTurn>& messages,
                                      const EngineSampling& sampling) {
    if (m_loading || m_generating || !m_modelLoaded) return 0;
    m_currentRequest = m_nextRequest++;
    setGenerating(true);
    emit requestGenerate(m_currentRequest, messages, sampling);
    return m_currentRequest;
}

void InferenceController::countTokens(const QList<ChatTurn>& messages,
                                      const EngineSampling& sampling) {
    if (m_counting) {
        m_nextCount.emplace(messages, sampling);
        return;
    }
    m_counting = true;
    emit requestCount(messages, sampling);
}

void InferenceController::stop() {
    if (!m_worker) return;
    if (m_generating)
        m_worker->requestCancel(m_currentRequest);
    else if (m_loading)
        m_worker->requestCancel();
}

void InferenceController::onModelLoaded(const LoadedModel& model) {
    m_modelLoaded = true;
    // The worker names the file it loaded (the previous one again after a failed switch).
    m_modelPath = model.path.isEmpty() ? m_pendingPath : model.path;
    m_modelName = model.modelName;
    if (m_modelName.isEmpty()) m_modelName = QFileInfo(m_modelPath).completeBaseName();
    m_backend = model.backend;
    m_device = model.device;
    m_fallbackReason = model.fallbackReason;
    m_contextLength = model.contextLength;
    m_thinkingSwitch = model.thinkingSwitch;
    setLoading(false);
    emit modelChanged();
}

void InferenceController::onLoadFailed(const QString& message, const QString& detail) {
    // The worker keeps (or reloads) the previous model and says so with modelLoaded, or with
    // modelUnloaded when it could not.
    setLoading(false);
    emit loadFailed(message, detail);
}

void InferenceController::onTextReady(quint64 requestId, const QString& text) {
    if (requestId == m_currentRequest) emit textReady(text);
}

void InferenceController::onFinished(quint64 requestId, const QString& text,
                                     const GenerationStats& stats) {
    if (requestId != m_currentRequest) return;
    m_lastStats =
        tr("%1 tokens, %2 tok/s").arg(stats.generatedTokens).arg(stats.tokensPerSecond, 0, 'f', 1);
    emit lastStatsChanged();
    emit generationFinished(text, stats);
    setGenerating(false);
}

void InferenceController::onFailed(quint64 requestId, const QString& message,
                                   const QString& partial, const QString& code) {
    if (requestId != m_currentRequest) return;
    emit generationFailed(message, partial, code);
    setGenerating(false);
}

void InferenceController::setLoading(bool loading) {
    if (m_loading == loading) return;
    m_loading = loading;
    emit loadingChanged();
}

void InferenceController::setGenerating(bool generating) {
    if (m_generating == generating) return;
    m_generating = generating;
    emit generatingChanged();
}
