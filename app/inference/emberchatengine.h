// ChatEngine over the Ember engine (ember.h). Keeps one session and reuses the prompt prefix
// it already holds, so a follow-up turn only evaluates the new tokens.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "chatengine.h"

namespace ember {
class Model;
class Session;
struct ChatMessage;
}  // namespace ember

class EmberChatEngine : public ChatEngine {
public:
    EmberChatEngine();
    ~EmberChatEngine() override;

    // The engine's error about a model file (its code) in plain words, for the user; the
    // engine's message itself goes behind a Details toggle.
    static std::string plainProblem(const std::string& path, const ember::Error& e);
    // The engine's load parameters for the app's options (no callbacks).
    static ember::LoadParams loadParams(const EngineLoadOptions& options);
    std::vector<std::string> listDevices() override;
    ember::Result<EngineLoadResult> load(const EngineLoadOptions& options,
                                         const EngineProgressCallback& progress,
                                         const std::atomic<bool>* cancel) override;
    void unload() override;
    EngineFileProblem check(const std::string& path) override;
    bool isLoaded() const override;
    EngineMemory memory() const override;
    ember::Result<EngineStats> generate(const std::vector<EngineMessage>& messages,
                                        const EngineSampling& sampling,
                                        const std::atomic<bool>* cancel,
                                        const EngineTextCallback& onText,
                                        const EnginePromptCallback& onPrompt) override;
    std::shared_ptr<ember::Model> sharedModel() const override { return m_model; }
    bool withSession(const ember::Model* model,
                     const std::function<void(ember::Session&)>& fn) override;
    ember::Result<int> countTokens(const std::vector<EngineMessage>& messages,
                                   const EngineSampling& sampling) override;

private:
    // Renders and tokenizes the conversation; leaves out the oldest turns as the policy says
    // until it fits in nCtx - reserve tokens. continueLast: the last message is a reply to
    // continue. Says what does not fit, with the numbers, when even the last turn does not.
    ember::Result<std::vector<int32_t>> renderPrompt(const std::vector<EngineMessage>& messages,
                                                     bool continueLast, ContextPolicy policy,
                                                     int nCtx, int reserve, EngineStats& stats);
    ember::Result<std::vector<int32_t>> tokenizeChat(std::span<const ember::ChatMessage> chat,
                                                     const std::string& tail, bool* fallback);

    std::shared_ptr<ember::Model> m_model;  // shared with the API server's requests
    std::unique_ptr<ember::Session> m_session;
    std::vector<int32_t> m_cached;        // tokens the session holds, in order
    bool m_thinking = true;               // enable_thinking for the prompt being rendered
    bool m_promptOpensReasoning = false;  // the last prompt rendered ends with <think>
};
