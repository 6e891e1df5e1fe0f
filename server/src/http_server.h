// The HTTP side of the OpenAI-compatible server: cpp-httplib's routes over a Service.
#pragma once

#include <memory>
#include <string>

#include "ember/result.h"
#include "service.h"

namespace ember::server {

struct HttpConfig {
    std::string host = "127.0.0.1";
    int port = 8080;      // 0: any free port (bind() tells which)
    std::string api_key;  // empty: none required
    int timeout_s = 30;   // to receive a request; for a write to progress
    size_t max_body_bytes = 8u << 20;
    int max_connections = 64;  // served at once; more wait to be accepted
};

class HttpServer {
public:
    HttpServer(Service& service, HttpConfig config, LogFn log = {});
    ~HttpServer();
    HttpServer(const HttpServer&) = delete;
    HttpServer& operator=(const HttpServer&) = delete;

    // Binds and listens; returns the port.
    Result<int> bind();
    // Serves until stop(); call after bind(), from one thread.
    void run();
    // From any thread: stops accepting, and run() returns once the open requests end.
    void stop();

    struct Impl;

private:
    std::unique_ptr<Impl> m_impl;
};

}  // namespace ember::server
