#include "emberchatengine.h"

#include <algorithm>
#include <cstdio>
#include <regex>

#include "ember/ember.h"
#include "gguf/gguf.h"
#include "model/llama.h"
#include "reasoning.h"

namespace {

std::string humanBytes(uint64_t bytes) {
    const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
    double v = double(bytes);
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        ++u;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
    return buf;
}

}  // namespace

std::string EmberChatEngine::plainProblem(const std::string& path, const ember::Error& e) {
    const std::string& c = e.code;
    if (c == "gguf.truncated") {
        // "... past the end of the file (S bytes, data section at D)" for a tensor at offset O
        // of N bytes: the file needs at least D + O + N bytes.
        static const std::regex tensor(
            R"(offset (\d+), (\d+) bytes\) extends past the end of the file \((\d+) bytes, data section at (\d+)\))");
        std::smatch m;
        if (std::regex_search(e.message, m, tensor)) {
            const uint64_t need = std::stoull(m[4]) + std::stoull(m[1]) + std::stoull(m[2]);
            return "the file is incomplete: " + humanBytes(std::stoull(m[3])) + " of at least " +
                   humanBytes(need) + "; download it again";
        }
        return "the file is incomplete (it ends too early); download it again";
    }
    if (c == "gguf.bad_magic") return "this is not a GGUF model file";
    if (c == "gguf.io") return "cannot read " + path;
    if (c == "model.unsupported_architecture" || c == "model.unsupported_feature")
        return "Ember cannot run this kind of model yet";
    if (c.rfind("gguf.", 0) == 0) return "the file is damaged; download it again";
    return "the file is not a model Ember can run";
}

EmberChatEngine::EmberChatEngine() = default;
EmberChatEngine::~EmberChatEngine() = default;

std::vector<std::string> EmberChatEngine::listDevices() {
    std::vector<std::string> names;
    auto devices = ember::list_devices();
    if (!devices.ok()) return names;
    for (const auto& d : devices.value()) names.push_back(d.name);
    return names;
}

ember::LoadParams EmberChatEngine::loadParams(const EngineLoadOptions& options) {
    ember::LoadParams params;
    if (options.device == "cpu") {
        params.backend = ember::BackendKind::Cpu;
    } else if (options.device != "auto" && !options.device.empty()) {
        params.backend = ember::BackendKind::Vulkan;
        params.device = options.device;
    }
    params.n_threads = options.threads;
    params.n_ctx = options.contextLength;
    params.gpu_mem_reserve = options.gpuMemReserve;
    return params;
}

ember::Result<EngineLoadResult> EmberChatEngine::load(const EngineLoadOptions& options,
                                                      const EngineProgressCallback& progress,
                                                      const std::atomic<bool>* cancel) {
    unload();
    ember::LoadParams params = loadParams(options);
    params.progress = progress;
    params.cancel = cancel;
    EMBER_ASSIGN_OR_RETURN(auto model, ember::Model::load(options.path, params));
    EMBER_ASSIGN_OR_RETURN(auto session, ember::Session::create(*model));

    EngineLoadResult result;
    const auto& info = model->info();
    const auto& backend = model->backend();
    result.modelName = info.name;
    result.backend = ember::backend_name(backend.kind);
    result.device = backend.device;
    result.fallbackReason = backend.fallback_reason;
    result.threads = backend.n_threads;
    result.contextLength = session->n_ctx();
    result.thinkingSwitch = info.chat_template.find("enable_thinking") != std::string::npos;
    m_model = std::move(model);
    m_session = std::move(session);
    m_cached.clear();
    return result;
}

void EmberChatEngine::unload() {
    m_session.reset();  // the session refers to the model: release it first
    m_model.reset();
    m_cached.clear();
}

EngineFileProblem EmberChatEngine::check(const std::string& path) {
    // What Model::load checks before it allocates: the file and its tensor table, then the
    // architecture, the metadata and every tensor's shape and type.
    auto file = ember::gguf::File::open(path);
    if (!file.ok()) return {plainProblem(path, file.error()), file.error().message};
    auto model = ember::load_llama(**file);
    if (!model.ok()) return {plainProblem(path, model.error()), model.error().message};
    return {};
}

bool EmberChatEngine::withSession(const ember::Model* model,
                                  const std::function<void(ember::Session&)>& fn) {
    if (!m_model || !m_session || m_model.get() != model) return false;
    m_cached.clear();  // whatever `fn` leaves in the session is not the conversation's prefix
    fn(*m_session);
    m_session->reset();
    return true;
}

bool EmberChatEngine::isLoaded() const {
    return m_model != nullptr;
}

