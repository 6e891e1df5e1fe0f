// Partial offload (offload.h): a runner that evaluates a step on the CPU's layers, then on the
// GPU's, and the GPU memory limit's parser.
#include "session/offload.h"

#include <cctype>
#include <cmath>
#include <set>
#include <vector>

#include "common/log.h"
#include "common/overrides.h"
#include "cpu/backend_cpu.h"
#include "session/memory.h"
#ifdef EMBER_HAVE_VULKAN
#include "vulkan/forward.h"
#endif

namespace ember {
namespace {

// A prompt of at least this many tokens runs every layer on the device where it holds the CPU's
// layers' weights too (the device reads them over the bus once a batch, which beats the CPU's
// matmuls from a few tokens on); shorter ones and decode steps run the first layers on the CPU.
constexpr size_t kWholePromptTokens = 32;

class SplitRunner final : public Runner {
public:
    SplitRunner(std::unique_ptr<Runner> cpu, std::unique_ptr<Runner> gpu, uint32_t n_embd)
        : m_cpu(std::move(cpu)), m_gpu(std::move(gpu)), m_embd(n_embd) {}

    Status forward(std::span<const int32_t> tokens, int pos, float* logits) override {
        EMBER_ASSIGN_OR_RETURN(bool whole, before(tokens, pos));
        EMBER_TRY(m_gpu->forward(tokens, pos, logits));
        return after(whole, tokens.size(), pos);
    }
    bool has_logits_view() const override { return m_gpu->has_logits_view(); }
    Result<std::span<const float>> forward_view(std::span<const int32_t> tokens, int pos) override {
        EMBER_ASSIGN_OR_RETURN(bool whole, before(tokens, pos));
        EMBER_ASSIGN_OR_RETURN(auto logits, m_gpu->forward_view(tokens, pos));
        EMBER_TRY(after(whole, tokens.size(), pos));
        return logits;
    }
    bool has_device_argmax() const override { return m_gpu->has_device_argmax(); }
    Result<int32_t> forward_argmax(std::span<const int32_t> tokens, int pos) override {
        EMBER_ASSIGN_OR_RETURN(bool whole, before(tokens, pos));
        EMBER_ASSIGN_OR_RETURN(int32_t token, m_gpu->forward_argmax(tokens, pos));
        EMBER_TRY(after(whole, tokens.size(), pos));
        return token;
    }
    int n_ctx() const override { return m_gpu->n_ctx(); }
    void set_cancel(const std::atomic<bool>* cancel) override {
        m_cpu->set_cancel(cancel);
        m_gpu->set_cancel(cancel);
    }
    void set_profiling(bool on) override {
        m_cpu->set_profiling(on);
        m_gpu->set_profiling(on);
    }

private:
    // Either the whole prompt goes to the device (true; the CPU's K/V rows it has not seen,
    // those of decode steps since the last whole prompt, copied there first), or the CPU runs
    // its layers and hands the residual stream on.
    Result<bool> before(std::span<const int32_t> tokens, int pos) {
        // Rows from pos on are rewritten now, by one side only.
        m_synced = std::min(m_synced, pos);
        if (tokens.size() >= kWholePromptTokens && m_gpu->runs_whole_prompts()) {
            EMBER_TRY(m_cpu->copy_kv(*m_gpu, m_synced, pos, true));
            m_synced = pos;
            return true;
        }
        EMBER_TRY(first_layers(tokens, pos));
        return false;
    }
    // After a whole prompt: its rows of the CPU's layers back to the CPU's cache.
    Status after(bool whole, size_t n, int pos) {
        if (!whole) return {};
        EMBER_TRY(m_cpu->copy_kv(*m_gpu, pos, pos + int(n), false));
        m_synced = pos + int(n);
        return {};
    }
    // The CPU's layers: the residual stream after them, hidden [n][E], becomes the GPU's input.
    Status first_layers(std::span<const int32_t> tokens, int pos) {
        m_hidden.resize(tokens.size() * m_embd);
        EMBER_TRY(m_cpu->forward_hidden(tokens, pos, m_hidden.data()));
        m_gpu->set_hidden_input(m_hidden.data());
        return {};
    }

