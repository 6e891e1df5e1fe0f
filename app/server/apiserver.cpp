#include "apiserver.h"

#include <QCoreApplication>
#include <QFileInfo>
#include <QMetaObject>
#include <QTime>
#include <condition_variable>
#include <cstdio>
#include <mutex>

#include "ember/ember.h"
#include "http_server.h"
#include "inferencecontroller.h"
#include "inferenceworker.h"
#include "service.h"
#include "settings.h"

namespace {

// The server's log (queued, started, finished, cancelled...) goes to stderr as ember-cli's does.
void logLine(const std::string& line) {
    static std::mutex mutex;
    const QByteArray stamp = QTime::currentTime().toString("HH:mm:ss").toUtf8();
    std::lock_guard<std::mutex> lock(mutex);
    std::fprintf(stderr, "%s api server: %s\n", stamp.constData(), line.c_str());
    std::fflush(stderr);
}

// Runs a request's generation on the worker's thread, queued behind what the app asked of it
// before (so the engine never runs two at once), and waits for it. A request cancelled before
// the worker reached it is dropped there without running.
ember::server::SessionRunner workerRunner(InferenceWorker* worker, const ember::Model* model) {
    return [worker, model](const std::function<void(ember::Session&)>& fn,
                           const std::atomic<bool>* cancel) {
        struct State {
            std::mutex mutex;
            std::condition_variable cv;
            bool started = false, done = false, ran = false, abandoned = false;
        };
        auto st = std::make_shared<State>();
        // `fn` lives on the waiting thread, which waits below for as long as it may be used.
        const bool posted = QMetaObject::invokeMethod(
            worker,
            [worker, model, st, &fn] {
                {
                    std::lock_guard<std::mutex> lock(st->mutex);
                    if (st->abandoned) return;
                    st->started = true;
                }
                const bool ran = worker->engine().withSession(model, fn);
                {
                    std::lock_guard<std::mutex> lock(st->mutex);
                    st->done = true;
                    st->ran = ran;
                }
                st->cv.notify_all();
            },
            Qt::QueuedConnection);
        if (!posted) return false;
        std::unique_lock<std::mutex> lock(st->mutex);
        for (;;) {
            if (st->done) return st->ran;
            if (cancel && cancel->load() && !st->started) {
                st->abandoned = true;
                return false;
            }
            st->cv.wait_for(lock, std::chrono::milliseconds(20));
        }
    };
}

// What went wrong when listening, in plain words.
QString listenError(const ember::Error& e, const QString& host, int port) {
    if (e.code == "server.address_in_use")
        return ApiServer::tr(
                   "Port %1 is already in use by another program. Choose another port, "
                   "or stop the program that uses it.")
            .arg(port);
    if (e.code == "server.permission_denied")
        return ApiServer::tr("Port %1 needs administrator rights. Choose a port above 1023.")
            .arg(port);
    return ApiServer::tr("The server could not listen on %1:%2 (%3).")
        .arg(host)
        .arg(port)
        .arg(QString::fromStdString(e.message));
}

}  // namespace

ApiServer::ApiServer(Settings* settings, InferenceController* inference, QObject* parent)
    : ApiServerStatus(parent), m_settings(settings), m_inference(inference) {
    for (auto signal : {&Settings::apiServerEnabledChanged, &Settings::apiServerPortChanged,
                        &Settings::apiServerKeyChanged, &Settings::apiServerAllowNetworkChanged})
        connect(settings, signal, this, &ApiServer::apply);
    connect(inference, &InferenceController::modelChanged, this, &ApiServer::refreshModel);
    // A model about to be replaced is let go first, so that two are never in memory at once.
    connect(inference, &InferenceController::loadingChanged, this, [this] {
        if (m_inference->loading()) serveModel(nullptr);
    });
    m_poll.setInterval(250);
    connect(&m_poll, &QTimer::timeout, this, &ApiServer::pollStats);
    apply();
}

ApiServer::~ApiServer() {
    stop();
}

QString ApiServer::address() const {
    if (!running()) return {};
    const QString host = m_host == "0.0.0.0" ? QStringLiteral("127.0.0.1") : m_host;
    return QStringLiteral("http://%1:%2/v1").arg(host).arg(m_port);
}

