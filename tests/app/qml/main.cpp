// The Ember module's QML components (shell, settings, models, download, inference, monitor,
// server) as the app builds them (the compiled module with its C++ types), against the real C++
// objects their typed properties take: Settings, an InferenceController and a ChatController over
// a fake engine the test steps through, a PerfMonitor fed through its slots, an
// InstalledModelModel, and an ApiServerStatus whose state the test sets. `fixture` makes them.
#include <QDir>
#include <QQmlContext>
#include <QQmlEngine>
#include <QSettings>
#include <QTemporaryDir>
#include <QtQml/QQmlExtensionPlugin>
#include <QtQuickTest>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>

#include "apiserverstatus.h"
#include "chatcontroller.h"
#include "conversationstore.h"
#include "fakechatengine.h"
#include "inferencecontroller.h"
#include "inferencevalues.h"
#include "installedmodelmodel.h"
#include "perfmonitor.h"
#include "settings.h"

Q_IMPORT_QML_PLUGIN(EmberPlugin)

// What the test lets the engine do next: a load reports the progress step it was given last and
// ends at step 1 (or when cancelled); a generation gives one piece, then runs until cancelled.
struct EngineGate {
    std::mutex mutex;
    std::condition_variable changed;
    std::deque<double> steps;
    bool closing = false;
    std::atomic<bool> generating{false};  // a generation is under way: a stop now ends it

    void push(double step) {
        {
            std::lock_guard lock(mutex);
            steps.push_back(step);
        }
        changed.notify_all();
    }
    void close() {
        {
            std::lock_guard lock(mutex);
            closing = true;
        }
        changed.notify_all();
    }
    // Waits a little for the next step: the step, -1 if none came, nullopt when cancelled or
    // closing (the controller sets the cancel flag without notifying).
    std::optional<double> poll(const std::atomic<bool>* cancel) {
        std::unique_lock lock(mutex);
        if (steps.empty()) changed.wait_for(lock, std::chrono::milliseconds(5));
        if (closing || (cancel && cancel->load())) return std::nullopt;
        if (steps.empty()) return -1.0;
        const double s = steps.front();
        steps.pop_front();
        return s;
    }
};

class GatedEngine : public FakeChatEngine {
public:
    explicit GatedEngine(std::shared_ptr<EngineGate> gate)
        : FakeChatEngine(FakeScript{}), m_gate(std::move(gate)) {}

    ember::Result<EngineLoadResult> load(const EngineLoadOptions& options,
                                         const EngineProgressCallback& progress,
                                         const std::atomic<bool>* cancel) override {
        m_loaded = false;
        // The last step is reported again and again, as an engine reading a file does (the
        // worker passes on a report only every so often).
        double current = -1;
        for (;;) {
            const auto step = m_gate->poll(cancel);
            if (!step) return ember::make_error("model.cancelled", "loading cancelled");
            if (*step >= 1) break;
            if (*step >= 0) current = *step;
            if (current >= 0 && progress && !progress(float(current)))
                return ember::make_error("model.cancelled", "loading cancelled");
        }
        m_loaded = true;
        EngineLoadResult r;
        r.modelName = "fake model";
        r.backend = "cpu";
        r.device = "Fake CPU";
        r.contextLength = options.contextLength;
        return r;
    }
    bool isLoaded() const override { return m_loaded; }
    void unload() override { m_loaded = false; }
    ember::Result<EngineStats> generate(const std::vector<EngineMessage>&, const EngineSampling&,
                                        const std::atomic<bool>* cancel,
                                        const EngineTextCallback& onText,
                                        const EnginePromptCallback&) override {
        EngineStats stats;
        onText("…");
        stats.generatedTokens = 1;
        m_gate->generating = true;
        while (m_gate->poll(cancel)) {
        }
        m_gate->generating = false;
        stats.stopReason = "cancelled";
        return stats;
    }

private:
    std::shared_ptr<EngineGate> m_gate;
    std::atomic<bool> m_loaded{false};
};

// The API server's state as the test sets it.
class FakeApiServer : public ApiServerStatus {
    Q_OBJECT
public:
    using ApiServerStatus::ApiServerStatus;
    bool running() const override { return m_running; }
    QString address() const override { return m_address; }
    int port() const override { return 0; }
    QString error() const override { return m_error; }
    int requestsServed() const override { return m_served; }
    int requestsWaiting() const override { return m_waiting; }
    QString modelId() const override { return m_modelId; }

    Q_INVOKABLE void setRunning(bool running, const QString& address) {
        m_running = running;
        m_address = address;
        emit runningChanged();
    }
    Q_INVOKABLE void setError(const QString& error) {
        m_error = error;
        emit errorChanged();
    }
    Q_INVOKABLE void setRequests(int served, int waiting) {
        m_served = served;
        m_waiting = waiting;
        emit requestsServedChanged();
    }
    Q_INVOKABLE void setModelId(const QString& id) {
        m_modelId = id;
        emit modelIdChanged();
    }

private:
    bool m_running = false;
    QString m_address, m_error, m_modelId;
    int m_served = 0, m_waiting = 0;
};

