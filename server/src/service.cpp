#include "service.h"

#include <chrono>
#include <ctime>
#include <random>

namespace ember::server {
namespace {

// How often a waiting connection checks its client between events.
constexpr std::chrono::milliseconds kPoll{20};

ApiError no_model() {
    return ApiError{503, "no model is loaded", "server_error", "model_not_loaded", ""};
}

Reply error_reply(const ApiError& e) {
    return Reply{e.status, error_body(e)};
}

std::string random_hex(int n) {
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    static const char* digits = "0123456789abcdef";
    std::string s;
    for (int i = 0; i < n; i++) s += digits[rng() & 15];
    return s;
}

}  // namespace

Service::~Service() {
    detach();
}

Status Service::attach(Model& model, std::string model_id, int parallel, int n_ctx) {
    EMBER_ASSIGN_OR_RETURN(std::unique_ptr<Scheduler> s,
                           Scheduler::create(model, parallel, n_ctx, m_log));
    std::lock_guard<std::mutex> lock(m_mutex);
    m_loaded = Loaded{std::shared_ptr<Scheduler>(std::move(s)), std::move(model_id),
                      int64_t(std::time(nullptr))};
    return {};
}

void Service::attach_shared(std::shared_ptr<Model> model, std::string model_id, int n_ctx,
                            SessionRunner runner) {
    Model& m = *model;
    std::shared_ptr<Scheduler> s =
        Scheduler::create_shared(m, std::move(model), n_ctx, std::move(runner), m_log);
    Loaded old;  // ends after the lock, with its requests
    std::lock_guard<std::mutex> lock(m_mutex);
    old = std::move(m_loaded);
    m_loaded = Loaded{std::move(s), std::move(model_id), int64_t(std::time(nullptr))};
}

Scheduler::Stats Service::stats() const {
    const Loaded l = loaded();
    return l.scheduler ? l.scheduler->stats() : Scheduler::Stats{};
}

void Service::detach() {
    std::shared_ptr<Scheduler> old;
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        old = std::move(m_loaded.scheduler);
        m_loaded = Loaded{};
    }
    // `old` ends here, or with the last request that still holds it.
}

void Service::cancel_all(const std::string& reason) {
    if (auto s = loaded().scheduler) s->cancel_all(reason);
}

Service::Loaded Service::loaded() const {
    std::lock_guard<std::mutex> lock(m_mutex);
    return m_loaded;
}

int Service::n_ctx() const {
    const Loaded l = loaded();
    return l.scheduler ? l.scheduler->n_ctx() : 0;
}

Reply Service::health() const {
    const Loaded l = loaded();
    if (!l.scheduler) return Reply{503, nlohmann::json{{"status", "no model loaded"}}.dump()};
    const Scheduler::Stats s = l.scheduler->stats();
    nlohmann::json j = {{"status", "ok"},     {"model", l.id},
                        {"queued", s.queued}, {"running", s.running},
                        {"served", s.served}, {"n_ctx", l.scheduler->n_ctx()}};
    return Reply{200, j.dump()};
}

Reply Service::models() const {
    const Loaded l = loaded();
    if (!l.scheduler) return error_reply(no_model());
    return Reply{200, models_list(l.id, l.created).dump()};
}

Reply Service::model(const std::string& id) const {
    const Loaded l = loaded();
    if (!l.scheduler) return error_reply(no_model());
    if (auto e = check_model(l, id)) return error_reply(*e);
    return Reply{200, model_object(l.id, l.created).dump()};
}

std::optional<ApiError> Service::check_model(const Loaded& l, const std::string& requested) const {
    if (requested.empty() || requested == l.id) return std::nullopt;
    return ApiError{404,
                    "the model '" + requested + "' does not exist; this server has '" + l.id + "'",
                    "invalid_request_error", "model_not_found", "model"};
}

ApiResult<Prepared> Service::start_chat(std::string_view body, std::function<bool()> client_gone) {
    auto parsed = parse_chat_request(body);
    if (auto* e = std::get_if<ApiError>(&parsed)) return *e;
    const ChatRequest& r = std::get<ChatRequest>(parsed);
    const Loaded l = loaded();
    if (!l.scheduler) return no_model();
    if (auto e = check_model(l, r.model)) return *e;
    Model& model = l.scheduler->model();
    ChatTemplateOptions opts;
    opts.add_generation_prompt = true;
    opts.tools_json = r.tools_json;
    opts.vars_json = r.vars_json;
    auto text = model.apply_chat_template(r.messages, opts);
    if (!text)
        return ApiError{400, "the chat template failed on these messages: " + text.error().message,
                        "invalid_request_error", "template_error", "messages"};
    std::vector<int32_t> tokens = model.tokenize(*text, true, true);
    // Templates that write the BOS themselves would otherwise get a second one (as the app).
    if (tokens.size() >= 2 && tokens[0] == model.bos() && tokens[1] == model.bos())
        tokens.erase(tokens.begin());
    // With tools, replies in the template's tool-call format come back as tool_calls.
    const ToolFormat tools = r.tools_json.empty() || r.tool_choice_none
                                 ? ToolFormat::None
                                 : tool_format_of(model.info().chat_template);
    return enqueue(l, std::move(tokens), r.options, true, prompt_opens_think(*text), tools,
                   std::move(client_gone));
}

