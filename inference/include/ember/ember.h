// Ember inference engine: the public API.
//
// Load a GGUF model, create a session (KV cache) on it, evaluate tokens, sample.
// Nothing here throws across the boundary or exits: failures come back as ember::Error.
// The engine has no threads of its own apart from the CPU worker pool and knows nothing of Qt.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ember/result.h"

namespace ember {

const char* version();

// ---- logging -------------------------------------------------------------------------------
enum class LogLevel { Debug = 0, Info = 1, Warn = 2, Error = 3 };
using LogCallback = void (*)(LogLevel level, const char* message, void* user);
// Default: warnings and errors to stderr. Pass nullptr to silence.
void set_log_callback(LogCallback cb, void* user);
void set_log_level(LogLevel min_level);

// ---- devices -------------------------------------------------------------------------------
enum class BackendKind { Auto, Cpu, Vulkan };
const char* backend_name(BackendKind kind);  // "auto", "cpu", "vulkan"

struct DeviceInfo {
    int index = 0;
    std::string name;
    std::string type;  // "discrete", "integrated", "virtual", "cpu", "other"
    uint32_t vendor_id = 0;
    std::string vendor;          // "NVIDIA", "AMD", "Intel", "Mesa", ...
    std::string driver_version;  // decoded per vendor convention
    std::string api_version;
    uint64_t device_local_bytes = 0;
    uint64_t budget_bytes = 0;  // current budget of the device-local heap
    std::string budget_source;  // "VK_EXT_memory_budget" or "heap size"
    uint32_t subgroup_size = 0;
    bool suitable = false;          // usable in auto mode
    std::string unsuitable_code;    // e.g. "cpu_adapter", "missing_feature"
    std::string unsuitable_reason;  // for a person
};

// Lists every Vulkan physical device. An empty list with an error if no loader/driver exists.
Result<std::vector<DeviceInfo>> list_devices();

// ---- model ---------------------------------------------------------------------------------
struct LoadParams {
    BackendKind backend = BackendKind::Auto;
    std::string device;  // "" = best suitable; an index ("0") or a name substring
    int n_threads = 0;   // CPU threads; 0 = physical cores
    // Default context of sessions. 0: 2048 tokens, or the model's training context if shorter.
    // A context longer than the model runs (ModelInfo::n_ctx_max: its training context, or
    // more where its RoPE scaling says so) is refused with "model.context_too_long".
    int n_ctx = 0;
    // Progress in [0,1], never going back: 0.05 once the file's header is read, then the share
    // of the weight bytes uploaded (GPU) or checked and repacked (CPU), 1 when done. Called
    // from the loading thread; return false to cancel.
    std::function<bool(float)> progress;
    // Set (from any thread) to cancel. A cancelled load returns "model.cancelled" with nothing
    // of it left allocated or running.
    const std::atomic<bool>* cancel = nullptr;
    // Partial offload: a model that does not fit the GPU keeps as many of its last layers (with
    // their KV cache) and its output layer on the GPU as fit, and runs the first ones on the CPU.
    // -1: as many as fit; 0: none (the CPU alone); n: at most n layers on the GPU (as llama.cpp's
    // -ngl), fewer where n do not fit.
    int n_gpu_layers = -1;
    // The most GPU memory Ember may use for the model (weights, KV cache, scratch), in bytes;
    // 0: the device's whole budget. gpu_mem_reserve: bytes left free for other programs ("leave
    // 2 GiB"), taken off the device's free memory. Both apply; the smaller budget wins.
    uint64_t gpu_mem_limit = 0;
    uint64_t gpu_mem_reserve = 0;
};

// "6G", "512M", "1.5GiB", "800000000": bytes. An error names what was not understood.
Result<uint64_t> parse_byte_size(const std::string& text);

struct ModelInfo {
    std::string path;
    std::string architecture;  // general.architecture
    std::string name;          // general.name
    uint32_t gguf_version = 0;
    uint64_t file_size = 0;
    uint64_t n_params = 0;
    uint64_t weight_bytes = 0;
    uint64_t n_tensors = 0;
    std::vector<std::pair<std::string, uint64_t>> bytes_per_type;  // "Q4_0" -> bytes
    std::string quantization;  // dominant weight type, e.g. "Q4_0"
    uint32_t n_vocab = 0, n_ctx_train = 0, n_embd = 0, n_layer = 0, n_head = 0, n_head_kv = 0,
             n_ff = 0;
    // The longest context the model runs: n_ctx_train, or original context x rope.scaling.factor
    // where the file states both (YaRN, linear) and that is longer.
    uint32_t n_ctx_max = 0;
    uint32_t head_dim = 0;        // attention.key_length, else n_embd / n_head
    uint32_t n_rot = 0;           // dimensions rope rotates (< head_dim: partial rotary)
    uint32_t sliding_window = 0;  // keys a sliding-window layer sees; 0: none
    uint32_t n_swa_layers = 0;    // layers with the sliding window
    std::string tokenizer_model;  // "llama", "gpt2"
    std::string chat_template;    // empty if the model has none
};

// The general.architecture values the engine runs ("llama", "qwen2", ...); Model::load refuses
// others with "model.unsupported_architecture".
std::vector<std::string> supported_architectures();
// The tensor types the engine computes with ("F32", "Q4_0", "Q4_K", ...); Model::load refuses a
// file holding others.
std::vector<std::string> supported_tensor_types();
// What a GGUF file holds, read from its header without loading it: ModelInfo's file fields, the
// quantization label (the dominant type of the 2-D weights, as Model::info() names it) and the
// shape where the engine runs the architecture (zeros otherwise). Errors: the file cannot be
// read, or it is not a model ("inspect.not_a_model").
Result<ModelInfo> inspect(const std::string& path);

// What actually runs the model, and why it is not what was asked for, if so.
struct BackendInfo {
    BackendKind kind = BackendKind::Cpu;
    std::string device;         // adapter name, or the CPU's model name
    std::string fallback_code;  // empty when no fallback happened
    std::string fallback_reason;
    uint32_t subgroup_size = 0;
    bool coopmat = false;
    bool fused_kernels = false;
    int n_threads = 0;
    // Partial offload: the last n_gpu_layers of n_layers (and the output layer) run on the GPU,
    // the others on the CPU; split says so in words ("28 of 32 layers on the GPU, 4 on the CPU:
    // the GPU budget is 6.0 GiB"). Empty, and n_gpu_layers 0, when one backend runs it all.
    uint32_t n_gpu_layers = 0, n_layers = 0;
    std::string split;
};

struct MemoryStats {
    uint64_t used = 0;    // bytes
    uint64_t budget = 0;  // bytes
    std::string source;   // "VK_EXT_memory_budget", "heap size + own allocations", "process RSS"
};

// One message of a conversation, as chat templates see it. role and content are enough for
// plain text turns. Anything more (an assistant's tool_calls, a tool result's tool_call_id or
// name, reasoning_content, content given as a list of parts) goes in `json`: the whole message
// as one JSON object, as in an OpenAI request or Hugging Face's apply_chat_template, e.g.
//   {"role": "assistant", "content": null, "tool_calls": [{"type": "function",
//    "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]}
// Where `json` is set, templates see exactly that object (every key, nothing renamed or
// converted) and role/content are not used for rendering; from_json fills them for display.
// Keep the order of keys when building it (nlohmann::ordered_json, not json): templates print
// objects such as tool arguments in that order, as Python does.
struct ChatMessage {
    std::string role;     // "system", "user", "assistant", "tool"
    std::string content;  // plain text
    std::string json;     // empty, or the whole message as a JSON object (see above)