void ApiServer::apply() {
    const bool want = m_settings->apiServerEnabled();
    const QString host = m_settings->apiServerAllowNetwork() ? "0.0.0.0" : "127.0.0.1";
    if (running() && (!want || host != m_host || m_settings->apiServerPort() != m_requestedPort ||
                      m_settings->apiServerKey() != m_key))
        stop();
    if (!want) {
        setError({});
        return;
    }
    if (!running()) start();
}

void ApiServer::start() {
    ember::server::HttpConfig config;
    m_host = m_settings->apiServerAllowNetwork() ? "0.0.0.0" : "127.0.0.1";
    m_requestedPort = m_settings->apiServerPort();
    m_key = m_settings->apiServerKey();
    config.host = m_host.toStdString();
    config.port = m_requestedPort;
    config.api_key = m_key.toStdString();
    auto service = std::make_unique<ember::server::Service>(logLine);
    auto http = std::make_unique<ember::server::HttpServer>(*service, config, logLine);
    auto bound = http->bind();
    if (!bound) {
        logLine("cannot start: " + bound.error().message);
        setError(listenError(bound.error(), m_host, m_requestedPort));
        return;
    }
    m_port = *bound;
    m_service = std::move(service);
    m_http = std::move(http);
    m_listener = std::thread([http = m_http.get()] { http->run(); });
    logLine("listening on http://" + config.host + ":" + std::to_string(m_port) +
            (m_key.isEmpty() ? "" : " (API key required)"));
    setError({});
    emit runningChanged();
    m_poll.start();
    refreshModel();
}

void ApiServer::stop() {
    if (!m_http) return;
    m_poll.stop();
    m_http->stop();  // no new connections; those open end with the requests they carry
    m_service->cancel_all("the server is stopping");
    m_listener.join();
    serveModel(nullptr);
    m_http.reset();
    m_service.reset();
    m_port = 0;
    logLine("stopped");
    emit runningChanged();
}

void ApiServer::refreshModel() {
    if (!m_service) return;
    InferenceWorker* worker = m_inference->worker();
    if (!worker) return;
    // The worker holds the model; it hands it over on its thread, and it comes back on this one
    // (through the application object, which outlives this server).
    QPointer<ApiServer> self(this);
    QMetaObject::invokeMethod(
        worker,
        [worker, self] {
            std::shared_ptr<ember::Model> model = worker->engine().sharedModel();
            QMetaObject::invokeMethod(
                QCoreApplication::instance(),
                [self, model] {
                    if (self) self->serveModel(model);
                },
                Qt::QueuedConnection);
        },
        Qt::QueuedConnection);
}

void ApiServer::serveModel(const std::shared_ptr<ember::Model>& model) {
    if (!m_service || model.get() == m_served) return;
    if (m_served) {
        m_service->cancel_all("the app's model changed");
        pollStats();  // the final count of this model's requests
        m_service->detach();
        m_servedBefore += m_servedNow;
        m_servedNow = 0;
        m_served = nullptr;
    }
    QString id;
    // A stale answer (the model was replaced meanwhile) is not served: the next one comes.
    if (model && m_inference->modelLoaded() && !m_inference->loading()) {
        id = QFileInfo(m_inference->modelPath()).completeBaseName();
        m_service->attach_shared(model, id.toStdString(), m_inference->contextLength(),
                                 workerRunner(m_inference->worker(), model.get()));
        m_served = model.get();
        logLine("serving '" + id.toStdString() + "', context " +
                std::to_string(m_inference->contextLength()));
    }
    if (id != m_modelId) {
        m_modelId = id;
        emit modelIdChanged();
    }
    pollStats();
}

void ApiServer::pollStats() {
    const auto s = m_service ? m_service->stats() : ember::server::Scheduler::Stats{};
    const int waiting = s.queued + s.running;
    if (s.served == m_servedNow && waiting == m_waiting) return;
    m_servedNow = s.served;
    m_waiting = waiting;
    emit requestsServedChanged();
}

void ApiServer::setError(const QString& error) {
    if (error == m_error) return;
    m_error = error;
    emit errorChanged();
}