EngineMemory EmberChatEngine::memory() const {
    if (!m_model) return {};
    const ember::MemoryStats m = m_model->memory();
    return {m.used, m.budget, m.source};
}

// The chat rendered with the generation prompt, then `tail` (a reply being continued), as tokens.
ember::Result<std::vector<int32_t>> EmberChatEngine::tokenizeChat(
    std::span<const ember::ChatMessage> chat, const std::string& tail, bool* fallback) {
    ember::ChatTemplateOptions options;
    options.vars_json["enable_thinking"] = m_thinking ? "true" : "false";
    EMBER_ASSIGN_OR_RETURN(std::string text, m_model->apply_chat_template(chat, options, fallback));
    // Templates of reasoning models may open the reasoning block themselves (DeepSeek-R1):
    // the reply then starts inside it.
    m_promptOpensReasoning = tail.empty() && reasoning::opensReasoning(text);
    std::vector<int32_t> tokens = m_model->tokenize(text + tail, true, true);
    // Templates that write the BOS themselves would otherwise get a second one.
    if (tokens.size() >= 2 && tokens[0] == m_model->bos() && tokens[1] == m_model->bos())
        tokens.erase(tokens.begin());
    return tokens;
}

ember::Result<int> EmberChatEngine::countTokens(const std::vector<EngineMessage>& messages,
                                                const EngineSampling& sampling) {
    if (!m_model) return ember::make_error("app.no_model", "no model is loaded; choose one first");
    std::vector<ember::ChatMessage> chat;
    for (const auto& m : messages) chat.push_back({m.role, m.content});
    m_thinking = sampling.thinking;
    bool fallback = false;
    EMBER_ASSIGN_OR_RETURN(auto tokens, tokenizeChat(chat, {}, &fallback));
    return static_cast<int>(tokens.size());
}

ember::Result<std::vector<int32_t>> EmberChatEngine::renderPrompt(
    const std::vector<EngineMessage>& messages, bool continueLast, ContextPolicy policy, int nCtx,
    int reserve, EngineStats& stats) {
    std::vector<ember::ChatMessage> chat;
    for (const auto& m : messages) chat.push_back({m.role, m.content});
    // A reply being continued: the prompt is the conversation before it with the generation
    // prompt, then the reply's text so far, so that the model goes on exactly where it stopped
    // (rendering the reply as a finished turn would end it with the end-of-turn marker).
    std::string tail;
    if (continueLast && !chat.empty() && chat.back().role == "assistant") {
        tail = chat.back().content;
        chat.pop_back();
    }
    const int budget = nCtx - reserve;
    const bool hasSystem = !chat.empty() && chat.front().role == "system";
    // The first turn that may be left out: after the system prompt, unless the window rolls
    // over it too.
    size_t first = hasSystem && policy != ContextPolicy::RollingWindow ? 1 : 0;
    for (;;) {
        bool fallback = false;
        EMBER_ASSIGN_OR_RETURN(auto tokens, tokenizeChat(chat, tail, &fallback));
        stats.templateFallback = fallback;
        const int total = static_cast<int>(tokens.size());
        if (total <= budget) return tokens;
        if (policy == ContextPolicy::Stop && chat.size() > first + 1) {
            return ember::make_error(
                "app.context_full",
                "the conversation needs " + std::to_string(total) + " tokens, but the context of " +
                    std::to_string(nCtx) + " tokens leaves " + std::to_string(budget) +
                    " for the prompt; start a new conversation, or let this one leave out its "
                    "oldest turns (conversation settings)");
        }
        if (chat.size() > first + 1) {
            // Leave out the oldest turn, and a reply left without its question (templates
            // expect a user turn first).
            do {
                stats.systemPromptDropped |= chat[first].role == "system";
                chat.erase(chat.begin() + static_cast<std::ptrdiff_t>(first));
                ++stats.droppedMessages;
            } while (chat.size() > first + 1 && chat[first].role == "assistant");
            continue;
        }
        first = hasSystem && !stats.systemPromptDropped ? 1 : 0;
        // Only the system prompt and the last message are left (they are never dropped): say
        // which of them does not fit, with the numbers.
        const std::string room = "the context of " + std::to_string(nCtx) + " tokens leaves " +
                                 std::to_string(budget) + " for the prompt (" +
                                 std::to_string(reserve) + " are kept for the reply)";
        int withoutSystem = total;
        if (first == 1) {
            EMBER_ASSIGN_OR_RETURN(auto rest,
                                   tokenizeChat(std::span(chat).subspan(1), tail, &fallback));
            withoutSystem = static_cast<int>(rest.size());
        }
        const int system = total - withoutSystem;
        if (first == 1 && (system >= budget || withoutSystem <= budget)) {
            const std::string what =
                system >= budget
                    ? "the system prompt alone needs " + std::to_string(system) + " tokens, but "
                    : "the system prompt (" + std::to_string(system) +
                          " tokens) and the message (" + std::to_string(withoutSystem) + ") need " +
                          std::to_string(total) + " tokens together, but ";
            return ember::make_error(
                "app.prompt_too_long",
                what + room +
                    "; shorten the system prompt or raise the context length in Settings");
        }
        return ember::make_error("app.prompt_too_long",
                                 "the message needs " + std::to_string(withoutSystem) +
                                     " tokens, but " + room +
                                     "; shorten it or raise the context length in Settings");
    }
}

