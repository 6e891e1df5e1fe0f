// Runs the engine on its own thread. Its slots are only ever invoked through queued
// connections; results come back as signals. Generation blocks this thread's event loop, so
// cancellation goes through an atomic flag that the UI thread sets directly.
#pragma once

#include <QList>
#include <QObject>
#include <QString>
#include <QStringList>
#include <QVariantMap>
#include <atomic>
#include <memory>
#include <optional>

#include "chatengine.h"
#include "inferencevalues.h"
#include "memoryprobe.h"

struct ChatTurn {
    QString role;
    QString content;
};
Q_DECLARE_METATYPE(ChatTurn)
Q_DECLARE_METATYPE(EngineLoadOptions)
Q_DECLARE_METATYPE(EngineSampling)

class InferenceWorker : public QObject {
    Q_OBJECT
public:
    // UI updates are batched to at most one per this interval (30 per second).
    static constexpr int kFlushIntervalMs = 33;

    explicit InferenceWorker(std::unique_ptr<ChatEngine> engine, QObject* parent = nullptr);
    ~InferenceWorker() override;

    // Thread-safe: stops the running load or generation within one token.
    void requestCancel() { m_cancel.store(true); }
    // Thread-safe: also stops generation `requestId` when it has not started yet (a Stop pressed
    // while the request still waits behind a token count, say), and any earlier one.
    void requestCancel(quint64 requestId) {
        quint64 seen = m_cancelledUpTo.load();
        while (seen < requestId && !m_cancelledUpTo.compare_exchange_weak(seen, requestId)) {
        }
        m_cancel.store(true);
    }
    // Reads the loaded model's memory from another thread (the memory monitor's).
    std::shared_ptr<MemoryProbe> memoryProbe() const { return m_probe; }
    // On the worker's thread only: tasks that other parts of the app (the API server) queue
    // with QMetaObject::invokeMethod behind the worker's pending requests use the engine here.
    ChatEngine& engine() { return *m_engine; }

public slots:
    void listDevices();
    void loadModel(const EngineLoadOptions& options);
    void unloadModel();
    void generate(quint64 requestId, const QList<ChatTurn>& messages,
                  const EngineSampling& sampling);
    // The conversation's length in tokens (ChatEngine::countTokens), with tokensCounted.
    void countTokens(const QList<ChatTurn>& messages, const EngineSampling& sampling);

signals:
    void devicesListed(const QStringList& names);
    void loadProgress(double progress);
    void modelLoaded(const LoadedModel& model);
    // message: what is wrong in plain words; detail: the engine's technical message. Whatever
    // was loaded before stays loaded (or is loaded again: modelLoaded comes first then).
    void loadFailed(const QString& message, const QString& detail);
    void modelUnloaded();
    // The prompt is about to be evaluated: its whole length and how much of it is evaluated.
    void promptReady(quint64 requestId, int promptTokens, int evaluatedTokens);
    // A batch of newly generated text.
    void textReady(quint64 requestId, const QString& text);
    // When the tokens since the last batch were generated (PerfMetrics::nowMs() clock); sent
    // with each textReady and for tokens that produced no text yet.
    void tokensTimed(quint64 requestId, const QList<double>& timesMs);
    // tokens: -1 when they cannot be counted (no model).
    void tokensCounted(int tokens);
    void generationFinished(quint64 requestId, const QString& text, const GenerationStats& stats);
    // code: the engine's error code ("app.prompt_too_long": nothing was evaluated).
    void generationFailed(quint64 requestId, const QString& message, const QString& partialText,
                          const QString& code);

private:
    std::unique_ptr<ChatEngine> m_engine;
    std::shared_ptr<MemoryProbe> m_probe = std::make_shared<MemoryProbe>();
    std::atomic<bool> m_cancel{false};
    std::atomic<quint64> m_cancelledUpTo{0};    // generations up to this id were stopped
    std::optional<EngineLoadOptions> m_loaded;  // what the engine holds now
};
