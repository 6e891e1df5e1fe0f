// ember::Model: the GGUF file, its tokenizer and the backend that holds its weights.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <mutex>
#include <set>

#include "common/log.h"
#include "common/stopwatch.h"
#include "cpu/backend_cpu.h"
#include "ember/ember.h"
#include "gguf/gguf.h"
#include "model/inspect.h"
#include "model/validate.h"
#include "session/memory.h"
#include "session/model_impl.h"
#include "session/offload.h"
#include "templates/chat_template.h"
#include "tokenizer/tokenizer.h"
#ifdef EMBER_HAVE_VULKAN
#include "vulkan/vulkan_backend.h"
#endif

namespace ember {

const char* backend_name(BackendKind kind) {
    switch (kind) {
        case BackendKind::Auto:
            return "auto";
        case BackendKind::Cpu:
            return "cpu";
        case BackendKind::Vulkan:
            return "vulkan";
    }
    return "unknown";
}

#ifndef EMBER_HAVE_VULKAN
Result<std::vector<DeviceInfo>> list_devices() {
    return make_error("vulkan.disabled", "this build of Ember has no Vulkan backend");
}
#endif

namespace {

// The process's resident memory from /proc/self/status (Linux; elsewhere empty), for the load's
// log line: what the weights' host copy costs after the load (file pages: the mapped model).
std::string process_memory() {
    std::ifstream f("/proc/self/status");
    std::string key, out;
    long long kb = 0;
    while (f >> key) {
        if ((key == "VmRSS:" || key == "VmHWM:" || key == "RssAnon:" || key == "RssFile:") &&
            f >> kb)
            out += (out.empty() ? "" : ", ") + key.substr(0, key.size() - 1) + " " +
                   std::to_string(kb / 1024) + " MiB";
        std::getline(f, key);
    }
    return out;
}

// What Model::info() says: what ember::inspect says of the file (the same function), with the
// tokenizer the load built.
ModelInfo describe(const gguf::File& f, const LlamaModel& m, const Tokenizer& tok) {
    ModelInfo info = describe_file(f, &m);
    info.tokenizer_model = tok.model_name();
    return info;
}

// One load's steps and the state they share: its progress, its cancel flag and which tensors'
// data a backend checked for NaN/Inf.
class Loader {
public:
    Loader(Model::Impl& impl, const std::string& path, const LoadParams& params)
        : m_impl(impl), m_path(path), m_params(params) {}

    bool cancelled() const { return m_params.cancel && m_params.cancel->load(); }

    // Progress never goes back: a CPU load after a failed upload counts from where that ended.
    bool report(float p) {
        m_reported = std::max(m_reported, p);
        return !m_params.progress || m_params.progress(m_reported);
    }

    // The file, its tokenizer and the model's tensors (views into the file), and its info.
    Status read_file() {
        EMBER_ASSIGN_OR_RETURN(m_impl.file, gguf::File::open(m_path));
        auto tok = Tokenizer::from_gguf(*m_impl.file);
        if (!tok) {  // the tokenizer's messages name the key but not the file
            Error e = tok.take_error();
            return make_error(e.code, m_path + ": " + e.message);
        }
        m_impl.tokenizer = std::move(tok).value();
        EMBER_ASSIGN_OR_RETURN(m_impl.llama, load_llama(*m_impl.file));
        return {};
    }

    Status check_vocab() const {
        if (m_impl.tokenizer->n_vocab() == int(m_impl.llama.hp.n_vocab)) return {};
        return make_error("model.vocab_mismatch", m_path + ": the tokenizer has " +
                                                      std::to_string(m_impl.tokenizer->n_vocab()) +
                                                      " tokens but the model has " +
                                                      std::to_string(m_impl.llama.hp.n_vocab) +
                                                      " embedding rows");
    }

    // By default 2048 tokens, or the training context if shorter.
    Status choose_n_ctx() {
        const int64_t default_ctx =
            std::max<int64_t>(1, std::min<int64_t>(2048, m_impl.llama.hp.n_ctx_train));
        EMBER_ASSIGN_OR_RETURN(
            m_impl.n_ctx, choose_context(m_impl.llama.hp, m_params.n_ctx, default_ctx, m_path));
        return {};
    }

