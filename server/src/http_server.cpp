#include "http_server.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>

#include "guard_stream.h"

namespace ember::server {
namespace {

using httplib::Request;
using httplib::Response;

// The connection the current thread serves (httplib runs a request's handler, its content
// provider and its error handler on the thread that read it).
thread_local GuardStream* tl_stream = nullptr;

void send_json(Response& res, int status, const std::string& body) {
    res.status = status;
    res.set_content(body, "application/json");
}

void send_error(Response& res, const ApiError& e) {
    send_json(res, e.status, error_body(e));
}

ApiError request_timeout(int seconds) {
    return ApiError{408, "the request was not received within " + std::to_string(seconds) + " s",
                    "invalid_request_error", "request_timeout", ""};
}

// httplib with GuardStream under it: one request per connection, limits on the request.
class GuardedServer : public httplib::Server {
public:
    GuardedServer(const StreamLimits& limits, LogFn log)
        : m_limits(limits), m_log(std::move(log)) {}

private:
    bool process_and_close_socket(socket_t sock) override {
        GuardStream strm(sock, m_limits);
        tl_stream = &strm;
        switch (strm.read_head()) {
            case GuardStream::Head::Ok: {
                bool closed = false;
                process_request(strm, true, closed, nullptr);
                break;
            }
            case GuardStream::Head::Timeout: {
                const int s = int(m_limits.request_timeout.count());
                log("a client did not send its request headers within " + std::to_string(s) +
                    " s: 408");
                strm.write_raw_response(408, "Request Timeout", error_body(request_timeout(s)));
                break;
            }
            case GuardStream::Head::TooLarge:
                log("a client sent over " + std::to_string(m_limits.max_head_lines) +
                    " header lines or " + std::to_string(m_limits.max_head_bytes) + " bytes: 431");
                strm.write_raw_response(
                    431, "Request Header Fields Too Large",
                    error_body(ApiError{431,
                                        "the request's headers are over " +
                                            std::to_string(m_limits.max_head_lines) + " lines or " +
                                            std::to_string(m_limits.max_head_bytes) + " bytes",
                                        "invalid_request_error", "headers_too_large", ""}));
                break;
            case GuardStream::Head::Closed:
                break;
        }
        tl_stream = nullptr;
        strm.close_gracefully();
        return true;
    }
    void log(const std::string& s) const {
        if (m_log) m_log(s);
    }

    StreamLimits m_limits;
    LogFn m_log;
};

}  // namespace

struct HttpServer::Impl {
    Impl(Service& s, HttpConfig c, LogFn l)
        : service(s), config(std::move(c)), log(std::move(l)), server(limits(config), log) {}

    static StreamLimits limits(const HttpConfig& c) {
        StreamLimits l;
        l.request_timeout = std::chrono::seconds(c.timeout_s);
        l.write_timeout = std::chrono::seconds(c.timeout_s);
        l.max_body_bytes = c.max_body_bytes;
        return l;
    }
    void routes();
    std::optional<ApiError> read_body(const httplib::ContentReader& reader, const Response& res,
                                      std::string& body) const;
    void generate(bool chat, const std::string& body, Response& res);

    Service& service;
    HttpConfig config;
    LogFn log;
    GuardedServer server;

