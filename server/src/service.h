// The OpenAI-compatible API's endpoints without the HTTP: validate a request, render and
// tokenize its prompt with the engine, queue it, and turn its events into the response. The
// HTTP glue (http_server.h) only moves bytes; the Qt app can drive the same Service.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include "protocol.h"
#include "responses.h"
#include "scheduler.h"

namespace ember::server {

struct Reply {
    int status = 200;
    std::string body;  // JSON
};

// A queued request and how to answer it.
struct Prepared {
    std::shared_ptr<Scheduler> scheduler;  // kept alive while the job runs
    std::shared_ptr<Job> job;
    ResponseBuilder builder;
    bool stream = false;
};

class Service {
public:
    explicit Service(LogFn log = {}) : m_log(std::move(log)) {}
    ~Service();

    // Serves `model` (which must outlive the service or the next attach/detach) as `model_id`,
    // with `parallel` slots of n_ctx positions (0: the model's default context).
    Status attach(Model& model, std::string model_id, int parallel, int n_ctx);
    // Serves a model that another owner runs (the app's): generations go through `runner`, one
    // at a time, on the owner's session of n_ctx positions. The service keeps `model` alive
    // until its last request ends.
    void attach_shared(std::shared_ptr<Model> model, std::string model_id, int n_ctx,
                       SessionRunner runner);
    // Stops serving the model. Requests still running keep it until they end.
    void detach();
    // Ends every queued and running request with a 503 (before stopping the server).
    void cancel_all(const std::string& reason);

    int n_ctx() const;  // the context of each slot; 0 when no model is attached
    // The queue of the attached model (all zero when none).
    Scheduler::Stats stats() const;
    Reply health() const;
    Reply models() const;
    Reply model(const std::string& id) const;
    // Validates, renders and tokenizes, then queues. `client_gone` is polled once per
    // generated token (and before the job starts); true cancels the generation.
    ApiResult<Prepared> start_chat(std::string_view body, std::function<bool()> client_gone);
    ApiResult<Prepared> start_completion(std::string_view body, std::function<bool()> client_gone);

private:
    struct Loaded {
        std::shared_ptr<Scheduler> scheduler;
        std::string id;
        int64_t created = 0;
    };
    Loaded loaded() const;
    std::optional<ApiError> check_model(const Loaded& l, const std::string& requested) const;
    ApiResult<Prepared> enqueue(const Loaded& l, std::vector<int32_t> prompt,
                                const GenerationOptions& o, bool chat, bool opens_think,
                                ToolFormat tools, std::function<bool()> client_gone);

    LogFn m_log;
    mutable std::mutex m_mutex;
    Loaded m_loaded;
};

// The error for a missing or wrong API key, or none when `authorization` (the header's value)
// carries "Bearer <key>". An empty key means none is required.
std::optional<ApiError> check_api_key(const std::string& key, std::string_view authorization);

// Sends a streamed request's events through `write` until it ends; cancels the generation as
// soon as `write` fails or `client_gone` says so. Returns false when the client went away.
bool stream_job(Prepared& p, const std::function<bool(const std::string&)>& write,
                const std::function<bool()>& client_gone);
// Waits for a request that is not streamed and returns its response (an error reply if it
// failed); cancels it when `client_gone` says so.
Reply await_job(Prepared& p, const std::function<bool()>& client_gone);

}  // namespace ember::server