ember::Result<EngineStats> EmberChatEngine::generate(const std::vector<EngineMessage>& messages,
                                                     const EngineSampling& sampling,
                                                     const std::atomic<bool>* cancel,
                                                     const EngineTextCallback& onText,
                                                     const EnginePromptCallback& onPrompt) {
    if (!m_model || !m_session)
        return ember::make_error("app.no_model", "no model is loaded; choose one first");
    EngineStats stats;
    const int nCtx = m_session->n_ctx();
    // Leave room for the reply: up to half of the context.
    const int reserve = std::clamp(sampling.maxTokens, 1, std::max(1, nCtx / 2));
    m_thinking = sampling.thinking;
    EMBER_ASSIGN_OR_RETURN(auto prompt, renderPrompt(messages, sampling.continueLast,
                                                     sampling.contextPolicy, nCtx, reserve, stats));

    // Reuse the longest common prefix with what the session holds; at least one token must be
    // evaluated to get fresh logits.
    size_t common = 0;
    while (common < m_cached.size() && common < prompt.size() && m_cached[common] == prompt[common])
        ++common;
    if (common == prompt.size() && common > 0) --common;
    m_session->truncate(static_cast<int>(common));
    m_cached.resize(common);

    ember::GenerateParams params;
    params.max_tokens = sampling.maxTokens;
    params.sampling.temperature = sampling.temperature;
    params.sampling.top_k = sampling.topK;
    params.sampling.top_p = sampling.topP;
    params.sampling.min_p = sampling.minP;
    params.sampling.repeat_penalty = sampling.repeatPenalty;
    params.cancel = cancel;
    // The reused prefix counts for the repeat penalty as in a fresh session: the same prompt
    // then gives the same tokens whether or not the cache was reused.
    params.history = std::span<const int32_t>(prompt.data(), common);
    std::span<const int32_t> fresh(prompt.data() + common, prompt.size() - common);
    if (onPrompt) onPrompt(static_cast<int>(prompt.size()), static_cast<int>(fresh.size()));
    // A reply that starts inside a reasoning block the prompt opened gets its opening tag, so
    // that it is shown and stored as any reasoning reply.
    bool opened = !m_promptOpensReasoning;
    auto result = ember::generate(*m_session, fresh, params, [&](int32_t, std::string_view text) {
        if (!opened) {
            opened = true;
            if (!onText("<think>\n")) return false;
        }
        return onText(text);
    });
    if (!result.ok()) {
        // The cache content is unknown after a failure: start over next time.
        m_session->reset();
        m_cached.clear();
        return result.take_error();
    }
    const auto& gen = result.value();
    // The session now holds the prompt and the generated tokens it evaluated.
    m_cached = prompt;
    m_cached.insert(m_cached.end(), gen.tokens.begin(), gen.tokens.end());
    m_cached.resize(std::min<size_t>(m_cached.size(), static_cast<size_t>(m_session->n_past())));

    stats.promptTokens = static_cast<int>(prompt.size());
    stats.evaluatedTokens = static_cast<int>(fresh.size());
    stats.generatedTokens = gen.n_generated;
    stats.tokensPerSecond = gen.tg_tok_s;
    stats.timeToFirstTokenMs = gen.ttft_ms;
    stats.promptMs = gen.prompt_ms;
    stats.contextUsed = m_session->n_past();
    switch (gen.stop) {
        case ember::StopReason::EndOfGeneration:
            stats.stopReason = "eog";
            break;
        case ember::StopReason::MaxTokens:
            stats.stopReason = "max_tokens";
            break;
        case ember::StopReason::Cancelled:
            stats.stopReason = "cancelled";
            break;
        case ember::StopReason::ContextFull:
            stats.stopReason = "context_full";
            break;
        case ember::StopReason::Callback:
            stats.stopReason = "callback";
            break;
    }
    return stats;
}
