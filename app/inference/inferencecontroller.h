// The UI's handle on the engine: owns the worker thread and mirrors the worker's state in
// properties. All calls into the worker are queued; only stop() touches it directly (an atomic).
#pragma once

#include <QtQml/qqmlregistration.h>
#include <QObject>
#include <QPointer>
#include <QThread>
#include <QUrl>
#include <QVariantList>
#include <functional>
#include <memory>
#include <optional>
#include <utility>

#include "inferenceworker.h"

class InferenceController : public QObject {
    Q_OBJECT
    QML_ELEMENT
    QML_UNCREATABLE("made by main.cpp")
    Q_PROPERTY(bool loading READ loading NOTIFY loadingChanged)
    Q_PROPERTY(double loadProgress READ loadProgress NOTIFY loadProgressChanged)
    Q_PROPERTY(bool modelLoaded READ modelLoaded NOTIFY modelChanged)
    Q_PROPERTY(QString modelPath READ modelPath NOTIFY modelChanged)
    Q_PROPERTY(QString modelName READ modelName NOTIFY modelChanged)
    Q_PROPERTY(QString backend READ backend NOTIFY modelChanged)
    Q_PROPERTY(QString device READ device NOTIFY modelChanged)
    Q_PROPERTY(QString fallbackReason READ fallbackReason NOTIFY modelChanged)
    Q_PROPERTY(int contextLength READ contextLength NOTIFY modelChanged)
    // The model's chat template takes enable_thinking: reasoning can be switched off.
    Q_PROPERTY(bool thinkingSwitch READ thinkingSwitch NOTIFY modelChanged)
    Q_PROPERTY(bool generating READ generating NOTIFY generatingChanged)
    Q_PROPERTY(QString lastStats READ lastStats NOTIFY lastStatsChanged)
    Q_PROPERTY(QStringList devices READ devices NOTIFY devicesChanged)
    // The models folder (its files are listed once, by ModelLibrary.installed).
    Q_PROPERTY(QString modelsDirectory READ modelsDirectory CONSTANT)
    // The same folder as a URL, for file dialogs.
    Q_PROPERTY(QUrl modelsFolderUrl READ modelsFolderUrl CONSTANT)

public:
    using EngineFactory = std::function<std::unique_ptr<ChatEngine>()>;
    explicit InferenceController(const EngineFactory& factory, QObject* parent = nullptr);
    ~InferenceController() override;

    bool loading() const { return m_loading; }
    double loadProgress() const { return m_loadProgress; }
    bool modelLoaded() const { return m_modelLoaded; }
    QString modelPath() const { return m_modelPath; }
    QString modelName() const { return m_modelName; }
    QString backend() const { return m_backend; }
    QString device() const { return m_device; }
    QString fallbackReason() const { return m_fallbackReason; }
    int contextLength() const { return m_contextLength; }
    bool thinkingSwitch() const { return m_thinkingSwitch; }
    bool generating() const { return m_generating; }
    QString lastStats() const { return m_lastStats; }
    QStringList devices() const { return m_devices; }
    QString modelsDirectory() const;
    QUrl modelsFolderUrl() const { return QUrl::fromLocalFile(modelsDirectory()); }
    // For the memory monitor: reads the loaded model's memory from any thread.
    std::shared_ptr<MemoryProbe> memoryProbe() const { return m_probe; }
    // For the API server, which queues its generations into the worker (never calls it directly).
    InferenceWorker* worker() const { return m_worker; }

    void loadModel(const EngineLoadOptions& options);
    // Returns the request id, or 0 if the request was refused (busy or no model).
    quint64 generate(const QList<ChatTurn>& messages, const EngineSampling& sampling);
    // Counts the conversation's tokens on the worker (behind a running generation); the count
    // comes with tokensCounted. While one is counted, only the newest request waits.
    void countTokens(const QList<ChatTurn>& messages, const EngineSampling& sampling);
    Q_INVOKABLE void stop();
    Q_INVOKABLE void unloadModel();

signals:
    void loadingChanged();
    void loadProgressChanged();
    void modelChanged();
    void generatingChanged();
    void lastStatsChanged();
    void devicesChanged();
    // message: what is wrong, in plain words; detail: the engine's technical message. The
    // model loaded before stays loaded (modelLoaded/modelChanged tell otherwise).
    void loadFailed(const QString& message, const QString& detail);
    void textReady(const QString& text);
    // The current response's prompt: its whole length and how many tokens are evaluated.
    void promptEvaluating(int promptTokens, int evaluatedTokens);
    // Times (PerfMetrics::nowMs()) of the tokens of the current response since the last batch.
    void tokensGenerated(const QList<double>& timesMs);
    void generationFinished(const QString& text, const GenerationStats& stats);
    // The newest countTokens request's count (-1: no model).
    void tokensCounted(int tokens);
    // code: the engine's error code ("app.prompt_too_long": the prompt was never evaluated).
    void generationFailed(const QString& message, const QString& partialText, const QString& code);

    // Queued into the worker.
    void requestLoad(const EngineLoadOptions& options);
    void requestUnload();
    void requestGenerate(quint64 requestId, const QList<ChatTurn>& messages,
                         const EngineSampling& sampling);
    void requestDevices();
    void requestCount(const QList<ChatTurn>& messages, const EngineSampling& sampling);

private:
    void onModelLoaded(const LoadedModel& model);
    void onLoadFailed(const QString& message, const QString& detail);
    void onTextReady(quint64 requestId, const QString& text);
    void onFinished(quint64 requestId, const QString& text, const GenerationStats& stats);
    void onFailed(quint64 requestId, const QString& message, const QString& partial,
                  const QString& code);
    void setLoading(bool loading);
    void setGenerating(bool generating);

    QThread m_thread;
    QPointer<InferenceWorker> m_worker;
    std::shared_ptr<MemoryProbe> m_probe;
    bool m_loading = false;
    double m_loadProgress = 0;
    bool m_modelLoaded = false;
    QString m_modelPath, m_pendingPath, m_modelName, m_backend, m_device, m_fallbackReason;
    int m_contextLength = 0;
    bool m_thinkingSwitch = false;
    bool m_generating = false;
    quint64 m_nextRequest = 1;
    quint64 m_currentRequest = 0;
    QString m_lastStats;
    bool m_counting = false;
    std::optional<std::pair<QList<ChatTurn>, EngineSampling>> m_nextCount;
    QStringList m_devices;
};
