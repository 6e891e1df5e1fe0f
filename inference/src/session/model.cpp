// ember::Model: the GGUF file, its tokenizer and the backend that holds its weights.
#include <algorithm>
#include <cstdio>
#include <fstream>
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
        case BackendKind::Auto: return "auto";
        case BackendKind::Cpu: return "cpu";
        case BackendKind::Vulkan: return "vulkan";
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
                      head + "this model was trained on (context_length), and it states no RoPE "
                             "scaling that allows more" +
                          fix);
}

Model::Model(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
Model::~Model() = default;

Result<std::unique_ptr<Model>> Model::load(const std::string& path, const LoadParams& params) {
    const Stopwatch lap;
    auto impl = std::make_unique<Impl>();
    impl->params = params;
    auto cancelled = [&] { return params.cancel && params.cancel->load(); };
    // Progress never goes back: a CPU load after a failed upload counts from where that ended.
    float reported = 0;
    auto report = [&](float p) {
        reported = std::max(reported, p);
        return !params.progress || params.progress(reported);
    };

    EMBER_ASSIGN_OR_RETURN(impl->file, gguf::File::open(path));
    auto tok = Tokenizer::from_gguf(*impl->file);
    if (!tok) {  // the tokenizer's messages name the key but not the file
        Error e = tok.take_error();
        return make_error(e.code, path + ": " + e.message);
    }
    impl->tokenizer = std::move(tok).value();
    EMBER_ASSIGN_OR_RETURN(impl->llama, load_llama(*impl->file));
    const double t_parsed = lap.ms();
    // The NaN/Inf check of the weights: the Vulkan upload runs it on each chunk as it reads it
    // (the file is read once and each page given back after its upload), the CPU backend on each
    // tensor before it repacks it; check_rest checks what neither read.
    std::mutex checked_mutex;
    std::set<const uint8_t*> checked;  // tensors' data a backend checked
    auto check_rows = [&](const Tensor& t, int64_t row0, int64_t nrows) {
        {
            std::lock_guard lock(checked_mutex);
            checked.insert(t.data);
        }
        return check_finite_rows(t, row0, nrows, path);
    };
    auto check_rest = [&] {
        return check_finite_weights(impl->llama, path, params.n_threads,
                                    [&](const Tensor& t) { return checked.count(t.data) > 0; });
    };
    if (impl->tokenizer->n_vocab() != int(impl->llama.hp.n_vocab))
        return make_error("model.vocab_mismatch",
                          path + ": the tokenizer has " + std::to_string(impl->tokenizer->n_vocab()) +
                              " tokens but the model has " + std::to_string(impl->llama.hp.n_vocab) +
                              " embedding rows");
    impl->info = describe(*impl->file, impl->llama, *impl->tokenizer);
    if (cancelled() || !report(0.05f)) return make_error("model.cancelled", "loading cancelled");

    // Pick the backend: Vulkan when asked or available, the CPU otherwise, always saying why.
    BackendInfo fallback;
    // By default 2048 tokens, or the training context if shorter.
    const int64_t default_ctx =
        std::max<int64_t>(1, std::min<int64_t>(2048, impl->llama.hp.n_ctx_train));
    EMBER_ASSIGN_OR_RETURN(const int n_ctx,
                           choose_context(impl->llama.hp, params.n_ctx, default_ctx, path));
    impl->n_ctx = n_ctx;
    if (params.backend != BackendKind::Cpu) {
#ifdef EMBER_HAVE_VULKAN
        vulkan::Options opt;
        opt.device = params.device;
        opt.n_ctx = n_ctx;
        opt.cancel = params.cancel;
        opt.progress = [&](float p) { return report(0.05f + 0.95f * p); };
        opt.check_rows = check_rows;
        auto vk = load_on_gpu(impl->llama, params, opt, path);  // partial offload where needed
        if (vk.ok()) {
            impl->backend = std::move(vk).value();
            EMBER_TRY(check_rest());
            // No host copy of the weights after upload, unless the CPU runs some layers.
            if (!impl->backend->info().n_gpu_layers) impl->file->release_tensor_data();
        } else if (vk.error().code == "vulkan.cancelled" || vk.error().code == "cpu.cancelled" ||
                   cancelled()) {  // (cpu: the first layers of a split)
            return make_error("model.cancelled", "loading cancelled");
        } else if (vk.error().code == "model.nonfinite_weights") {
            return vk.take_error();
        } else {
            checked.clear();  // an upload that stopped part way checked only part of a tensor
            fallback.fallback_code = vk.error().code;
            fallback.fallback_reason = vk.error().message;
        }
#else
        fallback.fallback_code = "vulkan.disabled";
        fallback.fallback_reason = "this build of Ember has no Vulkan backend";
#endif
        if (!impl->backend)
            EMBER_LOG_WARN("using the CPU: %s", fallback.fallback_reason.c_str());
    }
    if (!impl->backend) {
        // Before the repacked weights and a session's KV cache are allocated.
        const CpuMemoryNeed need =
            cpu_memory_need(*impl->file, impl->llama, n_ctx, params.n_threads, true);
        EMBER_TRY(check_host_memory(need, n_ctx, path, "running this model"));
        // The backend checks each tensor it reads just before repacking it (the file is read
        // once), reporting per tensor from where the load stands to 1.
        cpu::LoadOptions copt;
        copt.cancel = params.cancel;
        const float base = reported;
        copt.progress = [&](float p) { return report(base + (1.0f - base) * p); };
        copt.check_rows = check_rows;
        auto cpu = cpu::create_backend_model(impl->llama, params.n_threads, -1, copt);
        if (!cpu.ok() && (cpu.error().code == "cpu.cancelled" || cancelled()))
            return make_error("model.cancelled", "loading cancelled");
        EMBER_ASSIGN_OR_RETURN(impl->backend, std::move(cpu));
        EMBER_TRY(check_rest());  // nothing left, unless the backend reads fewer tensors
        impl->backend_info = impl->backend->info();
        impl->backend_info.fallback_code = fallback.fallback_code;
        impl->backend_info.fallback_reason = fallback.fallback_reason;
    } else {
        impl->backend_info = impl->backend->info();
    }
    if (!report(1.0f)) return make_error("model.cancelled", "loading cancelled");
    EMBER_LOG_INFO("load: %s in %.0f ms: file, tokenizer and tensors %.0f ms, %s backend %.0f ms",
                   path.c_str(), lap.ms(), t_parsed, backend_name(impl->backend_info.kind),
                   lap.ms() - t_parsed);
    EMBER_LOG_INFO("load: host memory after the load: %s", process_memory().c_str());
    return std::unique_ptr<Model>(new Model(std::move(impl)));
}

const ModelInfo& Model::info() const { return m_impl->info; }
const BackendInfo& Model::backend() const { return m_impl->backend_info; }
MemoryStats Model::memory() const { return m_impl->backend->memory(); }

std::vector<int32_t> Model::tokenize(std::string_view text, bool add_special, bool parse_special) const {
    return m_impl->tokenizer->encode(text, add_special, parse_special);
}
std::string Model::token_to_piece(int32_t token) const { return m_impl->tokenizer->token_to_piece(token); }
std::string Model::detokenize(std::span<const int32_t> tokens) const {
    return m_impl->tokenizer->decode(std::vector<int32_t>(tokens.begin(), tokens.end()));
}
int32_t Model::bos() const { return m_impl->tokenizer->bos(); }
int32_t Model::eos() const { return m_impl->tokenizer->eos(); }
bool Model::is_end_of_generation(int32_t token) const {
    return m_impl->tokenizer->is_end_of_generation(token);
}
int Model::n_vocab() const { return int(m_impl->llama.hp.n_vocab); }

}  // namespace ember