class QmlFixture : public QObject {
    Q_OBJECT
public:
    explicit QmlFixture(QObject* parent) : QObject(parent) {}
    ~QmlFixture() override {
        m_gate->close();  // the engines return, so that the worker threads can end
        // The chats go before their stores (members, deleted before the children). A copy of
        // the list: deleting a child takes it out of children().
        for (QObject* child : QObjectList(children()))
            if (qobject_cast<ChatController*>(child)) delete child;
    }

    // The app's settings (in the test's own config directory).
    Q_INVOKABLE Settings* settings() { return keep(new Settings(this)); }
    // A controller over the gated engine; loadModel() starts a load that loadStep() steps.
    Q_INVOKABLE InferenceController* inference() {
        auto gate = m_gate;
        return keep(
            new InferenceController([gate] { return std::make_unique<GatedEngine>(gate); }, this));
    }
    Q_INVOKABLE void loadModel(InferenceController* inference, const QString& path) {
        EngineLoadOptions options;
        options.path = path.toStdString();
        inference->loadModel(options);
    }
    // The engine's next progress report (>= 1: the load succeeds; during a generation: it goes on).
    Q_INVOKABLE void loadStep(double progress) { m_gate->push(progress); }
    // The engine is generating (a stop requested before it started would be forgotten).
    Q_INVOKABLE bool engineGenerating() const { return m_gate->generating; }
    // A chat over its own conversation store.
    Q_INVOKABLE ChatController* chat(InferenceController* inference, Settings* settings) {
        auto* store = new ConversationStore;
        m_stores.emplace_back(store);
        store->open(m_dir.filePath(QStringLiteral("chat-%1.sqlite").arg(m_stores.size())));
        return keep(new ChatController(store, inference, settings, this));
    }
    // A monitor fed by the test (no controller) on the test's clock.
    Q_INVOKABLE PerfMonitor* perf() {
        auto* p = new PerfMonitor(nullptr, this);
        p->setClock([this] { return m_nowMs; });
        return keep(p);
    }
    Q_INVOKABLE void setTime(double ms) { m_nowMs = ms; }
    // The end of a response, with the worker's statistics.
    Q_INVOKABLE void finish(PerfMonitor* perf, int generated, double tokensPerSecond, double ttftMs,
                            int promptTokens, int evaluatedTokens, double promptMs,
                            int contextUsed) {
        GenerationStats s;
        s.generatedTokens = generated;
        s.tokensPerSecond = tokensPerSecond;
        s.timeToFirstTokenMs = ttftMs;
        s.promptTokens = promptTokens;
        s.evaluatedTokens = evaluatedTokens;
        s.promptMs = promptMs;
        s.contextUsed = contextUsed;
        perf->onGenerationFinished(s);
    }
    Q_INVOKABLE InstalledModelModel* installed() { return keep(new InstalledModelModel(this)); }
    // A file of the models folder (need not exist) with what its header said.
    Q_INVOKABLE void addInstalled(InstalledModelModel* model, const QString& path,
                                  const QString& problem = {}, const QString& error = {},
                                  const QString& errorSummary = {}) {
        model->setFiles(model->paths() << path);
        ModelDetails details;
        details.problem = problem;
        details.error = error;
        details.errorSummary = errorSummary;
        model->setInspected(path, details, FitInfo{});
    }
    Q_INVOKABLE void removeInstalled(InstalledModelModel* model, const QString& path) {
        QStringList paths = model->paths();
        paths.removeAll(path);
        model->setFiles(paths);
    }
    Q_INVOKABLE ApiServerStatus* apiServer() { return keep(new FakeApiServer(this)); }

private:
    // The test's objects stay the fixture's (the engine would own what a call returns).
    template <class T>
    static T* keep(T* object) {
        QQmlEngine::setObjectOwnership(object, QQmlEngine::CppOwnership);
        return object;
    }

    QTemporaryDir m_dir;
    std::shared_ptr<EngineGate> m_gate = std::make_shared<EngineGate>();
    std::vector<std::unique_ptr<ConversationStore>> m_stores;
    double m_nowMs = 0;
};

class Setup : public QObject {
    Q_OBJECT
public slots:
    void applicationAvailable() {
        // The settings of this run only.
        QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, m_config.path());
        QCoreApplication::setApplicationName(QStringLiteral("ember-qml-test"));
    }
    void qmlEngineAvailable(QQmlEngine* engine) {
        engine->addImportPath(QStringLiteral("qrc:/"));  // the compiled Ember module
        engine->rootContext()->setContextProperty("fixture", new QmlFixture(engine));
    }

private:
    QTemporaryDir m_config;
};

QUICK_TEST_MAIN_WITH_SETUP(app_qml, Setup)

#include "main.moc"