    ChatMessage() = default;
    ChatMessage(std::string role_, std::string content_, std::string json_ = {})
        : role(std::move(role_)), content(std::move(content_)), json(std::move(json_)) {}

    // Checks a JSON message (an object with a string "role"; "content" a string, null, a list of
    // parts or absent; "tool_calls" a list of objects) and keeps it in `json`. role is copied;
    // content is the string, or the "text" of the text parts joined by newlines.
    static Result<ChatMessage> from_json(std::string_view json);
};

// How apply_chat_template renders, beyond the messages.
struct ChatTemplateOptions {
    bool add_generation_prompt = true;
    // A JSON array of tool definitions (OpenAI / Hugging Face form), or empty for none: then
    // templates see tools as none, as transformers passes tools=None.
    std::string tools_json;
    // Extra template variables, each a JSON value: {"enable_thinking", "false"},
    // {"reasoning_effort", "\"low\""}. They may override bos_token or eos_token.
    std::map<std::string, std::string> vars_json;
};

class Model {
public:
    static Result<std::unique_ptr<Model>> load(const std::string& path,
                                               const LoadParams& params = {});
    ~Model();
    Model(const Model&) = delete;
    Model& operator=(const Model&) = delete;

    const ModelInfo& info() const;
    const BackendInfo& backend() const;
    MemoryStats memory() const;

