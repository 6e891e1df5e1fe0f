// The engine as the app sees it: a small interface so that the worker can be tested with a
// fake and the real engine (ember.h) stays free of Qt.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ember/ember.h"
#include "ember/result.h"

namespace ember {
class Model;
class Session;
}  // namespace ember

struct EngineLoadOptions {
    std::string path;
    std::string device = "auto";  // "auto", "cpu", or a GPU index ("0", "1", ...)
    int threads = 0;              // 0 = the engine's default
    int contextLength = 2048;
    // Bytes of the GPU's memory left free for other programs (the engine's gpu_mem_reserve): a
    // model that does not fit the rest runs its first layers on the CPU.
    uint64_t gpuMemReserve = 0;
};

// What was loaded and what actually runs it.
struct EngineLoadResult {
    std::string modelName;
    std::string backend;         // "cpu", "vulkan"
    std::string device;          // adapter or CPU name
    std::string fallbackReason;  // empty unless the requested backend could not be used
    int contextLength = 0;
    int threads = 0;
    // The chat template takes enable_thinking (Qwen 3): reasoning can be switched off.
    bool thinkingSwitch = false;
};

// Why a model file cannot be loaded: in plain words, and the engine's technical message.
struct EngineFileProblem {
    std::string summary;  // empty: the file looks loadable
    std::string detail;
};

struct EngineMessage {
    std::string role;  // "system", "user", "assistant"
    std::string content;
};

// What happens when the conversation does not fit the context.
enum class ContextPolicy {
    DropOldest,     // the oldest turns are left out; the system prompt stays
    RollingWindow,  // only the newest turns that fit are kept (the system prompt too may go)
    Stop,           // nothing is left out: the request fails with "app.context_full"
};

// The engine's defaults (ember::SamplingParams, GenerateParams) are the one source of these.
struct EngineSampling {
    float temperature = ember::SamplingParams{}.temperature;
    int topK = ember::SamplingParams{}.top_k;
    float topP = ember::SamplingParams{}.top_p;
    float minP = ember::SamplingParams{}.min_p;
    float repeatPenalty = ember::SamplingParams{}.repeat_penalty;
    int maxTokens = ember::GenerateParams{}.max_tokens;
    // The last message is an assistant reply cut short: generate more of it (the prompt ends
    // with its text instead of a new turn) rather than a new reply.
    bool continueLast = false;
    // Reasoning models think before they answer; false asks templates that take
    // enable_thinking not to.
    bool thinking = true;
    ContextPolicy contextPolicy = ContextPolicy::DropOldest;
};

struct EngineStats {
    int promptTokens = 0;     // tokens of the whole rendered prompt
    int evaluatedTokens = 0;  // of which were evaluated (the rest reused from the cache)
    int generatedTokens = 0;
    int droppedMessages = 0;           // oldest turns left out to fit the context
    bool systemPromptDropped = false;  // the system prompt was one of them (rolling window)
    double tokensPerSecond = 0;
    double timeToFirstTokenMs = 0;
    std::string stopReason;         // "eog", "max_tokens", "cancelled", "context_full", "callback"
    bool templateFallback = false;  // the model has no usable template: ChatML was used
    double promptMs = 0;            // evaluating the evaluatedTokens
    int contextUsed = 0;            // positions the session holds afterwards
};

// Memory of the device that runs the model (bytes).
struct EngineMemory {
    uint64_t used = 0;
    uint64_t budget = 0;
    std::string source;  // "VK_EXT_memory_budget", "heap size + own allocations", "process RSS"
};

// Called with each piece of complete UTF-8 text; return false to stop.
using EngineTextCallback = std::function<bool(std::string_view text)>;
// The prompt about to be evaluated: its whole length in tokens and how many of them are
// evaluated (the rest reused from the cache). Called once, before the first text.
using EnginePromptCallback = std::function<void(int promptTokens, int evaluatedTokens)>;
// Progress in [0,1]; return false to cancel.
using EngineProgressCallback = std::function<bool(float progress)>;

class ChatEngine {
public:
    virtual ~ChatEngine() = default;
    // Names of the GPUs that can be chosen as devices (index order); empty if none.
    virtual std::vector<std::string> listDevices() = 0;
    virtual ember::Result<EngineLoadResult> load(const EngineLoadOptions& options,
                                                 const EngineProgressCallback& progress,
                                                 const std::atomic<bool>* cancel) = 0;
    virtual void unload() = 0;
    // Checks a model file without touching the loaded model (header, tensor table, data
    // within the file, an architecture and tensor types the engine runs), so that a broken
    // file never replaces a working model.
    virtual EngineFileProblem check(const std::string& path) { return {}; }
    virtual bool isLoaded() const = 0;
    // May be called from another thread while generate() runs, never during load()/unload().
    virtual EngineMemory memory() const { return {}; }
    // Renders the conversation with the model's chat template (dropping the oldest turns,
    // never the system prompt, when it does not fit) and generates the reply. onPrompt may be
    // empty.
    virtual ember::Result<EngineStats> generate(const std::vector<EngineMessage>& messages,
                                                const EngineSampling& sampling,
                                                const std::atomic<bool>* cancel,
                                                const EngineTextCallback& onText,
                                                const EnginePromptCallback& onPrompt) = 0;

    // The conversation's length in tokens as it would be sent (nothing left out), for the
    // token counter; the last message may be a draft.
    virtual ember::Result<int> countTokens(const std::vector<EngineMessage>& messages,
                                           const EngineSampling& sampling) {
        return ember::make_error("app.unsupported", "this engine cannot count tokens");
    }

    // For the local API server. The loaded model, shared so that it outlives an unload while
    // a request still tokenizes with it; nullptr when none (or a fake engine).
    virtual std::shared_ptr<ember::Model> sharedModel() const { return nullptr; }
    // Runs `fn` with the loaded model's session, on the thread that calls generate(), if
    // `model` is still the loaded one (else false). The next generate() starts afresh.
    virtual bool withSession(const ember::Model* model,
                             const std::function<void(ember::Session&)>& fn) {
        return false;
    }
};