    // cpp-httplib's stop() does nothing before its listen loop has started: stop() waits for
    // run() to be in the loop (or never to enter it).
    enum class RunState { NotYet, Entered, Done };
    std::mutex run_mutex;
    RunState run_state = RunState::NotYet;
    bool stopping = false;
};

std::optional<ApiError> HttpServer::Impl::read_body(const httplib::ContentReader& reader,
                                                    const Response& res, std::string& body) const {
    bool over = false;
    const bool ok = reader([&](const char* data, size_t n) {
        if (body.size() + n > config.max_body_bytes) {
            over = true;
            return false;
        }
        body.append(data, n);
        return true;
    });
    if (ok) return std::nullopt;
    if (over || res.status == 413 || (tl_stream && tl_stream->body_too_large()))
        return ApiError{
            413, "the request body is over " + std::to_string(config.max_body_bytes) + " bytes",
            "invalid_request_error", "request_too_large", ""};
    if (tl_stream && tl_stream->timed_out()) return request_timeout(config.timeout_s);
    return ApiError{400, "the request body could not be read", "invalid_request_error",
                    "invalid_body", ""};
}

void HttpServer::Impl::generate(bool chat, const std::string& body, Response& res) {
    GuardStream* stream = tl_stream;
    std::function<bool()> gone = [stream] { return stream && stream->peer_gone(); };
    auto started = chat ? service.start_chat(body, gone) : service.start_completion(body, gone);
    if (auto* e = std::get_if<ApiError>(&started)) return send_error(res, *e);
    auto prepared = std::make_shared<Prepared>(std::move(std::get<Prepared>(started)));
    if (!prepared->stream) {
        const Reply r = await_job(*prepared, gone);
        prepared->job->cancel("request ended");  // returns once the slot is done with it
        return send_json(res, r.status, r.body);
    }
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");
    res.set_chunked_content_provider(
        "text/event-stream",
        [prepared, gone](size_t, httplib::DataSink& sink) {
            auto write = [&](const std::string& s) {
                return s.empty() || sink.write(s.data(), s.size());
            };
            if (!stream_job(*prepared, write, gone)) return false;
            sink.done();
            return true;
        },
        // Also when the provider never ran (the headers could not be sent).
        [prepared](bool) { prepared->job->cancel("client disconnected"); });
}

void HttpServer::Impl::routes() {
    server.set_pre_routing_handler([this](const Request& req, Response& res) {
        if (req.path.rfind("/v1/", 0) != 0) return httplib::Server::HandlerResponse::Unhandled;
        if (auto e = check_api_key(config.api_key, req.get_header_value("Authorization"))) {
            log(req.method + " " + req.path + ": " + e->message);
            send_error(res, *e);
            return httplib::Server::HandlerResponse::Handled;
        }
        return httplib::Server::HandlerResponse::Unhandled;
    });
    server.Get("/health", [this](const Request&, Response& res) {
        const Reply r = service.health();
        send_json(res, r.status, r.body);
    });
    server.Get("/v1/models", [this](const Request&, Response& res) {
        const Reply r = service.models();
        send_json(res, r.status, r.body);
    });
    server.Get(R"(/v1/models/(.+))", [this](const Request& req, Response& res) {
        const Reply r = service.model(req.matches[1]);
        send_json(res, r.status, r.body);
    });
    for (const bool chat : {true, false}) {
        const char* path = chat ? "/v1/chat/completions" : "/v1/completions";
        server.Post(path, [this, chat](const Request&, Response& res,
                                       const httplib::ContentReader& reader) {
            std::string body;
            if (auto e = read_body(reader, res, body)) return send_error(res, *e);
            generate(chat, body, res);
        });
        server.Post(path, [](const Request&, Response& res) {  // no body at all
            send_error(res, ApiError{400, "the request has no body; send a JSON object",
                                     "invalid_request_error", "invalid_json", ""});
        });
    }
    server.set_error_handler(httplib::Server::HandlerWithResponse([this](const Request& req,
                                                                         Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;  // ours
        ApiError e{res.status, "HTTP status " + std::to_string(res.status), "invalid_request_error",
                   "", ""};
        if (tl_stream && tl_stream->timed_out()) {
            e = request_timeout(config.timeout_s);
        } else if (res.status == 413 || (tl_stream && tl_stream->body_too_large())) {
            e = ApiError{
                413, "the request body is over " + std::to_string(config.max_body_bytes) + " bytes",
                "invalid_request_error", "request_too_large", ""};
        } else if (res.status == 404) {
            e.message = "unknown route: " + req.method + " " + req.path;
            e.code = "not_found";
        } else if (res.status == 400) {
            e.message = "malformed HTTP request";
            e.code = "bad_request";
        } else if (res.status == 414) {
            e.message = "the request line is too long";
            e.code = "uri_too_long";
        }
        send_error(res, e);
        return httplib::Server::HandlerResponse::Handled;
    }));
    server.set_logger([this](const Request& req, const Response& res) {
        log(req.method + " " + req.path + " " + std::to_string(res.status));
    });
}

HttpServer::HttpServer(Service& service, HttpConfig config, LogFn log)
    : m_impl(std::make_unique<Impl>(service, std::move(config), std::move(log))) {
    const size_t n = size_t(std::max(1, m_impl->config.max_connections));
    m_impl->server.new_task_queue = [n] { return new httplib::ThreadPool(n); };
    m_impl->server.set_tcp_nodelay(true);
    m_impl->server.set_payload_max_length(m_impl->config.max_body_bytes);
    m_impl->routes();
}

HttpServer::~HttpServer() = default;

Result<int> HttpServer::bind() {
    const HttpConfig& c = m_impl->config;
    errno = 0;
    if (c.port == 0) {
        const int port = m_impl->server.bind_to_any_port(c.host);
        if (port > 0) return port;
    } else if (m_impl->server.bind_to_port(c.host, c.port)) {
        return c.port;
    }
    const int err = errno;
    const char* code = err == EADDRINUSE ? "server.address_in_use"
                       : err == EACCES   ? "server.permission_denied"
                                         : "server.listen";
    return make_error(code, "cannot listen on " + c.host + ":" + std::to_string(c.port) +
                                (err ? std::string(": ") + std::strerror(err) : ""));
}

void HttpServer::run() {
    {
        std::lock_guard<std::mutex> lock(m_impl->run_mutex);
        if (m_impl->stopping) return;
        m_impl->run_state = Impl::RunState::Entered;
    }
    m_impl->server.listen_after_bind();
    std::lock_guard<std::mutex> lock(m_impl->run_mutex);
    m_impl->run_state = Impl::RunState::Done;
}

void HttpServer::stop() {
    for (;;) {
        {
            std::lock_guard<std::mutex> lock(m_impl->run_mutex);
            m_impl->stopping = true;
            if (m_impl->run_state != Impl::RunState::Entered || m_impl->server.is_running()) break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    m_impl->server.stop();
}

}  // namespace ember::server