    std::unique_ptr<Runner> m_cpu, m_gpu;
    uint32_t m_embd;
    std::vector<float> m_hidden;  // [n][E]
    // Rows [0, m_synced) of the CPU's layers' K/V are the same on both sides.
    int m_synced = 0;
};

class SplitModel final : public BackendModel {
public:
    SplitModel(std::unique_ptr<BackendModel> cpu, std::unique_ptr<BackendModel> gpu,
               BackendInfo info, uint32_t n_embd)
        : m_cpu(std::move(cpu)), m_gpu(std::move(gpu)), m_info(std::move(info)), m_embd(n_embd) {}
    Result<std::unique_ptr<Runner>> create_runner(int n_ctx) override {
        EMBER_ASSIGN_OR_RETURN(auto gpu, m_gpu->create_runner(n_ctx));
        EMBER_ASSIGN_OR_RETURN(auto cpu, m_cpu->create_runner(n_ctx));
        return std::unique_ptr<Runner>(new SplitRunner(std::move(cpu), std::move(gpu), m_embd));
    }
    const BackendInfo& info() const override { return m_info; }
    MemoryStats memory() const override { return m_gpu->memory(); }

private:
    std::unique_ptr<BackendModel> m_cpu, m_gpu;
    BackendInfo m_info;
    uint32_t m_embd;
};

}  // namespace

std::unique_ptr<BackendModel> make_split_model(std::unique_ptr<BackendModel> cpu,
                                               std::unique_ptr<BackendModel> gpu, BackendInfo info,
                                               uint32_t n_embd) {
    return std::make_unique<SplitModel>(std::move(cpu), std::move(gpu), std::move(info), n_embd);
}

std::string describe_split(uint32_t gpu_layers, uint32_t n_layers, uint64_t budget,
                           const std::string& budget_source) {
    return std::to_string(gpu_layers) + " of " + std::to_string(n_layers) + " layers on the GPU, " +
           std::to_string(n_layers - gpu_layers) + " on the CPU: the GPU budget is " +
           format_bytes(budget) + " (" + budget_source + ")";
}

#ifdef EMBER_HAVE_VULKAN
uint64_t host_copy_bytes(const LlamaModel& model, uint32_t first_layer, int n_ctx) {
    if (first_layer == 0) return 0;
    std::set<const uint8_t*> device, host;
    for (const Tensor* t : vulkan::model_tensors(model, first_layer)) device.insert(t->data);
    uint64_t bytes = 0;
    for (const Tensor* t : vulkan::model_tensors(model, 0))
        if (t->present() && !device.count(t->data) && host.insert(t->data).second)
            bytes += t->n_bytes;
    // F16 K and V of those layers.
    const uint64_t kv_row = uint64_t(model.hp.n_kv_dim()) + model.hp.n_v_dim();
    return bytes + 2ull * uint64_t(n_ctx) * kv_row * first_layer;
}

uint64_t affordable_host_copy(const CpuMemoryNeed& need, uint64_t copy, uint64_t available) {
    CpuMemoryNeed with_copy = need;
    with_copy.buffers += copy;
    return with_copy.total() <= available ? copy : 0;
}

Result<std::unique_ptr<BackendModel>> load_on_gpu(const LlamaModel& model, const LoadParams& params,
                                                  vulkan::Options opt, const std::string& path) {
    const uint32_t L = model.hp.n_layer;
    opt.mem_limit = params.gpu_mem_limit;
    opt.mem_reserve = params.gpu_mem_reserve;
    if (params.n_gpu_layers == 0)
        return make_error("offload.no_gpu_layers", "n_gpu_layers is 0: no layers on the GPU");
    const bool all = params.n_gpu_layers < 0 || uint32_t(params.n_gpu_layers) >= L;
    if (all) {
        auto whole = vulkan::create_backend_model(model, opt);
        if (whole.ok() || whole.error().code != "vulkan.does_not_fit" || L < 2) return whole;
    }
    // Not all of it: the most last layers that fit (at least one, and one CPU layer).
    const vulkan::GpuBudget budget{opt.fake_available, opt.mem_limit, opt.mem_reserve};
    const int most = int(L) - 1;
    EMBER_ASSIGN_OR_RETURN(
        vulkan::FitEstimate split,
        vulkan::estimate_split(model, opt.n_ctx, opt.device, budget,
                               all ? most : std::min(params.n_gpu_layers, most)));
    if (!split.fits) {
        // Not one layer with the output: the whole model's numbers say why.
        opt.first_layer = 0;
        return vulkan::create_backend_model(model, opt);
    }
    // The CPU's layers' KV cache and buffers must fit the RAM, as a CPU load's are checked.
    // Whole prompts on the device add their weights' device-layout copy in host-visible
    // memory and an F16 copy of their K/V (host_copy_bytes).
    CpuMemoryNeed need = cpu_runtime_need(model.hp, opt.n_ctx, params.n_threads);
    need.kv_cache = need.kv_cache / L * split.first_layer;
    const uint64_t wanted = host_copy_bytes(model, split.first_layer, opt.n_ctx);
    const uint64_t host_copy = affordable_host_copy(need, wanted, host_memory().available);
    if (host_copy < wanted)
        EMBER_LOG_INFO(
            "partial offload: the RAM cannot also hold a %s copy of the CPU layers "
            "for the GPU, so prompts run split between the CPU and the GPU",
            format_bytes(wanted).c_str());
    need.buffers += host_copy;
    EMBER_TRY(check_host_memory(need, opt.n_ctx, path, "running the first layers"));
    opt.first_layer = split.first_layer;
    opt.whole_prompts = host_copy > 0;
    // Progress: the upload, then the CPU layers' repack, each its share of the layers; both
    // stop on the cancel flag or a progress callback that says no.
    const float gpu_share = float(L - split.first_layer) / float(L);
    const auto progress = opt.progress;
    opt.progress = [progress, gpu_share](float p) { return !progress || progress(gpu_share * p); };
    EMBER_ASSIGN_OR_RETURN(auto gpu, vulkan::create_backend_model(model, opt));
    cpu::LoadOptions copt;
    copt.cancel = opt.cancel;
    copt.check_rows = opt.check_rows;  // its tensors checked as it reads them, as the upload's
    copt.progress = [progress, gpu_share](float p) {
        return !progress || progress(gpu_share + (1 - gpu_share) * p);
    };
    EMBER_ASSIGN_OR_RETURN(
        auto cpu, cpu::create_backend_model(model, params.n_threads, int(split.first_layer), copt));
    BackendInfo info = gpu->info();
    info.n_gpu_layers = L - split.first_layer;
    info.n_layers = L;
    info.n_threads = cpu->info().n_threads;
    info.split = describe_split(info.n_gpu_layers, L, split.available, split.available_source);
    if (opt.whole_prompts)
        info.split += "; prompts of " + std::to_string(kWholePromptTokens) +
                      "+ tokens run every layer on the GPU, reading the CPU layers' copy in " +
                      format_bytes(host_copy) + " of host RAM";
    EMBER_LOG_INFO("partial offload: %s", info.split.c_str());
    return make_split_model(std::move(cpu), std::move(gpu), std::move(info), model.hp.n_embd);
}
#endif

Result<uint64_t> parse_byte_size(const std::string& text) {
    auto bad = [&] {
        return make_error("params.bad_size", "'" + text +
                                                 "' is not a size: a number of bytes, or one "
                                                 "with a unit such as 6G, 512M or 1.5GiB");
    };
    size_t i = 0;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
        ++i;
    if (i == 0) return bad();
    double value = 0;
    try {
        size_t used = 0;
        value = std::stod(text.substr(0, i), &used);
        if (used != i) return bad();
    } catch (...) {
        return bad();
    }
    std::string unit;
    for (char c : text.substr(i))
        if (!std::isspace(static_cast<unsigned char>(c)))
            unit += char(std::toupper(static_cast<unsigned char>(c)));
    // Binary units either way ("6G" = 6 GiB), as llama.cpp and free(1) count them.
    static const std::pair<const char*, double> units[] = {{"", 1},
                                                           {"B", 1},
                                                           {"K", 1024.0},
                                                           {"KB", 1024.0},
                                                           {"KIB", 1024.0},
                                                           {"M", 1048576.0},
                                                           {"MB", 1048576.0},
                                                           {"MIB", 1048576.0},
                                                           {"G", 1073741824.0},
                                                           {"GB", 1073741824.0},
                                                           {"GIB", 1073741824.0},
                                                           {"T", 1099511627776.0},
                                                           {"TB", 1099511627776.0},
                                                           {"TIB", 1099511627776.0}};
    for (const auto& [name, scale] : units) {
        if (unit != name) continue;
        const double bytes = std::floor(value * scale);
        if (!(bytes < 1.8e19)) return bad();
        return uint64_t(bytes);
    }
    return bad();
}

}  // namespace ember
