// ChatEngine over the Ember engine (ember.h). Keeps one session and reuses the prompt prefix
// it already holds, so a follow-up turn only evaluates the new tokens.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "chatengine.h"

namespace ember {
class Model;
class Session;
}  // namespace ember

class EmberChatEngine : public ChatEngine {
public:
    EmberChatEngine();
    ~EmberChatEngine() override;

    std::vector<std::string> listDevices() override;
    ember::Result<EngineLoadResult> load(const EngineLoadOptions& options,
                                         const EngineProgressCallback& progress,
                                         const std::atomic<bool>* cancel) override;
    void unload() override;
    bool isLoaded() const override;
    EngineMemory memory() const override;
    ember::Result<EngineStats> generate(const std::vector<EngineMessage>& messages,
                                        const EngineSampling& sampling,
                                        const std::atomic<bool>* cancel,
                                        const EngineTextCallback& onText) override;

private:
    ember::Result<std::vector<int32_t>> renderPrompt(const std::vector<EngineMessage>& messages,
                                                     int budget, EngineStats& stats);

    std::unique_ptr<ember::Model> m_model;
    std::unique_ptr<ember::Session> m_session;
    std::vector<int32_t> m_cached;  // tokens the session holds, in order
};
