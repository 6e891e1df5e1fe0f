#include "inferenceworker.h"

#include <QElapsedTimer>
#include <string>

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

void InferenceWorker::loadModel(const EngineLoadOptions& options) {
    m_cancel.store(false);
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
        emit loadFailed(QString::fromStdString(result.error().message));
        return;
    }
    const auto& r = result.value();
    m_probe->attach(m_engine.get());
    emit loadProgress(1.0);
    emit modelLoaded({{"modelName", QString::fromStdString(r.modelName)},
                      {"backend", QString::fromStdString(r.backend)},
                      {"device", QString::fromStdString(r.device)},
                      {"fallbackReason", QString::fromStdString(r.fallbackReason)},
                      {"contextLength", r.contextLength},
                      {"threads", r.threads}});
}

void InferenceWorker::unloadModel() {
    m_probe->detach();
    m_engine->unload();
    emit modelUnloaded();
}

void InferenceWorker::generate(quint64 requestId, const QList<ChatTurn>& messages,
                               const EngineSampling& sampling) {
    m_cancel.store(false);
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
    auto result = m_engine->generate(turns, sampling, &m_cancel, onText);
    flush();
    if (!result.ok()) {
        QString message = QString::fromStdString(result.error().message);
        // A lost GPU keeps failing: drop the model (and with it the device) so that the next
        // load starts on a fresh device, and tell the UI that nothing is loaded.
        const bool deviceLost = result.error().code == "vulkan.device_lost";
        if (deviceLost) {
            m_probe->detach();
            m_engine->unload();
            message += "; the model was unloaded, load it again to continue";
        }
        emit generationFailed(requestId, message, QString::fromStdString(full));
        if (deviceLost) emit modelUnloaded();
        return;
    }
    const auto& s = result.value();
    // A stop requested by the user is reported as such whichever way the engine noticed it.
    QString stop = QString::fromStdString(s.stopReason);
    if (m_cancel.load() && stop == "callback") stop = "cancelled";
    emit generationFinished(requestId, QString::fromStdString(full),
                            {{"promptTokens", s.promptTokens},
                             {"evaluatedTokens", s.evaluatedTokens},
                             {"generatedTokens", s.generatedTokens},
                             {"droppedMessages", s.droppedMessages},
                             {"tokensPerSecond", s.tokensPerSecond},
                             {"timeToFirstTokenMs", s.timeToFirstTokenMs},
                             {"stopReason", stop},
                             {"templateFallback", s.templateFallback},
                             {"promptMs", s.promptMs},
                             {"contextUsed", s.contextUsed}});
}