    // Tokenizer. add_special adds BOS/EOS as the metadata says.
    std::vector<int32_t> tokenize(std::string_view text, bool add_special,
                                  bool parse_special) const;
    std::string token_to_piece(int32_t token) const;  // raw bytes, may be part of a UTF-8 char
    std::string detokenize(std::span<const int32_t> tokens) const;
    int32_t bos() const;
    int32_t eos() const;
    bool is_end_of_generation(int32_t token) const;
    int n_vocab() const;

    // Renders with the model's chat template, or ChatML if it has none (used_fallback tells).
    Result<std::string> apply_chat_template(std::span<const ChatMessage> messages,
                                            bool add_generation_prompt,
                                            bool* used_fallback = nullptr) const;
    // The same with tools and extra template variables; a malformed message, tools list or
    // variable is an error naming it.
    Result<std::string> apply_chat_template(std::span<const ChatMessage> messages,
                                            const ChatTemplateOptions& options,
                                            bool* used_fallback = nullptr) const;

    struct Impl;
    Impl& impl() { return *m_impl; }
    const Impl& impl() const { return *m_impl; }

private:
    explicit Model(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> m_impl;
};

// ---- fit estimate --------------------------------------------------------------------------
// Whether a model fits the chosen device: weights + KV cache at n_ctx + scratch, against the
// device's memory budget. The loader refuses with the same numbers. A model that runs on the
// CPU (no usable GPU, or one its kernels cannot run) is checked against the free RAM instead.
struct ModelShape {
    std::string arch = "llama";  // general.architecture
    uint32_t n_layer = 0, n_embd = 0, n_head = 0, n_head_kv = 0, n_ff = 0, n_vocab = 0;
    uint32_t head_dim = 0;     // attention.key_length where the file gives it; 0: n_embd / n_head
    uint32_t n_ctx_train = 0;  // context_length; 0: unknown
    bool tied = false;         // no output.weight: the logits reuse token_embd.weight
    uint32_t sliding_window = 0;     // attention.sliding_window (Gemma 2/3); 0: none
    std::string file_type = "Q4_0";  // as llama-quantize names it: "Q4_0", "Q4_K_M", "F16"
};
// The memory to assume instead of measuring it (tests, "what if"); 0: measure.
struct FitLimits {
    uint64_t gpu_available = 0;   // bytes free on the chosen GPU
    uint64_t host_available = 0;  // bytes of RAM and swap free
    // As LoadParams: the most Ember may use on the GPU, and what it leaves free (0: none).
    uint64_t gpu_mem_limit = 0, gpu_mem_reserve = 0;
    int n_gpu_layers = -1;  // as LoadParams::n_gpu_layers
};
struct FitEstimate {
    // DoesNotFit: not on the GPU (the loader then runs it on the CPU); NoMemory: not in RAM
    // either, so it cannot run at all at this context.
    enum class Verdict { FitsGpu, DoesNotFit, CpuOnly, NoMemory };
    Verdict verdict = Verdict::CpuOnly;
    uint64_t weights = 0, kv_cache = 0, scratch = 0, total = 0;  // bytes needed
    uint64_t available = 0;        // bytes of the device's budget (of RAM on the CPU)
    std::string device;            // the adapter considered ("" for CPU only)
    std::string available_source;  // "VK_EXT_memory_budget", "heap size", "MemAvailable", ...
    bool no_gpu = false;           // no usable GPU at all (rather than this model not on one)
    std::string cpu_reason;        // why the CPU, when it is
    // DoesNotFit with gpu_layers > 0: the loader's split, the last gpu_layers of n_layers (and
    // the output) on the GPU and the rest on the CPU, using split_gpu_bytes of the GPU (weights,
    // kv_cache, scratch and total stay the whole model's). FitsGpu: gpu_layers == n_layers.
    // 0: the CPU runs it all.
    uint32_t gpu_layers = 0, n_layers = 0;
    uint64_t split_gpu_bytes = 0;
    std::string
        message;  // "fits on GPU", "does not fit: needs 4.3 GiB, 3.1 GiB free", "CPU only: ..."
};
// From a GGUF file's header (nothing is loaded). device: as LoadParams::device, or "cpu".
Result<FitEstimate> estimate_fit(const std::string& path, int n_ctx, const std::string& device = "",
                                 const FitLimits& limits = {});
// For a model not downloaded yet: the tensors a file of this shape and type holds (the types
// llama-quantize gives them), through the same estimate as a file's. An error for a shape or
// file type no such file can have.
Result<FitEstimate> estimate_fit(const ModelShape& shape, int n_ctx, const std::string& device = "",
                                 const FitLimits& limits = {});

// ---- session -------------------------------------------------------------------------------
struct SessionParams {
    int n_ctx = 0;  // 0 = the model's context; longer than it runs: "model.context_too_long"
};

// One conversation's KV cache on the model's backend.
class Session {
public:
    static Result<std::unique_ptr<Session>> create(Model& model, const SessionParams& params = {});
    ~Session();
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    // Appends tokens (one batch) at position n_past() and returns the logits of the last one.
    // The span stays valid until the next eval or eval_argmax (it may point into the backend's
    // own buffer).
    Result<std::span<const float>> eval(std::span<const int32_t> tokens);
    // Same, but returns only the argmax of the last logits (computed on the device if possible).
    Result<int32_t> eval_argmax(std::span<const int32_t> tokens);

