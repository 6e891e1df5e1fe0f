#include "vulkan/vulkan_backend.h"

#include <cmath>
#include <set>

#include "common/log.h"
#include "common/stopwatch.h"
#include "vulkan/fault.h"
#include "vulkan/forward.h"
#include "vulkan/stages_family.h"

namespace ember {

Result<std::vector<DeviceInfo>> list_devices() {
    EMBER_ASSIGN_OR_RETURN(auto instance, vulkan::Instance::get());
    EMBER_ASSIGN_OR_RETURN(auto adapters, vulkan::enumerate_adapters(instance));
    std::vector<DeviceInfo> out;
    for (const auto& a : adapters) out.push_back(a.info);
    return out;
}

namespace vulkan {
namespace {

class VulkanBackendModel final : public BackendModel {
public:
    VulkanBackendModel(std::shared_ptr<LoadedModel> loaded, BackendInfo info)
        : m_loaded(std::move(loaded)), m_info(std::move(info)) {}
    Result<std::unique_ptr<Runner>> create_runner(int n_ctx) override {
        return vulkan::create_runner(m_loaded, n_ctx);
    }
    const BackendInfo& info() const override { return m_info; }
    MemoryStats memory() const override {
        const Adapter& a = m_loaded->ctx->adapter();
        Budget b = query_budget(a);
        MemoryStats s;
        s.used = own_allocations(a.uuid);
        s.budget = b.budget;
        s.source = a.has_memory_budget ? "VK_EXT_memory_budget" : "heap size + own allocations";
        return s;
    }

private:
    std::shared_ptr<LoadedModel> m_loaded;
    BackendInfo m_info;
};

FitEstimate estimate_for(const LlamaModel& model, int n_ctx, const Adapter& adapter,
                         uint64_t weights, const GpuBudget& budget, uint32_t first_layer = 0) {
    FitEstimate f;
    RunnerSizes rs =
        runner_sizes(make_plan(adapter), model.hp, n_ctx,
                     n_ctx > 1 ? weight_scratch_bytes(adapter, model) : 0, first_layer);
    f.first_layer = first_layer;
    f.weights = weights;
    f.kv_cache = rs.kv_cache;
    f.scratch = rs.scratch;
    f.total = f.weights + f.kv_cache + f.scratch;
    Budget b = query_budget(adapter);
    const uint64_t fake_available = budget.fake_available;
    f.available = fake_available ? fake_available : b.available;
    f.available_source = fake_available ? "override" : b.source;
    if (budget.mem_reserve) {
        f.available = f.available > budget.mem_reserve ? f.available - budget.mem_reserve : 0;
        f.available_source += " less " + format_bytes(budget.mem_reserve) + " left free";
    }
    if (budget.mem_limit && budget.mem_limit < f.available) {
        f.available = budget.mem_limit;
        f.available_source = "the GPU memory limit";
    }
    f.device = adapter.info.name;
    f.fits = f.total <= f.available;
    return f;
}

Error does_not_fit(const FitEstimate& f, int n_ctx) {
    return make_error("vulkan.does_not_fit",
                      "the model needs " + format_bytes(f.total) + " on '" + f.device +
                          "' (weights " + format_bytes(f.weights) + ", KV cache " +
                          format_bytes(f.kv_cache) + " at " + std::to_string(n_ctx) +
                          " tokens, scratch " + format_bytes(f.scratch) + "), " +
                          format_bytes(f.available) + " available (" + f.available_source + ")");
}

}  // namespace

Status check_model_supported(const LlamaModel& model) {
    const LlamaHParams& hp = model.hp;
    auto refuse = [](const std::string& why) {
        return make_error("vulkan.unsupported_model", "the Vulkan backend does not run " + why);
    };
    // YaRN, LongRoPE and rope.scaling.attn_factor run in the family stages (uses_family_stages
    // picks them for YaRN and attn_factor; a Phi-3 file, LongRoPE's, is a family one anyway).
    if (model.rope_long.present() && !uses_family_stages(hp))
        return refuse("LongRoPE factors in a plain Llama file yet");
    if (hp.v_head() != hp.head_dim)
        return refuse("a value head size (" + std::to_string(hp.v_head()) +
                      ") other than the key head size (" + std::to_string(hp.head_dim) + ") yet");
    // What the stages read (head sizes, F32 norms); every family but plain Llama runs the
    // family stages (stages_family.cpp).
    EMBER_TRY(family_stages_support(model));
    if (uses_family_stages(hp)) return {};
    // Plain Llama's stages read no biases, head norms or fused weights.
    for (const LlamaLayer& L : model.layers)
        if (L.bq.present() || L.bk.present() || L.bv.present() || L.wqkv.present() ||
            L.q_norm.present() || L.post_attn_norm.present() || L.ffn_gate_up.present())
            return refuse("attention biases, q/k norms, post norms or fused weights yet");
    return {};
}

Result<FitEstimate> estimate_fit(const LlamaModel& model, int n_ctx, const std::string& device,
                                 uint64_t fake_available) {
    GpuBudget budget;
    budget.fake_available = fake_available;
    return estimate_fit(model, n_ctx, device, budget);
}

Result<FitEstimate> estimate_fit(const LlamaModel& model, int n_ctx, const std::string& device,
                                 const GpuBudget& budget, uint32_t first_layer) {
    EMBER_TRY(check_model_supported(model));
    EMBER_ASSIGN_OR_RETURN(Adapter adapter, Context::pick_adapter(device));
    EMBER_ASSIGN_OR_RETURN(uint64_t weights,
                           WeightStore::estimate_bytes(model_tensors(model, first_layer),
                                                       placement_limits(adapter, 0)));
    return estimate_for(model, n_ctx, adapter, weights, budget, first_layer);
}

Result<FitEstimate> estimate_split(const LlamaModel& model, int n_ctx, const std::string& device,
                                   const GpuBudget& budget, int max_gpu_layers) {
    EMBER_TRY(check_model_supported(model));
    EMBER_ASSIGN_OR_RETURN(Adapter adapter, Context::pick_adapter(device));
    const uint32_t L = model.hp.n_layer;
    const uint32_t most = max_gpu_layers < 0 ? L : std::min<uint32_t>(uint32_t(max_gpu_layers), L);
    // Fewer layers on the device need less: the first split that fits has the most of them.
    FitEstimate last;
    for (uint32_t first = L - most; first < L; ++first) {
        EMBER_ASSIGN_OR_RETURN(
            uint64_t weights,
            WeightStore::estimate_bytes(model_tensors(model, first), placement_limits(adapter, 0)));
        last = estimate_for(model, n_ctx, adapter, weights, budget, first);
        if (last.fits) return last;
    }
    last.first_layer = L;
    last.fits = false;
    return last;
}

Result<std::unique_ptr<BackendModel>> create_backend_model(const LlamaModel& model,
                                                           const Options& opt) {
    const Stopwatch lap;
    EMBER_TRY(check_model_supported(model));
    EMBER_ASSIGN_OR_RETURN(Adapter adapter, Context::pick_adapter(opt.device));
    EMBER_ASSIGN_OR_RETURN(
        uint64_t weights,
        WeightStore::estimate_bytes(model_tensors(model, opt.first_layer),
                                    placement_limits(adapter, opt.max_range_override)));
    const GpuBudget budget{opt.fake_available, opt.mem_limit, opt.mem_reserve};
    FitEstimate fit = estimate_for(model, opt.n_ctx, adapter, weights, budget, opt.first_layer);
    if (!fit.fits) return does_not_fit(fit, opt.n_ctx);

    ContextOptions co;
    co.device = opt.device;
    co.disk_pipeline_cache = opt.disk_pipeline_cache;
    co.max_range_override = opt.max_range_override;
    auto loaded = std::make_shared<LoadedModel>();
    EMBER_ASSIGN_OR_RETURN(loaded->ctx, Context::create(co));
    const double t_device = lap.ms();
    // Whole prompts: every tensor, those only the CPU's layers read in host-visible memory.
    const bool whole = opt.whole_prompts && opt.first_layer > 0;
    std::set<const uint8_t*> on_device;
    for (const Tensor* t : model_tensors(model, opt.first_layer)) on_device.insert(t->data);
    InHost in_host;
    if (whole) in_host = [&](const Tensor& t) { return !on_device.count(t.data); };
    EMBER_ASSIGN_OR_RETURN(
        loaded->store,
        WeightStore::upload(*loaded->ctx, model_tensors(model, whole ? 0 : opt.first_layer),
                            opt.progress, opt.cancel, opt.check_rows, in_host));
    const double t_upload = lap.ms();
    Plan plan = make_plan(loaded->ctx->adapter(), read_overrides());
    if (opt.adjust_plan) opt.adjust_plan(plan);
    const WeightStore& store = *loaded->store;
    EMBER_ASSIGN_OR_RETURN(loaded->model, bind_device_model(
                                              model, [&](const Tensor& t) { return store.find(t); },
                                              loaded->ctx->adapter(), plan, opt.first_layer));
    if (whole) {
        EMBER_ASSIGN_OR_RETURN(loaded->whole,
                               bind_device_model(
                                   model, [&](const Tensor& t) { return store.find(t); },
                                   loaded->ctx->adapter(), plan, 0));
        loaded->has_whole = true;
    }
    const double t_bound = lap.ms();
    Status warm = warm_up_pipelines(*loaded->ctx, loaded->model);
    if (warm.ok() && whole) warm = warm_up_pipelines(*loaded->ctx, loaded->whole);
    if (!warm.ok()) {
        // A cache that cannot be written is not fatal; a pipeline that cannot be built is.
        if (warm.error().code != "vulkan.cache_write") return warm.take_error();
        EMBER_LOG_WARN("vulkan: %s", warm.error().message.c_str());
    }
    fault::model_loaded();
    const Adapter& a = loaded->ctx->adapter();
    BackendInfo info;
    info.kind = BackendKind::Vulkan;
    info.device = a.info.name;
    info.subgroup_size = a.subgroup_size;
    info.fused_kernels = loaded->model.fused_layers;
    info.coopmat = a.coopmat_nv;
    EMBER_LOG_INFO("vulkan: '%s' holds %s of weights in %zu tensors", a.info.name.c_str(),
                   format_bytes(loaded->store->bytes()).c_str(),
                   model_tensors(model, opt.first_layer).size());
    if (whole)
        EMBER_LOG_INFO(
            "vulkan: and %s of the CPU's layers' weights in host-visible memory, "
            "for prompts run whole on the device",
            format_bytes(loaded->store->host_bytes()).c_str());
    // Where the load's time went (ember-cli generate -v).
    const double t_upload_s = (t_upload - t_device) / 1000.0;
    EMBER_LOG_INFO(
        "vulkan: loaded in %.0f ms: adapter and device %.0f ms, weights %.0f ms "
        "(%.2f GB/s), plan and binding %.0f ms, pipelines %.0f ms",
        lap.ms(), t_device, t_upload - t_device,
        t_upload_s > 0 ? double(loaded->store->bytes()) / 1e9 / t_upload_s : 0.0,
        t_bound - t_upload, lap.ms() - t_bound);
    return std::unique_ptr<BackendModel>(
        new VulkanBackendModel(std::move(loaded), std::move(info)));
}

}  // namespace vulkan
}  // namespace ember
