#include "inferenceworker.h"

#include <QElapsedTimer>
#include <string>

InferenceWorker::InferenceWorker(std::unique_ptr<ChatEngine> engine, QObject* parent)
    : QObject(parent), m_engine(std::move(engine)) {}

InferenceWorker::~InferenceWorker() = default;

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
    auto result = m_engine->load(options, progress, &m_cancel);
    if (!result.ok()) {
        emit loadFailed(QString::fromStdString(result.error().message));
        return;
    }
    const auto& r = result.value();
    emit loadProgress(1.0);
    emit modelLoaded({{"modelName", QString::fromStdString(r.modelName)},
                      {"backend", QString::fromStdString(r.backend)},
                      {"device", QString::fromStdString(r.device)},
                      {"fallbackReason", QString::fromStdString(r.fallbackReason)},
                      {"contextLength", r.contextLength},
                      {"threads", r.threads}});
}

void InferenceWorker::unloadModel() {
    m_engine->unload();
    emit modelUnloaded();
}

void InferenceWorker::generate(quint64 requestId, const QList<ChatTurn>& messages,
                               const EngineSampling& sampling) {
    m_cancel.store(false);
    std::vector<EngineMessage> turns;
    for (const auto& m : messages) turns.push_back({m.role.toStdString(), m.content.toStdString()});

    // Tokens arrive far faster than a UI can repaint: accumulate, and flush at most every 33 ms
    // (checked as tokens arrive, since this thread's event loop is busy) and at the end.
    std::string full, pending;
    QElapsedTimer sinceFlush;
    sinceFlush.start();
    auto flush = [&] {
        if (pending.empty()) return;
        emit textReady(requestId, QString::fromStdString(pending));
        pending.clear();
        sinceFlush.restart();
    };
    auto onText = [&](std::string_view text) {
        full += text;
        pending += text;
        if (sinceFlush.elapsed() >= kFlushIntervalMs) flush();
        return !m_cancel.load();
    };
    auto result = m_engine->generate(turns, sampling, &m_cancel, onText);
    flush();
    if (!result.ok()) {
        emit generationFailed(requestId, QString::fromStdString(result.error().message),
                              QString::fromStdString(full));
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
                             {"templateFallback", s.templateFallback}});
}