    // Vulkan, with partial offload where needed. Where it cannot run the model, m_impl.backend
    // stays empty and fallback says why; a cancel or non-finite weights are errors.
    Status try_gpu(BackendInfo& fallback) {
#ifdef EMBER_HAVE_VULKAN
        vulkan::Options opt;
        opt.device = m_params.device;
        opt.n_ctx = m_impl.n_ctx;
        opt.cancel = m_params.cancel;
        opt.progress = [this](float p) { return report(0.05f + 0.95f * p); };
        opt.check_rows = check_rows();
        auto vk = load_on_gpu(m_impl.llama, m_params, opt, m_path);
        if (vk.ok()) {
            m_impl.backend = std::move(vk).value();
            EMBER_TRY(check_rest());
            // No host copy of the weights after upload, unless the CPU runs some layers.
            if (!m_impl.backend->info().n_gpu_layers) m_impl.file->release_tensor_data();
        } else if (vk.error().code == "vulkan.cancelled" || vk.error().code == "cpu.cancelled" ||
                   cancelled()) {  // (cpu: the first layers of a split)
            return make_error("model.cancelled", "loading cancelled");
        } else if (vk.error().code == "model.nonfinite_weights") {
            return vk.take_error();
        } else {
            m_checked.clear();  // an upload that stopped part way checked only part of a tensor
            fallback.fallback_code = vk.error().code;
            fallback.fallback_reason = vk.error().message;
        }
#else
        fallback.fallback_code = "vulkan.disabled";
        fallback.fallback_reason = "this build of Ember has no Vulkan backend";
#endif
        if (!m_impl.backend) EMBER_LOG_WARN("using the CPU: %s", fallback.fallback_reason.c_str());
        return {};
    }

    // The CPU backend, if the host has the memory for it.
    Status load_on_cpu() {
        // Before the repacked weights and a session's KV cache are allocated.
        const CpuMemoryNeed need =
            cpu_memory_need(*m_impl.file, m_impl.llama, m_impl.n_ctx, m_params.n_threads, true);
        EMBER_TRY(check_host_memory(need, m_impl.n_ctx, m_path, "running this model"));
        // The backend checks each tensor it reads just before repacking it (the file is read
        // once), reporting per tensor from where the load stands to 1.
        cpu::LoadOptions copt;
        copt.cancel = m_params.cancel;
        const float base = m_reported;
        copt.progress = [this, base](float p) { return report(base + (1.0f - base) * p); };
        copt.check_rows = check_rows();
        auto cpu = cpu::create_backend_model(m_impl.llama, m_params.n_threads, -1, copt);
        if (!cpu.ok() && (cpu.error().code == "cpu.cancelled" || cancelled()))
            return make_error("model.cancelled", "loading cancelled");
        EMBER_ASSIGN_OR_RETURN(m_impl.backend, std::move(cpu));
        return check_rest();  // nothing left, unless the backend reads fewer tensors
    }

private:
    // The NaN/Inf check of the weights: the Vulkan upload runs it on each chunk as it reads it
    // (the file is read once and each page given back after its upload), the CPU backend on
    // each tensor before it repacks it; check_rest checks what neither read.
    std::function<Status(const Tensor&, int64_t, int64_t)> check_rows() {
        return [this](const Tensor& t, int64_t row0, int64_t nrows) {
            {
                std::lock_guard lock(m_checked_mutex);
                m_checked.insert(t.data);
            }
            return check_finite_rows(t, row0, nrows, m_path);
        };
    }
    Status check_rest() {
        return check_finite_weights(m_impl.llama, m_path, m_params.n_threads,
                                    [&](const Tensor& t) { return m_checked.count(t.data) > 0; });
    }