    // A flag that, once set, ends an evaluation early, also while it waits for the GPU (between
    // prompt batches and inside a fence wait): eval and eval_argmax then fail with an error
    // whose code ends in ".cancelled", n_past() stays where it was, and nothing is left running
    // when the session goes. nullptr: none. generate() uses GenerateParams::cancel here.
    void set_cancel(const std::atomic<bool>* cancel);

    // Where the backend profiles (EMBER_VULKAN_PROFILE), whether the evaluations that follow
    // count in the profile it prints when the session goes (on at first): a benchmark turns it
    // off for its untimed runs. The report says how many submissions it left out.
    void set_profiling(bool on);

    void reset();               // forget everything
    void truncate(int n_keep);  // keep the first n_keep positions
    int n_past() const;
    int n_ctx() const;
    Model& model();

    struct Impl;

private:
    explicit Session(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> m_impl;
};

// ---- sampling ------------------------------------------------------------------------------
struct SamplingParams {
    float temperature = 0.8f;     // <= 0: greedy
    int top_k = 40;               // <= 0: off
    float top_p = 0.95f;          // >= 1: off
    float min_p = 0.05f;          // <= 0: off
    float repeat_penalty = 1.0f;  // 1: off (llama.cpp's default too)
    int repeat_last_n = 64;       // window of the penalty
    uint64_t seed = 0xE3BE5EEDULL;
};

class Sampler {
public:
    Sampler(const SamplingParams& params, int n_vocab);
    ~Sampler();
    int32_t sample(std::span<const float> logits);
    void accept(int32_t token);  // records the token for the repetition penalty
    void reset();
    bool is_greedy() const;

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

// ---- generation ----------------------------------------------------------------------------
enum class StopReason { EndOfGeneration, MaxTokens, Cancelled, ContextFull, Callback };

struct GenerateParams {
    int max_tokens = 256;
    SamplingParams sampling;
    bool stop_at_eog = true;
    // Once set, generation stops with StopReason::Cancelled; a GPU evaluation under way ends
    // at once (its token is not delivered), and the session keeps what was evaluated before.
    const std::atomic<bool>* cancel = nullptr;
    // Tokens the session already holds before `prompt` (a reused cache prefix): the repeat
    // penalty window sees them as if they had been evaluated now, so that reusing the cache
    // samples exactly as a fresh session would.
    std::span<const int32_t> history;
};

struct GenerateStats {
    int n_prompt = 0;
    int n_generated = 0;
    double prompt_ms = 0;  // prefill time
    double gen_ms = 0;     // decode time after the first token
    double ttft_ms = 0;    // start to first generated token
    double pp_tok_s = 0;
    double tg_tok_s = 0;
    StopReason stop = StopReason::MaxTokens;
    std::vector<int32_t> tokens;  // generated ids
};

// Called for each generated token with its text; complete UTF-8 only (bytes of a split
// character are held back). Return false to stop.
using TokenCallback = std::function<bool(int32_t token, std::string_view text)>;

// Evaluates the prompt (appended to what the session holds) and generates.
Result<GenerateStats> generate(Session& session, std::span<const int32_t> prompt,
                               const GenerateParams& params, const TokenCallback& on_token);

}  // namespace ember