ApiResult<Prepared> Service::start_completion(std::string_view body,
                                              std::function<bool()> client_gone) {
    auto parsed = parse_completion_request(body);
    if (auto* e = std::get_if<ApiError>(&parsed)) return *e;
    const CompletionRequest& r = std::get<CompletionRequest>(parsed);
    const Loaded l = loaded();
    if (!l.scheduler) return no_model();
    if (auto e = check_model(l, r.model)) return *e;
    std::vector<int32_t> tokens = l.scheduler->model().tokenize(r.prompt, true, false);
    return enqueue(l, std::move(tokens), r.options, false, false, ToolFormat::None,
                   std::move(client_gone));
}

ApiResult<Prepared> Service::enqueue(const Loaded& l, std::vector<int32_t> prompt,
                                     const GenerationOptions& o, bool chat, bool opens_think,
                                     ToolFormat tools, std::function<bool()> client_gone) {
    const int n_ctx = l.scheduler->n_ctx();
    const int n_prompt = int(prompt.size());
    if (n_prompt == 0)
        return ApiError{400, "the prompt gives no tokens", "invalid_request_error", "empty_prompt",
                        chat ? "messages" : "prompt"};
    if (n_prompt >= n_ctx)
        return ApiError{400,
                        "this model's context is " + std::to_string(n_ctx) +
                            " tokens, but the prompt has " + std::to_string(n_prompt) +
                            " tokens, which leaves no room to generate; shorten the prompt or "
                            "raise the context length",
                        "invalid_request_error", "context_length_exceeded",
                        chat ? "messages" : "prompt"};
    JobSpec spec;
    spec.prompt = std::move(prompt);
    const int room = n_ctx - n_prompt;
    spec.max_tokens = o.max_tokens ? std::min(*o.max_tokens, room) : room;
    spec.sampling = sampling_for(o);
    spec.ignore_eos = o.ignore_eos;
    spec.stop = o.stop;
    spec.split_think = chat;
    spec.starts_in_think = chat && opens_think;
    spec.label =
        std::string(chat ? "chat completion" : "completion") + (o.stream ? ", streamed" : "");
    std::shared_ptr<Job> job = l.scheduler->submit(std::move(spec), std::move(client_gone));
    ResponseMeta meta;
    meta.id = std::string(chat ? "chatcmpl-" : "cmpl-") + std::to_string(job->id()) + "-" +
              random_hex(12);
    meta.created = int64_t(std::time(nullptr));
    meta.model = l.id;
    meta.chat = chat;
    meta.include_usage = o.include_usage;
    meta.tool_format = tools;
    return Prepared{l.scheduler, job, ResponseBuilder(std::move(meta)), o.stream};
}

std::optional<ApiError> check_api_key(const std::string& key, std::string_view authorization) {
    if (key.empty()) return std::nullopt;
    constexpr std::string_view kBearer = "Bearer ";
    if (authorization.empty())
        return ApiError{401, "an API key is required: send 'Authorization: Bearer <key>'",
                        "invalid_request_error", "missing_api_key", ""};
    std::string_view given = authorization.substr(0, kBearer.size()) == kBearer
                                 ? authorization.substr(kBearer.size())
                                 : std::string_view{};
    // Compared in time that does not depend on where the first difference is.
    unsigned diff = given.size() != key.size();
    for (size_t i = 0; i < key.size(); i++)
        diff |= unsigned(char(i < given.size() ? given[i] : 0) ^ key[i]);
    if (diff)
        return ApiError{401, "incorrect API key provided", "invalid_request_error",
                        "invalid_api_key", ""};
    return std::nullopt;
}

bool stream_job(Prepared& p, const std::function<bool(const std::string&)>& write,
                const std::function<bool()>& client_gone) {
    Job& job = *p.job;
    const std::string start = p.builder.stream_start();
    if (!start.empty() && !write(start)) {
        job.cancel("client disconnected");
        return false;
    }
    for (;;) {
        for (const JobEvent& e : job.wait(kPoll)) {
            const std::string text = p.builder.stream_event(e);
            if (!text.empty() && !write(text)) {
                job.cancel("client disconnected");
                return false;
            }
            if (e.kind != JobEvent::Kind::Delta) return true;
        }
        if (client_gone && client_gone()) {
            job.cancel("client disconnected");
            return false;
        }
    }
}

Reply await_job(Prepared& p, const std::function<bool()>& client_gone) {
    Job& job = *p.job;
    for (;;) {
        for (const JobEvent& e : job.wait(kPoll)) {
            if (e.kind == JobEvent::Kind::Failed) return error_reply(e.error);
            if (e.kind == JobEvent::Kind::Done) return Reply{200, p.builder.body(e)};
            p.builder.collect(e);
        }
        if (client_gone && client_gone()) {
            job.cancel("client disconnected");
            return error_reply(ApiError{499, "client disconnected", "invalid_request_error",
                                        "client_closed_request", ""});
        }
    }
}

}  // namespace ember::server
