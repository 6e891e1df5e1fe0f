// The Llama forward pass on a Vulkan device: the model's weights bound to their device copies,
// the sizes a runner needs, and the warm-up of every pipeline the plan's stages use (the
// runner itself: runner.cpp; the stages: stages.cpp).
#include "vulkan/forward.h"

#include <algorithm>

#include "vulkan/stages_family.h"
#include "vulkan/stages_family_decode.h"
namespace ember::vulkan {

int next_batch_size(double token_s, double target_s, int capacity, int left) {
    double n = target_s <= 0 ? double(capacity) : token_s > 0 ? target_s / token_s : kFirstBatch;
    // Never below kFirstBatch: a short prompt stays one batch, so that its logits do not
    // depend on how busy the machine was (a split rounds earlier batches' K/V to F16).
    n = std::min({std::max(n, double(kFirstBatch)), double(capacity), double(left)});
    return std::max(1, int(n));
}

uint64_t weight_scratch_bytes(const Adapter& a, const LlamaModel& model) {
    uint64_t most = 0;
    for (const auto& L : model.layers)
        for (const Tensor* t : {&L.wq, &L.wk, &L.wv, &L.wqkv, &L.wo, &L.ffn_gate, &L.ffn_up,
                                &L.ffn_gate_up, &L.ffn_down})
            if (t->present())  // a family has either the fused matrices or their parts
                most = std::max(most, dequant_scratch_bytes(a, t->type, t->rows(), t->cols()));
    return most;
}

RunnerSizes runner_sizes(const Plan& plan, const LlamaHParams& hp, int n_ctx,
                         uint64_t weight_scratch, uint32_t first_layer) {
    const Dims d = dims_of(hp);
    const uint64_t B = uint64_t(batch_capacity(n_ctx));
    RunnerSizes s;
    for (uint32_t l = first_layer; l < hp.n_layer; ++l) {
        const uint32_t ring = uses_family_stages(hp) ? family_kv_ring(hp, l, n_ctx, int(B)) : 0;
        s.kv_cache += 2ull * (ring ? ring : uint64_t(n_ctx)) * d.Dkv * 2;
    }
    const AttentionShape dec = attention_shape(hp, 1);
    const uint64_t part = decode_attention_partials(dec, decode_attention_split(plan, hp, n_ctx));
    s.scratch =
        4 * (B * (3ull * d.E + 2ull * d.Dq + 2ull * d.Dkv + 2ull * d.F) + d.V + 1 + part +
             2 * hp.n_head + hp.n_head_kv +
             (uses_family_stages(hp) ? B * family_wide_floats(hp) + family_qk_ss_floats(hp) : 0)) +
        step_bytes(int(B)) + weight_scratch + (first_layer ? 4 * B * d.E : 0);
    return s;
}

std::vector<const Tensor*> model_tensors(const LlamaModel& m, uint32_t first_layer) {
    std::vector<const Tensor*> t = {&m.output_norm, &m.output};
    if (first_layer == 0) t.insert(t.begin(), &m.tok_embd);
    if (m.rope_freqs.present()) t.push_back(&m.rope_freqs);
    if (m.rope_long.present()) t.push_back(&m.rope_long), t.push_back(&m.rope_short);
    const std::span<const LlamaLayer> layers =
        std::span(m.layers).subspan(std::min<size_t>(first_layer, m.layers.size()));
    for (const auto& L : layers)
        for (const Tensor* p : {&L.attn_norm, &L.wq, &L.wk, &L.wv, &L.wo, &L.ffn_norm, &L.ffn_gate,
                                &L.ffn_up, &L.ffn_down})
            t.push_back(p);
    if (!uses_family_stages(m.hp)) return t;
    // The other families: what they have beyond Llama's, and none of what they lack.
    std::erase_if(t, [](const Tensor* p) { return !p->present(); });
    for (const auto& L : layers)
        for (const Tensor* p : {&L.wqkv, &L.bq, &L.bk, &L.bv, &L.q_norm, &L.k_norm,
                                &L.post_attn_norm, &L.ffn_gate_up, &L.post_ffn_norm})
            if (p->present()) t.push_back(p);
    return t;
}

Result<DeviceModel> bind_device_model(const LlamaModel& m,
                                      const std::function<const DeviceTensor*(const Tensor&)>& find,
                                      const Adapter& a, const Plan& plan, uint32_t first_layer) {
    Status st;
    auto need = [&](const Tensor& t) {
        const DeviceTensor* d = find(t);
        if (!d && st.ok())
            st = make_error("vulkan.missing_tensor", "tensor '" + t.name + "' was not uploaded");
        return d;
    };
    DeviceModel dm;
    dm.hp = m.hp;
    // The CPU embeds the tokens where it runs the first layers.
    dm.tok_embd = first_layer ? find(m.tok_embd) : need(m.tok_embd);
    dm.first_layer = first_layer;
    dm.output_norm = need(m.output_norm);
    dm.output = need(m.output);
    if (m.rope_freqs.present()) dm.rope_freqs = need(m.rope_freqs);
    if (m.rope_long.present()) dm.rope_long = need(m.rope_long), dm.rope_short = need(m.rope_short);
    // A tensor the family does not have stays null (model/llama.h says which).
    const bool family = uses_family_stages(m.hp);
    auto opt = [&](const Tensor& t) { return t.present() ? need(t) : nullptr; };
    auto base = [&](const Tensor& t) { return family ? opt(t) : need(t); };
    for (uint32_t l = first_layer; l < m.layers.size(); ++l) {
        const LlamaLayer& L = m.layers[l];
        dm.layers.push_back({base(L.attn_norm), base(L.wq), base(L.wk), base(L.wv), base(L.wo),
                             base(L.ffn_norm), base(L.ffn_gate), base(L.ffn_up), base(L.ffn_down)});
        DeviceLayer& D = dm.layers.back();
        D.wqkv = opt(L.wqkv), D.bq = opt(L.bq), D.bk = opt(L.bk), D.bv = opt(L.bv);
        D.q_norm = opt(L.q_norm), D.k_norm = opt(L.k_norm);
        D.post_attn_norm = opt(L.post_attn_norm), D.gate_up = opt(L.ffn_gate_up);
        D.post_ffn_norm = opt(L.post_ffn_norm);
    }
    if (!st.ok()) return st.take_error();
    // The CPU's layers: placeholders, so that building a stage list may look at any layer.
    if (first_layer && !dm.layers.empty())
        dm.layers.insert(dm.layers.begin(), first_layer, dm.layers.front());
    dm.plan = plan;
    dm.weight_scratch = weight_scratch_bytes(a, m);
    // The other families run their own stages (stages_family.cpp), and their decode steps the
    // fused kernels where those read the weights (stages_family_decode.cpp).
    if (family) {
        dm.fused_layers = family_fused_layers(a, plan, dm);
        dm.fused_output = dm.fused_layers && dm.output_norm->type == GgmlType::F32 &&
                          fused_matvec_supports(a, plan, {dm.output});
        return dm;
    }
    const bool f32_norms =
        std::all_of(dm.layers.begin(), dm.layers.end(), [](const DeviceLayer& L) {
            return L.attn_norm->type == GgmlType::F32 && L.ffn_norm->type == GgmlType::F32;
        });
    // matvec_fused.comp computes 4 rows per workgroup, all of one of Q, K, V.
    dm.fused_layers = plan.fused && f32_norms && !dm.layers.empty() && dm.hp.head_dim % 2 == 0 &&
                      dm.hp.n_rot <= dm.hp.head_dim && (dm.hp.n_head * dm.hp.head_dim) % 4 == 0 &&
                      dm.hp.n_kv_dim() % 4 == 0;
    for (const DeviceLayer& L : dm.layers)
        dm.fused_layers = dm.fused_layers && fused_matvec_supports(a, plan, {L.wq, L.wk, L.wv}) &&
                          fused_matvec_supports(a, plan, {L.gate, L.up}) &&
                          L.gate->type == L.up->type && fused_matvec_supports(a, plan, {L.wo}) &&
                          L.down && fused_matvec_add_supported(a, plan, *L.down);
    dm.fused_output = plan.fused && dm.output_norm->type == GgmlType::F32 &&
                      fused_matvec_supports(a, plan, {dm.output});
    dm.weight_scratch = weight_scratch_bytes(a, m);
    return dm;
}

uint32_t decode_attention_split(const Plan& plan, const LlamaHParams& hp, int n_ctx) {
    const AttentionShape dec = attention_shape(hp, 1);
    // (The families' split attention also takes heads whose eighths do not divide its threads.)
    const bool split = decode_attention_supported(plan, dec, uses_family_stages(hp));
    return split ? decode_attention_splits(plan, dec, n_ctx) : 0;
}

Status warm_up_pipelines(Context& ctx, const DeviceModel& model) {
    Recorder dry(ctx, VK_NULL_HANDLE, model.plan);
    // Nothing is bound: the buffers that change which kernels run only need their sizes.
    Buffers none;
    none.attn_split = decode_attention_split(model.plan, model.hp, 1) ? 1 : 0;
    none.k_cache.assign(model.layers.size(), BufferRange{});
    none.v_cache.assign(model.layers.size(), BufferRange{});
    if (uses_family_stages(model.hp))
        none.qk_ss = {VK_NULL_HANDLE, 0, 4 * family_qk_ss_floats(model.hp)};
    // The prompt steps' F16 copies, as a runner of prompt batches has them on this adapter.
    Buffers prompt = none;
    if (ctx.adapter().coopmat_nv) prompt.xh = {VK_NULL_HANDLE, 0, 16};
    if (model.weight_scratch) prompt.wh = {VK_NULL_HANDLE, 0, model.weight_scratch};
    // Decode steps (logits, argmax, a short context), then prompt batches: 2 tokens, whole
    // 64 x 64 tiles, and full batches (the 128 x 128 tiles, whole and partial).
    const Step steps[] = {{1, Output::Logits, false},          {1, Output::Argmax, false},
                          {1, Output::Logits, true},           {2, Output::None, false},
                          {64, Output::None, false},           {kMaxBatch, Output::None, false},
                          {kMaxBatch - 1, Output::None, false}};
    for (const Step& s : steps)
        EMBER_TRY(
            record_stages(dry, model, s.n > 1 ? prompt : none, s, forward_stages(dry, model, s)));
    return ctx.pipelines().save_cache();
}

}  // namespace ember::vulkan
