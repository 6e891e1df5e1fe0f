// describe_plan: the plan of a model on an adapter, stage by stage, without a device. The
// stages are recorded by a listing Recorder, so what it prints is what a runner records.
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>

#include "vulkan/forward.h"
#include "vulkan/stages_family.h"

namespace ember::vulkan {
namespace {

// A tensor as the upload would place it: rows split into pieces that fit one descriptor range
// (Q4_0 and Q8_0 rows as weights.cpp lays them out: quants, then scales padded to 16 bytes).
DeviceTensor describe_tensor(const Tensor& t, const PlacementLimits& lim) {
    DeviceTensor d;
    d.type = t.type;
    d.rows = t.rows();
    d.cols = t.cols();
    const auto tt = type_traits(t.type);
    const uint64_t stride =
        t.row_stride ? t.row_stride : t.n_bytes / uint64_t(std::max<int64_t>(1, t.rows()));
    const uint64_t bb = tt ? tt->block_bytes : 4, nb = stride / std::max<uint64_t>(bb, 1);
    const bool qs = t.type == GgmlType::Q4_0 || t.type == GgmlType::Q8_0;
    const uint64_t row = qs ? nb * (bb - 2) + (2 * nb + 15) / 16 * 16 : stride;
    d.stride_units = uint32_t(qs ? row / 16 : nb);
    const int64_t per_piece = int64_t(std::max<uint64_t>(
        1, std::min<uint64_t>(lim.max_range / std::max<uint64_t>(row, 1), uint64_t(d.rows))));
    for (int64_t r = 0; r < d.rows; r += per_piece) {
        const int64_t n = std::min(per_piece, d.rows - r);
        d.pieces.push_back({BufferRange{VK_NULL_HANDLE, 0, uint64_t(n) * row}, r, n});
    }
    return d;
}

// Why the plan gives a kernel its grid (by the kernel's family).
std::string reason_for(const std::string& kernel, const Plan& p) {
    const std::string sms = std::to_string(p.sm_count) + " SMs";
    auto starts = [&](const char* s) { return kernel.rfind(s, 0) == 0; };
    if (starts("matvec_fused_h_atomic"))
        return "subgroups own rows; columns split, sums added atomically; " +
               (p.sm_count ? "grid from " + sms : std::string("no SM count: plan's grid"));
    if (starts("matvec_fused_h"))
        return "subgroups own rows (F16 dot products); " +
               (p.sm_count ? "grid from " + sms : std::string("no SM count: plan's grid"));
    if (starts("matvec_fused")) return "4 rows a workgroup, F32 arithmetic";
    if (starts("matmul_coopmat_xh_big") || starts("matmul_coopmat_big"))
        return "tensor cores, 128x128 tiles: enough to fill 72% of " +
               std::to_string(p.coopmat_sms) + " SMs";
    if (starts("matmul_coopmat_xh_wide") || starts("matmul_coopmat_wide"))
        return "tensor cores, 128x64 tiles (1,024 rows or more)";
    if (starts("matmul_coopmat_xhi"))
        return "tensor cores, 64x64 tiles; F32 weights: high parts (Wh Xh of three products)";
    if (starts("matmul_coopmat_lo"))
        return "tensor cores, 64x64 tiles; F32 weights: a low part's product added (Wh Xl, Wl Xh)";
    if (starts("matmul_coopmat")) return "tensor cores, 64x64 tiles";
    if (starts("matmul_idot")) return "int8 dot products, 64x32 tiles";
    if (starts("matmul_") || starts("matvec_")) return "plain compute kernel";
    if (starts("attention_wo")) return "output projection fused, float atomics";
    if (starts("attention_split")) return "split over positions; grid set per step";
    if (starts("attention_coopmat_family_split"))
        return "tensor cores, 64 queries and half of a head's output a workgroup";
    if (starts("attention_coopmat")) return "tensor cores, 64 queries a workgroup";
    if (starts("attention")) return "one workgroup per head and token";
    if (starts("dequant_hi") || starts("dequant_lo"))
        return "F32 weights' F16 high or low parts, for three tensor-core products";
    return "elementwise";
}

std::string grid_of(const PlannedDispatch& d) {
    if (d.indirect) return "per step";
    std::string g = std::to_string(d.gx);
    if (d.gy > 1) {
        g += 'x';
        g += std::to_string(d.gy);
    }
    if (d.gz > 1) {
        g += 'x';
        g += std::to_string(d.gz);
    }
    return g;
}

// A model's tensors described (no device) and bound as the loader binds them.
struct Described {
    std::map<const void*, DeviceTensor> tensors;
    DeviceModel model;
};

Result<std::unique_ptr<Described>> describe_model(const LlamaModel& model, const Adapter& adapter,
                                                  const Plan& plan) {
    auto d = std::make_unique<Described>();
    const PlacementLimits lim = placement_limits(adapter, 0);
    auto key = [](const Tensor& t) -> const void* { return t.data ? (const void*)t.data : &t; };
    for (const Tensor* t : model_tensors(model))
        if (t->present()) d->tensors.emplace(key(*t), describe_tensor(*t, lim));
    EMBER_ASSIGN_OR_RETURN(d->model, bind_device_model(
                                         model,
                                         [&](const Tensor& t) -> const DeviceTensor* {
                                             auto it = d->tensors.find(key(t));
                                             return it == d->tensors.end() ? nullptr : &it->second;
                                         },
                                         adapter, plan));
    return d;
}

// The buffers of a runner of n_ctx on this adapter, by size only.
Buffers sized_buffers(const Adapter& a, const DeviceModel& m, const Step& s, int n_ctx) {
    Buffers b;
    b.attn_split = decode_attention_split(m.plan, m.hp, n_ctx);
    b.k_cache.assign(m.layers.size(), BufferRange{});
    b.v_cache.assign(m.layers.size(), BufferRange{});
    b.attn_grid = {VK_NULL_HANDLE, 0, 12};
    if (uses_family_stages(m.hp)) b.qk_ss = {VK_NULL_HANDLE, 0, 4 * family_qk_ss_floats(m.hp)};
    if (s.n > 1 && a.coopmat_nv) b.xh = {VK_NULL_HANDLE, 0, 16};
    if (s.n > 1 && m.weight_scratch) b.wh = {VK_NULL_HANDLE, 0, m.weight_scratch};
    return b;
}

std::vector<PlannedDispatch> list_dispatches(const Adapter& a, const DeviceModel& m, const Step& s,
                                             int n_ctx, Status& st) {
    Recorder rec(a, m.plan, nullptr);
    std::vector<Stage> stages;
    for (const Stage& x : forward_stages(rec, m, s))
        if (x.layer == 0) stages.push_back(x);
    std::vector<PlannedDispatch> out;
    Recorder listing(a, m.plan, &out);
    st = record_stages(listing, m, sized_buffers(a, m, s, n_ctx), s, stages);
    return out;
}

// One step's dispatches, the first layer's only (the others repeat them).
std::string list_step(const Adapter& a, const DeviceModel& m, const Step& s, int n_ctx) {
    Status st;
    std::string text;
    char line[512];
    for (const PlannedDispatch& d : list_dispatches(a, m, s, n_ctx, st)) {
        std::snprintf(line, sizeof line, "  %-30s %-34s %5u %9s  %s\n", d.stage.c_str(),
                      d.kernel.c_str(), d.threads, grid_of(d).c_str(),
                      reason_for(d.kernel, m.plan).c_str());
        text += line;
    }
    if (!st.ok()) text += "  (" + st.error().message + ")\n";
    return text;
}

}  // namespace

std::string describe_plan(const LlamaModel& model, const Adapter& adapter, const Plan& plan) {
    auto described = describe_model(model, adapter, plan);
    if (!described) return "no plan: " + described.error().message + "\n";
    const DeviceModel* m = &(*described)->model;
    const int n_ctx = int(std::clamp<uint32_t>(model.hp.n_ctx_train, 1, 4096));

    std::string text = "plan for '" + adapter.info.name + "' (" + vendor_name(plan.vendor) + ": " +
                       plan.vendor_reason + ")\n";
    text += "  multiprocessors: " +
            (plan.sm_count ? std::to_string(plan.sm_count) + " (VK_NV_shader_sm_builtins)"
                           : std::string("unknown (fixed grids)")) +
            "; tensor cores: " + (adapter.coopmat_nv ? "yes" : "no") +
            "; F16 arithmetic: " + (adapter.float16 ? "yes" : "no") + "\n";
    text += "  prompt batches: " + std::string(plan.batching_reason) + "\n";
    text += "  prompt matmuls: " +
            std::string(adapter.coopmat_nv ? "tensor cores (VK_NV_cooperative_matrix)"
                        : plan.matmul_idot
                            ? "int8 dot products (VK_KHR_shader_integer_dot_product) from " +
                                  std::to_string(plan.idot_min_tokens) + " tokens"
                            : "plain compute kernel (no tensor cores or int8 dot products)") +
            "\n";
    text += "  fused decode kernels: " +
            std::string(m->fused_layers ? "yes"
                        : plan.fused    ? "no (the weights' types)"
                                        : "off") +
            "\n";
    text += "  decode attention split over positions: " + std::to_string(plan.attn_threads) +
            " threads, " + std::to_string(plan.attn_positions) +
            " positions a thread a pass, runs of " + std::to_string(plan.attn_min_passes) +
            "+ passes, up to " + std::to_string(plan.attn_workgroups) + " workgroups and " +
            std::to_string(plan.attn_max_group) +
            (plan.attn_max_group == 1 ? " query head" : " query heads") + " a workgroup\n";
    text += "decode step at a " + std::to_string(n_ctx) + "-token context (layer 0 of " +
            std::to_string(model.layers.size()) + "):\n";
    text +=
        "  stage                          kernel                             threads      grid"
        "  reason\n";
    text += list_step(adapter, *m, {1, Output::Argmax, false}, n_ctx);
    text += "decode step at a short context (one attention run per head; layer 0):\n";
    text += list_step(adapter, *m, {1, Output::Argmax, true}, n_ctx);
    text += "prompt batch of " + std::to_string(kMaxBatch) + " tokens (layer 0):\n";
    text += list_step(adapter, *m, {kMaxBatch, Output::Logits, false}, n_ctx);
    return text;
}

Result<std::vector<PlannedDispatch>> planned_dispatches(const LlamaModel& model,
                                                        const Adapter& adapter, const Plan& plan,
                                                        const Step& step, int n_ctx) {
    EMBER_ASSIGN_OR_RETURN(auto described, describe_model(model, adapter, plan));
    Status st;
    auto out = list_dispatches(adapter, described->model, step, n_ctx, st);
    EMBER_TRY(st);
    return out;
}

}  // namespace ember::vulkan
