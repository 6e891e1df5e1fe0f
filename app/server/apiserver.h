// The local API server in the app: ember-cli's OpenAI-compatible server (server/) serving the
// model loaded in the app. Its generations are queued into the inference worker, behind and
// between the app's own, so that the engine never runs two at once. Started and stopped by the
// "Local API server" settings; reports whether it runs and how many requests it served.
#pragma once

#include <QObject>
#include <QPointer>
#include <QString>
#include <QTimer>
#include <memory>
#include <thread>

#include "apiserverstatus.h"

class InferenceController;
class Settings;

namespace ember {
class Model;
}
namespace ember::server {
class HttpServer;
class Service;
}  // namespace ember::server

class ApiServer : public ApiServerStatus {
    Q_OBJECT

public:
    ApiServer(Settings* settings, InferenceController* inference, QObject* parent = nullptr);
    ~ApiServer() override;

    bool running() const override { return m_http != nullptr; }
    QString address() const override;
    int port() const override { return m_port; }
    QString error() const override { return m_error; }
    int requestsServed() const override { return int(m_servedBefore + m_servedNow); }
    int requestsWaiting() const override { return m_waiting; }
    QString modelId() const override { return m_modelId; }

private:
    // Starts, stops or restarts to match the settings.
    void apply();
    void start();
    void stop();
    // Asks the worker for the loaded model and serves it (or none).
    void refreshModel();
    void serveModel(const std::shared_ptr<ember::Model>& model);
    void pollStats();
    void setError(const QString& error);

    Settings* m_settings;
    InferenceController* m_inference;
    std::unique_ptr<ember::server::Service> m_service;
    std::unique_ptr<ember::server::HttpServer> m_http;
    std::thread m_listener;
    QString m_host, m_key, m_error, m_modelId;
    int m_port = 0, m_requestedPort = 0;  // bound; as the settings asked (0: any free one)
    const ember::Model* m_served = nullptr;
    quint64 m_servedBefore = 0, m_servedNow = 0;  // by models served before, by this one
    int m_waiting = 0;
    QTimer m_poll;
};
