// ember::Session (a KV cache on the model's backend) and the generation loop.
#include <algorithm>
#include <chrono>

#include "ember/ember.h"
#include "sampling/argmax.h"
#include "session/memory.h"
#include "session/model_impl.h"
#include "session/nonfinite.h"
#include "tokenizer/tokenizer.h"

namespace ember {

struct Session::Impl {
    Model* model = nullptr;
    std::unique_ptr<Runner> runner;
    int n_past = 0;
    std::vector<float> logits;  // [n_vocab] of the last evaluated token
};

Session::Session(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
Session::~Session() = default;

Result<std::unique_ptr<Session>> Session::create(Model& model, const SessionParams& params) {
    auto impl = std::make_unique<Impl>();
    impl->model = &model;
    EMBER_ASSIGN_OR_RETURN(const int n_ctx, choose_context(model.impl().llama.hp, params.n_ctx,
                                                           model.impl().n_ctx, model.info().path));
    if (model.impl().backend_info.kind == BackendKind::Cpu) {  // before the KV cache exists
        const CpuMemoryNeed need = cpu_memory_need(*model.impl().file, model.impl().llama, n_ctx,
                                                   model.impl().params.n_threads, false);
        EMBER_TRY(check_host_memory(need, n_ctx, model.info().path, "a session"));
    }
    EMBER_ASSIGN_OR_RETURN(impl->runner, model.impl().backend->create_runner(n_ctx));
    impl->logits.resize(size_t(model.n_vocab()));
    return std::unique_ptr<Session>(new Session(std::move(impl)));
}

// The first evaluation of a session (or after a reset) checks its logits: finite weights can
// still overflow, and a scan of n_vocab floats once per prompt costs nothing.
Result<std::span<const float>> Session::eval(std::span<const int32_t> tokens) {
    Impl& s = *m_impl;
    const bool first = s.n_past == 0;
    std::span<const float> out;
    if (s.runner->has_logits_view()) {
        EMBER_ASSIGN_OR_RETURN(out, s.runner->forward_view(tokens, s.n_past));
    } else {
        EMBER_TRY(s.runner->forward(tokens, s.n_past, s.logits.data()));
        out = s.logits;
    }
    if (first) EMBER_TRY(check_finite_logits(out, s.model->impl()));
    s.n_past += int(tokens.size());
    return out;
}

Result<int32_t> Session::eval_argmax(std::span<const int32_t> tokens) {
    Impl& s = *m_impl;
    // The device's argmax hides NaN logits: a first evaluation reads them all back.
    if (!s.runner->has_device_argmax() || s.n_past == 0) {
        EMBER_ASSIGN_OR_RETURN(auto logits, eval(tokens));
        return argmax(logits);
    }
    EMBER_ASSIGN_OR_RETURN(int32_t tok, s.runner->forward_argmax(tokens, s.n_past));
    s.n_past += int(tokens.size());
    return tok;
}

void Session::set_cancel(const std::atomic<bool>* cancel) {
    m_impl->runner->set_cancel(cancel);
}
void Session::set_profiling(bool on) {
    m_impl->runner->set_profiling(on);
}
void Session::reset() {
    m_impl->n_past = 0;
}
void Session::truncate(int n_keep) {
    m_impl->n_past = std::clamp(n_keep, 0, m_impl->n_past);
}
int Session::n_past() const {
    return m_impl->n_past;
}
int Session::n_ctx() const {
    return m_impl->runner->n_ctx();
}
Model& Session::model() {
    return *m_impl->model;
}

namespace {
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// Hands generate()'s cancel flag to the session's backend for the call, so that a Stop ends a
// long GPU wait, and takes it back afterwards (the flag may not outlive the call).
struct CancelScope {
    CancelScope(Session& s, const std::atomic<bool>* cancel) : session(s) {
        session.set_cancel(cancel);
    }
    ~CancelScope() { session.set_cancel(nullptr); }
    Session& session;
};

// An evaluation that ended because of the cancel flag, rather than failed.
bool is_cancel(const Error& e, const std::atomic<bool>* cancel) {
    const std::string_view suffix = ".cancelled";
    return cancel && cancel->load() && e.code.size() >= suffix.size() &&
           e.code.compare(e.code.size() - suffix.size(), suffix.size(), suffix) == 0;
}
}  // namespace

Result<GenerateStats> generate(Session& session, std::span<const int32_t> prompt,
                               const GenerateParams& params, const TokenCallback& on_token) {
    Model& model = session.model();
    const Tokenizer& tok = *model.impl().tokenizer;
    GenerateStats st;
    st.n_prompt = int(prompt.size());
    if (prompt.empty() && session.n_past() == 0)
        return make_error("session.empty_prompt", "generate: the prompt is empty");
    if (prompt.empty())
        return make_error("session.empty_prompt",
                          "generate: give at least one new token to continue from");

    Sampler sampler(params.sampling, model.n_vocab());
    // The penalty window sees the prompt too, with the cached tokens before it.
    for (int32_t t : params.history) sampler.accept(t);
    for (int32_t t : prompt) sampler.accept(t);
    // Greedy without penalties only needs the argmax, which a GPU backend computes on device.
    const bool argmax_only = sampler.is_greedy() && params.sampling.repeat_penalty == 1.0f;
    auto cancelled = [&] { return params.cancel && params.cancel->load(); };

    const auto t_start = Clock::now();
    CancelScope scope(session, params.cancel);
    int32_t next = -1;
    std::span<const float> logits;
    // One evaluation; false when it was cancelled (then st.stop says so).
    auto evaluate = [&](std::span<const int32_t> tokens) -> Status {
        Status r;
        if (argmax_only) {
            auto e = session.eval_argmax(tokens);
            if (e.ok())
                next = *e;
            else
                r = e.take_error();
        } else {
            auto e = session.eval(tokens);
            if (e.ok())
                logits = *e;
            else
                r = e.take_error();
        }
        if (!r.ok() && is_cancel(r.error(), params.cancel)) st.stop = StopReason::Cancelled;
        return r;
    };
    if (cancelled()) {
        st.stop = StopReason::Cancelled;
        return st;
    }
    if (Status r = evaluate(prompt); !r.ok()) {
        if (st.stop == StopReason::Cancelled) return st;
        return r.error();
    }
    st.prompt_ms = ms_since(t_start);

    StreamDecoder decoder(tok);
    auto t_decode = Clock::now();
    int n_decoded = 0;
    st.stop = StopReason::MaxTokens;
    while (st.n_generated < params.max_tokens) {
        if (!argmax_only) next = sampler.sample(logits);
        sampler.accept(next);
        if (st.n_generated == 0) {
            st.ttft_ms = ms_since(t_start);
            t_decode = Clock::now();
        }
        if (params.stop_at_eog && tok.is_end_of_generation(next)) {
            st.stop = StopReason::EndOfGeneration;
            break;
        }
        st.n_generated++;
        st.tokens.push_back(next);
        const std::string text = decoder.push(next);
        if (on_token && !on_token(next, text)) {
            st.stop = StopReason::Callback;
            break;
        }
        if (st.n_generated >= params.max_tokens) break;
        if (cancelled()) {
            st.stop = StopReason::Cancelled;
            break;
        }
        if (session.n_past() + 1 > session.n_ctx()) {
            st.stop = StopReason::ContextFull;
            break;
        }
        const int32_t one[1] = {next};
        if (Status r = evaluate(one); !r.ok()) {
            if (st.stop == StopReason::Cancelled) break;
            return r.error();
        }
        n_decoded++;
    }
    if (on_token) {
        const std::string rest = decoder.flush();
        if (!rest.empty()) on_token(-1, rest);
    }
    st.gen_ms = st.n_generated > 0 ? ms_since(t_decode) : 0.0;
    st.pp_tok_s = st.prompt_ms > 0 ? st.n_prompt / (st.prompt_ms / 1000.0) : 0.0;
    st.tg_tok_s = (n_decoded > 0 && st.gen_ms > 0) ? n_decoded / (st.gen_ms / 1000.0) : 0.0;
    return st;
}

}  // namespace ember
