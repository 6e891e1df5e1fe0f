#include "inferenceworker.h"

#include <QElapsedTimer>
#include <string>
#include <utility>

#include "perfmetrics.h"
#include "textbatcher.h"

InferenceWorker::InferenceWorker(std::unique_ptr<ChatEngine> engine, QObject* parent)
    : QObject(parent), m_engine(std::move(engine)) {}

InferenceWorker::~InferenceWorker() {
    m_probe->detach();
}

void InferenceWorker::listDevices() {
    QStringList names;
    for (const auto& name : m_engine->listDevices()) names << QString::fromStdString(name);
    emit devicesListed(names);
}

namespace {
LoadedModel loadInfo(const EngineLoadResult& r, const std::string& path) {
    LoadedModel m;
    m.modelName = QString::fromStdString(r.modelName);
    m.path = QString::fromStdString(path);
    m.backend = QString::fromStdString(r.backend);
    m.device = QString::fromStdString(r.device);
    m.fallbackReason = QString::fromStdString(r.fallbackReason);
    m.contextLength = r.contextLength;
    m.threads = r.threads;
    m.thinkingSwitch = r.thinkingSwitch;
    return m;
}
}  // namespace

void InferenceWorker::loadModel(const EngineLoadOptions& options) {
    m_cancel.store(false);
    // A file the engine cannot run is refused before the loaded model is dropped.
    if (const EngineFileProblem p = m_engine->check(options.path); !p.summary.empty()) {
        emit loadFailed(QString::fromStdString(p.summary), QString::fromStdString(p.detail));
        return;
    }
    QElapsedTimer sinceReport;
    sinceReport.start();
    auto progress = [&](float p) {
        if (sinceReport.elapsed() >= kFlushIntervalMs || p >= 1.0f) {
            emit loadProgress(p);
            sinceReport.restart();
        }
        return !m_cancel.load();
    };
    // The engine drops the previous model first: no reading may run meanwhile.
    m_probe->detach();
    auto result = m_engine->load(options, progress, &m_cancel);
    if (!result.ok()) {
        const QString detail = QString::fromStdString(result.error().message);
        QString message =
            result.error().code == "model.cancelled" ? tr("the load was cancelled") : detail;
        // The previous model comes back: a failed switch leaves the user with what worked.
        const std::optional<EngineLoadOptions> previous = std::exchange(m_loaded, std::nullopt);
        if (previous) {
            auto again = m_engine->load(*previous, {}, nullptr);
            if (again.ok()) {
                m_loaded = previous;
                m_probe->attach(m_engine.get());
                emit modelLoaded(loadInfo(again.value(), previous->path));
                message += tr("; the previous model is loaded again");
            } else {
                emit modelUnloaded();
            }
        }
        emit loadFailed(message, detail);
        return;
    }
    m_loaded = options;
    m_probe->attach(m_engine.get());
    emit loadProgress(1.0);
    emit modelLoaded(loadInfo(result.value(), options.path));
}

void InferenceWorker::unloadModel() {
    m_loaded.reset();
    m_probe->detach();
    m_engine->unload();
    emit modelUnloaded();
}

void InferenceWorker::countTokens(const QList<ChatTurn>& messages, const EngineSampling& sampling) {
    if (!m_engine->isLoaded()) return emit tokensCounted(-1);
    std::vector<EngineMessage> turns;
    for (const auto& m : messages) turns.push_back({m.role.toStdString(), m.content.toStdString()});
    const auto n = m_engine->countTokens(turns, sampling);
    emit tokensCounted(n.ok() ? n.value() : -1);
}

void InferenceWorker::generate(quint64 requestId, const QList<ChatTurn>& messages,
                               const EngineSampling& sampling) {
    m_cancel.store(requestId <= m_cancelledUpTo.load());
    std::vector<EngineMessage> turns;
    for (const auto& m : messages) turns.push_back({m.role.toStdString(), m.content.toStdString()});

    // Tokens arrive far faster than a UI can repaint: batch them, at most one hand-over every
    // 33 ms (checked as tokens arrive, since this thread's event loop is busy) and at the end.
    std::string full;
    QList<double> times;
    QElapsedTimer clock;
    clock.start();
    TextBatcher batcher(kFlushIntervalMs, [&clock] { return clock.elapsed(); });
    auto flush = [&] {
        if (!times.isEmpty()) emit tokensTimed(requestId, times);
        times.clear();
        const std::string text = batcher.take();
        if (!text.empty()) emit textReady(requestId, QString::fromStdString(text));
    };
    auto onText = [&](std::string_view text) {
        times.append(PerfMetrics::nowMs());
        full += text;
        if (batcher.add(text)) flush();
        return !m_cancel.load();
    };
    auto onPrompt = [&](int total, int evaluated) {
        emit promptReady(requestId, total, evaluated);
    };
    auto result = m_engine->generate(turns, sampling, &m_cancel, onText, onPrompt);
    flush();
    if (!result.ok()) {
        QString message = QString::fromStdString(result.error().message);
        // A lost GPU keeps failing: drop the model (and with it the device) so that the next
        // load starts on a fresh device, and tell the UI that nothing is loaded.
        const bool deviceLost = result.error().code == "vulkan.device_lost";
        if (deviceLost) {
            m_probe->detach();
            m_engine->unload();
            m_loaded.reset();
            message += "; the model was unloaded, load it again to continue";
        }
        emit generationFailed(requestId, message, QString::fromStdString(full),
                              QString::fromStdString(result.error().code));
        if (deviceLost) emit modelUnloaded();
        return;
    }
    const auto& s = result.value();
    // A stop requested by the user is reported as such whichever way the engine noticed it.
    GenerationStats stats;
    stats.promptTokens = s.promptTokens;
    stats.evaluatedTokens = s.evaluatedTokens;
    stats.generatedTokens = s.generatedTokens;
    stats.droppedMessages = s.droppedMessages;
    stats.systemPromptDropped = s.systemPromptDropped;
    stats.tokensPerSecond = s.tokensPerSecond;
    stats.timeToFirstTokenMs = s.timeToFirstTokenMs;
    stats.promptMs = s.promptMs;
    stats.contextUsed = s.contextUsed;
    stats.templateFallback = s.templateFallback;
    stats.stopReason = StopReason::fromName(s.stopReason);
    if (m_cancel.load() && stats.stopReason == StopReason::Callback)
        stats.stopReason = StopReason::Cancelled;
    emit generationFinished(requestId, QString::fromStdString(full), stats);
}