    Model::Impl& m_impl;
    const std::string& m_path;
    const LoadParams& m_params;
    float m_reported = 0;
    std::mutex m_checked_mutex;
    std::set<const uint8_t*> m_checked;  // tensors' data a backend checked
};

}  // namespace

Result<int> choose_context(const LlamaHParams& hp, int64_t n_ctx, int64_t default_ctx,
                           const std::string& path) {
    const int64_t most = hp.max_ctx();  // in 64 bits, as context_length may be 2^31 or more
    if (n_ctx <= 0) return int(default_ctx);
    if (n_ctx <= most) return int(n_ctx);
    const std::string head = path + ": a context of " + std::to_string(n_ctx) +
                             " tokens is longer than the " + std::to_string(most) + " tokens ";
    const std::string fix = "; choose a context of at most " + std::to_string(most) + " tokens";
    if (hp.n_ctx_scaled > hp.n_ctx_train) {
        char factor[32];
        std::snprintf(factor, sizeof factor, "%g", 1.0 / double(hp.rope_freq_scale));
        return make_error("model.context_too_long",
                          head + "this model's RoPE scaling allows (its original context of " +
                              std::to_string(hp.n_ctx_orig) + " tokens x rope.scaling.factor " +
                              factor + ")" + fix);
    }
    return make_error("model.context_too_long",
                      head +
                          "this model was trained on (context_length), and it states no RoPE "
                          "scaling that allows more" +
                          fix);
}

Model::Model(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
Model::~Model() = default;

Result<std::unique_ptr<Model>> Model::load(const std::string& path, const LoadParams& params) {
    const Stopwatch lap;
    auto impl = std::make_unique<Impl>();
    impl->params = params;
    Loader loader(*impl, path, params);

    // Read the file, its tokenizer and its tensors, and describe the model.
    EMBER_TRY(loader.read_file());
    const double t_parsed = lap.ms();
    EMBER_TRY(loader.check_vocab());
    impl->info = describe(*impl->file, impl->llama, *impl->tokenizer);
    if (loader.cancelled() || !loader.report(0.05f))
        return make_error("model.cancelled", "loading cancelled");

    // Pick the backend: Vulkan when asked or available, the CPU otherwise, always saying why.
    EMBER_TRY(loader.choose_n_ctx());
    BackendInfo fallback;
    if (params.backend != BackendKind::Cpu) EMBER_TRY(loader.try_gpu(fallback));
    if (!impl->backend) {
        EMBER_TRY(loader.load_on_cpu());
        impl->backend_info = impl->backend->info();
        impl->backend_info.fallback_code = fallback.fallback_code;
        impl->backend_info.fallback_reason = fallback.fallback_reason;
    } else {
        impl->backend_info = impl->backend->info();
    }
    if (!loader.report(1.0f)) return make_error("model.cancelled", "loading cancelled");
    EMBER_LOG_INFO("load: %s in %.0f ms: file, tokenizer and tensors %.0f ms, %s backend %.0f ms",
                   path.c_str(), lap.ms(), t_parsed, backend_name(impl->backend_info.kind),
                   lap.ms() - t_parsed);
    EMBER_LOG_INFO("load: host memory after the load: %s", process_memory().c_str());
    return std::unique_ptr<Model>(new Model(std::move(impl)));
}

const ModelInfo& Model::info() const {
    return m_impl->info;
}
const BackendInfo& Model::backend() const {
    return m_impl->backend_info;
}
MemoryStats Model::memory() const {
    return m_impl->backend->memory();
}

std::vector<int32_t> Model::tokenize(std::string_view text, bool add_special,
                                     bool parse_special) const {
    return m_impl->tokenizer->encode(text, add_special, parse_special);
}
std::string Model::token_to_piece(int32_t token) const {
    return m_impl->tokenizer->token_to_piece(token);
}
std::string Model::detokenize(std::span<const int32_t> tokens) const {
    return m_impl->tokenizer->decode(std::vector<int32_t>(tokens.begin(), tokens.end()));
}
int32_t Model::bos() const {
    return m_impl->tokenizer->bos();
}
int32_t Model::eos() const {
    return m_impl->tokenizer->eos();
}
bool Model::is_end_of_generation(int32_t token) const {
    return m_impl->tokenizer->is_end_of_generation(token);
}
int Model::n_vocab() const {
    return int(m_impl->llama.hp.n_vocab);
}

}  // namespace ember
