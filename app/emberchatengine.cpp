#include "emberchatengine.h"

#include <algorithm>

#include "ember/ember.h"

EmberChatEngine::EmberChatEngine() = default;
EmberChatEngine::~EmberChatEngine() = default;

std::vector<std::string> EmberChatEngine::listDevices() {
    std::vector<std::string> names;
    auto devices = ember::list_devices();
    if (!devices.ok()) return names;
    for (const auto& d : devices.value()) names.push_back(d.name);
    return names;
}

ember::Result<EngineLoadResult> EmberChatEngine::load(const EngineLoadOptions& options,
                                                      const EngineProgressCallback& progress,
                                                      const std::atomic<bool>* cancel) {
    unload();
    ember::LoadParams params;
    if (options.device == "cpu") {
        params.backend = ember::BackendKind::Cpu;
    } else if (options.device != "auto" && !options.device.empty()) {
        params.backend = ember::BackendKind::Vulkan;
        params.device = options.device;
    }
    params.n_threads = options.threads;
    params.n_ctx = options.contextLength;
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

bool EmberChatEngine::isLoaded() const {
    return m_model != nullptr;
}

EngineMemory EmberChatEngine::memory() const {
    if (!m_model) return {};
    const ember::MemoryStats m = m_model->memory();
    return {m.used, m.budget, m.source};
}

// Renders and tokenizes the conversation; drops the oldest turns after the system prompt until
// the prompt fits in `budget` tokens.
ember::Result<std::vector<int32_t>> EmberChatEngine::renderPrompt(
    const std::vector<EngineMessage>& messages, int budget, EngineStats& stats) {
    std::vector<ember::ChatMessage> chat;
    for (const auto& m : messages) chat.push_back({m.role, m.content});
    const size_t first = (!chat.empty() && chat.front().role == "system") ? 1 : 0;
    for (;;) {
        bool fallback = false;
        EMBER_ASSIGN_OR_RETURN(std::string text,
                               m_model->apply_chat_template(chat, true, &fallback));
        stats.templateFallback = fallback;
        std::vector<int32_t> tokens = m_model->tokenize(text, true, true);
        // Templates that write the BOS themselves would otherwise get a second one.
        if (tokens.size() >= 2 && tokens[0] == m_model->bos() && tokens[1] == m_model->bos())
            tokens.erase(tokens.begin());
        if (static_cast<int>(tokens.size()) <= budget) return tokens;
        // Keep at least the last message (the one being answered).
        if (chat.size() <= first + 1) {
            return ember::make_error("app.prompt_too_long",
                                     "the message needs " + std::to_string(tokens.size()) +
                                         " tokens but the context leaves room for " +
                                         std::to_string(budget) +
                                         "; shorten it or raise the context length in Settings");
        }
        chat.erase(chat.begin() + static_cast<std::ptrdiff_t>(first));
        ++stats.droppedMessages;
    }
}

ember::Result<EngineStats> EmberChatEngine::generate(const std::vector<EngineMessage>& messages,
                                                     const EngineSampling& sampling,
                                                     const std::atomic<bool>* cancel,
                                                     const EngineTextCallback& onText) {
    if (!m_model || !m_session)
        return ember::make_error("app.no_model", "no model is loaded; choose one first");
    EngineStats stats;
    const int nCtx = m_session->n_ctx();
    // Leave room for the reply: up to half of the context.
    const int reserve = std::clamp(sampling.maxTokens, 1, std::max(1, nCtx / 2));
    EMBER_ASSIGN_OR_RETURN(auto prompt, renderPrompt(messages, nCtx - reserve, stats));

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
    std::span<const int32_t> fresh(prompt.data() + common, prompt.size() - common);
    auto result = ember::generate(*m_session, fresh, params,
                                  [&](int32_t, std::string_view text) { return onText(text); });
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
