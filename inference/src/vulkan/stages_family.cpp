#include "vulkan/stages_family.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <string>
#include <vector>

#include "vulkan/ops_family.h"

namespace ember::vulkan {

bool uses_family_stages(const LlamaHParams& hp) {
    if (hp.traits().arch != Arch::Llama || hp.n_head * hp.head_dim != hp.n_embd ||
        hp.n_rot != hp.head_dim || hp.rope_freq_scale != 1.0f || hp.attn_softcap > 0.0f ||
        hp.final_softcap > 0.0f || hp.attention_scale() != 1.0f / std::sqrt(float(hp.head_dim)) ||
        hp.yarn.ext_factor != 0.0f || hp.rope_attn_factor != 1.0f || hp.v_head() != hp.head_dim)
        return true;
    // Llama's decode attention tiles a workgroup with 8-dimension slices of a head, so heads of
    // other sizes than powers of two (96, 80) took its generic path without the output
    // projection; the families' kernel takes them with it.
    if (!std::has_single_bit(hp.head_dim)) return true;
    for (uint32_t l = 0; l < hp.n_layer; ++l) {
        const LayerHParams lh = hp.layer_hp(l);
        if (lh.swa || lh.rope_base != hp.rope_freq_base || lh.rope_freq_scale != 1.0f) return true;
    }
    return false;
}

Status family_stages_support(const LlamaModel& model) {
    const LlamaHParams& hp = model.hp;
    auto refuse = [](const std::string& why) {
        return make_error("vulkan.unsupported_model", "the Vulkan backend does not run " + why);
    };
    if (hp.head_dim == 0 || hp.head_dim > 512 || hp.head_dim % 2 != 0)
        return refuse("a head size of " + std::to_string(hp.head_dim) +
                      " (an even size up to 512 is needed)");
    if (hp.n_rot % 2 != 0 || hp.n_rot > hp.head_dim)
        return refuse("rope.dimension_count " + std::to_string(hp.n_rot) +
                      " (an even count up to the head size is needed)");
    if (hp.n_head_kv == 0 || hp.n_head % hp.n_head_kv != 0)
        return refuse("a head count that is not a multiple of the KV head count");
    // Norms, biases and rope factors are read as F32.
    for (const LlamaLayer& L : model.layers)
        for (const Tensor* t : {&L.attn_norm, &L.ffn_norm, &L.bq, &L.bk, &L.bv, &L.q_norm,
                                &L.k_norm, &L.post_attn_norm, &L.post_ffn_norm})
            if (t->present() && t->type != GgmlType::F32)
                return refuse("a norm or bias (" + t->name + ") that is not F32");
    if (model.output_norm.type != GgmlType::F32 ||
        (model.rope_freqs.present() && model.rope_freqs.type != GgmlType::F32))
        return refuse("an output norm or rope_freqs that is not F32");
    return {};
}

uint32_t family_kv_ring(const LlamaHParams& hp, uint32_t l, int n_ctx, int batch) {
    if (!hp.layer_hp(l).swa || hp.n_swa == 0) return 0;
    const int64_t rows = int64_t(hp.n_swa) + batch - 1;
    return rows < n_ctx ? uint32_t(rows) : 0;
}

BufferRange family_rope_factors(const DeviceModel& m, int n_ctx) {
    if (!m.rope_long || !m.rope_short) return {};
    const DeviceTensor* t =
        uint64_t(n_ctx) > uint64_t(m.hp.n_ctx_orig) ? m.rope_long : m.rope_short;
    return t->pieces[0].range;
}

uint64_t family_wide_floats(const LlamaHParams& hp) {
    const ArchTraits& a = hp.traits();
    if (!a.fused_qkv && !a.fused_gate_up) return 0;
    return std::max<uint64_t>(uint64_t(hp.n_q_dim()) + 2 * hp.n_kv_dim(), 2 * uint64_t(hp.n_ff));
}

uint64_t family_qk_ss_floats(const LlamaHParams& hp) {
    if (!hp.traits().qk_norm) return 0;
    return (uint64_t(hp.n_head) + hp.n_head_kv) * (hp.head_dim / 2);
}

bool is_family_stage(StageOp op) {
    return op >= StageOp::FamilyEmbedScale && op <= StageOp::FamilySoftcap;
}

std::vector<Stage> family_stages(const DeviceModel& m, const Step& step) {
    std::vector<Stage> s;
    const ArchTraits& arch = m.hp.traits();
    s.push_back({StageOp::Embed, 0, "embed"});
    if (arch.embd_scale) s.push_back({StageOp::FamilyEmbedScale, 0, "embedding scale"});
    for (uint32_t l = 0; l < m.layers.size(); ++l) {
        const DeviceLayer& L = m.layers[l];
        s.push_back({StageOp::FamilyAttnNorm, l, "attention norm"});
        s.push_back({StageOp::FamilyQkv, l, "matmul q/k/v"});
        s.push_back({StageOp::FamilyQkvRope, l, "bias + qk norm + rope + kv store"});
        s.push_back({StageOp::FamilyAttention, l, "attention"});
        s.push_back({StageOp::FamilyWo, l, "matmul wo"});
        if (L.post_attn_norm) s.push_back({StageOp::FamilyPostAttnNorm, l, "post-attention norm"});
        s.push_back({StageOp::FamilyAttnResidual, l, "residual"});
        s.push_back({StageOp::FamilyFfnNorm, l, "ffn norm"});
        s.push_back({StageOp::FamilyGateUp, l, "matmul gate/up"});
        s.push_back({StageOp::FamilyGlu, l, "gated activation"});
        s.push_back({StageOp::FamilyDown, l, "matmul down"});
        if (L.post_ffn_norm) s.push_back({StageOp::FamilyPostFfnNorm, l, "post-ffn norm"});
        s.push_back({StageOp::FamilyFfnResidual, l, "residual"});
    }
    if (step.out == Output::None) return s;
    s.push_back({StageOp::OutputHead, 0, "output norm + head"});
    if (m.hp.final_softcap > 0.0f) s.push_back({StageOp::FamilySoftcap, 0, "logit soft-cap"});
    if (step.out == Output::Argmax) s.push_back({StageOp::Argmax, 0, "argmax"});
    s.push_back({StageOp::Readback, 0, "readback"});
    return s;
}

namespace {

BufferRange range_of(const DeviceTensor* t) {
    return t ? t->pieces[0].range : BufferRange{};
}

// Where a layer's q, k and v rows are: a fused attn_qkv writes rows [q | k | v]
// into b.wide (Phi-3); separate projections write b.q, b.k and b.v.
struct QkvViews {
    RowView q, k, v;
};
QkvViews qkv_views(const DeviceModel& m, const DeviceLayer& L, const Buffers& b) {
    const Dims d = dims_of(m.hp);
    if (L.wqkv) {
        const uint32_t row = d.Dq + 2 * d.Dkv;
        return {{b.wide, 0, row}, {b.wide, d.Dq, row}, {b.wide, d.Dq + d.Dkv, row}};
    }
    return {{b.q, 0, d.Dq}, {b.k, 0, d.Dkv}, {b.v, 0, d.Dkv}};
}

uint32_t kv_ring(const Buffers& b, uint32_t l) {
    return l < b.kv_ring.size() ? b.kv_ring[l] : 0;
}

}  // namespace

QkvRope family_qkv_rope(const DeviceModel& m, const Buffers& b, int n, uint32_t l) {
    const LlamaHParams& hp = m.hp;
    const DeviceLayer& L = m.layers[l];
    const LayerHParams lh = hp.layer_hp(l);
    const QkvViews v = qkv_views(m, L, b);
    QkvRope r;
    r.q = v.q, r.k = v.k, r.v = v.v;
    r.bq = range_of(L.bq), r.bk = range_of(L.bk), r.bv = range_of(L.bv);
    r.q_norm = range_of(L.q_norm), r.k_norm = range_of(L.k_norm);
    r.eps = hp.rms_eps;
    // The runner's factors (LongRoPE's long or short set by its context), else rope_freqs
    r.ff = b.rope_ff.buffer ? b.rope_ff : range_of(m.rope_freqs);
    r.attn_factor = hp.rope_attn_factor;
    r.ext_factor = hp.yarn.ext_factor;
    r.beta_fast = hp.yarn.beta_fast, r.beta_slow = hp.yarn.beta_slow;
    r.n_ctx_orig = int(hp.n_ctx_orig);
    r.k_cache = b.k_cache[l], r.v_cache = b.v_cache[l], r.step = b.step;
    r.n_tokens = n, r.n_head = int(hp.n_head), r.n_head_kv = int(hp.n_head_kv);
    r.head_dim = int(hp.head_dim), r.n_rot = int(hp.n_rot);
    r.freq_base = lh.rope_base, r.freq_scale = lh.rope_freq_scale;
    r.neox = hp.traits().rope == RopeMode::Neox;
    r.kv_ring = kv_ring(b, l);
    return r;
}

namespace {

Status qkv_rope(Recorder& rec, const DeviceModel& m, const Buffers& b, int n, uint32_t l) {
    return op_qkv_rope(rec, family_qkv_rope(m, b, n, l));
}

// A prompt attends over its own unrounded K/V (on the tensor cores: over the F16
// cache, which qkv_rope filled first); a decoded token reads the F16 cache.
Status attention(Recorder& rec, const DeviceModel& m, const Buffers& b, int n, uint32_t l) {
    const LlamaHParams& hp = m.hp;
    const QkvViews v = qkv_views(m, m.layers[l], b);
    FamilyAttention a;
    a.q = v.q;
    a.k_cache = b.k_cache[l], a.v_cache = b.v_cache[l], a.out = b.att, a.step = b.step;
    if (n > 1) a.k_batch = v.k, a.v_batch = v.v;
    a.s = {n, int(hp.n_head), int(hp.n_head_kv), int(hp.head_dim), hp.attention_scale()};
    a.softcap = hp.attn_softcap;
    a.window = hp.layer_hp(l).swa ? int(hp.n_swa) : 0;
    a.kv_ring = kv_ring(b, l);
    // A layer of F32 weights keeps F32 attention: the tensor cores' F16 Q, K, V and
    // probabilities alone move the reference models' logits by about 7e-4 (relative L2).
    const DeviceTensor* wq = m.layers[l].wqkv ? m.layers[l].wqkv : m.layers[l].wq;
    a.keep_f32 = wq && wq->type == GgmlType::F32;
    return op_attention_family(rec, a);
}

// Where a layer's gate and up rows are: a fused ffn_up writes rows [gate | up]
// into b.wide (Phi-3); separate projections write b.g and b.u.
void gate_up_views(const DeviceModel& m, const DeviceLayer& L, const Buffers& b, RowView& gate,
                   RowView& up) {
    const uint32_t F = m.hp.n_ff;
    if (L.gate_up) {
        gate = {b.wide, 0, 2 * F}, up = {b.wide, F, 2 * F};
    } else {
        gate = {b.g, 0, F}, up = {b.u, 0, F};
    }
}

Status norm(Recorder& rec, const DeviceModel& m, BufferRange x, const DeviceTensor* w,
            BufferRange out, int n, bool f16 = false) {
    const int E = int(m.hp.n_embd);
    return op_rms_norm(rec, x, 0, range_of(w), out, 0, E, n, E, m.hp.rms_eps, f16);
}

// Prompt steps on the tensor cores: the matmuls ws (one input) read an F16
// copy of their input in b.xh. Where all of them do, the stage before writes
// its output there as F16 and nothing else (the norms, the gated product).
std::vector<const DeviceTensor*> present(std::initializer_list<const DeviceTensor*> ws) {
    std::vector<const DeviceTensor*> v;
    for (const DeviceTensor* w : ws)
        if (w) v.push_back(w);
    return v;
}
// The xh argument of op_matmul for the matmuls ws reading x [n][cols]: b.xh
// where the stage before wrote it (written), else an F16 copy of x where one
// of them reads F16, else none (they read x). The copy has its own profile
// label; the matmuls after it keep their stage's (label).
Result<BufferRange> f16_of(Recorder& rec, const Buffers& b, BufferRange x, int n,
                           std::initializer_list<const DeviceTensor*> ws, bool written,
                           const char* label) {
    if (written) return b.xh;
    const auto v = present(ws);
    if (!b.xh.size || std::none_of(v.begin(), v.end(), [&](const DeviceTensor* w) {
            return matmul_reads_f16(rec, *w, n);
        }))
        return BufferRange{};
    rec.tag("f16 copy");
    EMBER_TRY(op_convert_f16(rec, x, b.xh, uint64_t(n) * v.front()->cols));
    rec.barrier();
    rec.tag(label);
    return b.xh;
}

}  // namespace

Status record_family_stage(Recorder& rec, const DeviceModel& m, const Buffers& b, int n,
                           const Stage& st) {
    const LlamaHParams& hp = m.hp;
    const Dims d = dims_of(hp);
    const uint32_t l = st.layer;
    const DeviceLayer* L = m.layers.empty() ? nullptr : &m.layers[l];
    const uint32_t nE = uint32_t(n) * d.E;
    rec.tag(st.label);
    switch (st.op) {
        case StageOp::FamilyEmbedScale:  // x *= sqrtf(E)  [n][E] (Gemma)
            EMBER_TRY(op_scale(rec, b.x, 0, nE, std::sqrt(float(d.E))));
            break;
        case StageOp::FamilyAttnNorm: {  // xb (or F16 xh) = rmsnorm(x) * attn_norm  [n][E]
            const bool f16 = all_read_f16(rec, b, n, {L->wqkv, L->wq, L->wk, L->wv});
            EMBER_TRY(norm(rec, m, b.x, L->attn_norm, f16 ? b.xh : b.xb, n, f16));
            break;
        }
        case StageOp::FamilyQkv: {  // q [n][Dq], k, v [n][Dkv]; fused: wide [n][Dq + 2 Dkv]
            EMBER_ASSIGN_OR_RETURN(
                BufferRange xh,
                f16_of(rec, b, b.xb, n, {L->wqkv, L->wq, L->wk, L->wv},
                       all_read_f16(rec, b, n, {L->wqkv, L->wq, L->wk, L->wv}), st.label));
            if (L->wqkv) {
                EMBER_TRY(op_matmul(rec, *L->wqkv, b.xb, 0, b.wide, 0, n, xh, b.wh));
            } else {
                EMBER_TRY(op_matmul(rec, *L->wq, b.xb, 0, b.q, 0, n, xh, b.wh));
                EMBER_TRY(op_matmul(rec, *L->wk, b.xb, 0, b.k, 0, n, xh, b.wh));
                EMBER_TRY(op_matmul(rec, *L->wv, b.xb, 0, b.v, 0, n, xh, b.wh));
            }
            break;
        }
        case StageOp::FamilyQkvRope:
            EMBER_TRY(qkv_rope(rec, m, b, n, l));
            break;
        case StageOp::FamilyAttention:  // att [n][Dq]
            EMBER_TRY(attention(rec, m, b, n, l));
            break;
        case StageOp::FamilyWo: {  // tmp = Wo att  [n][E]
            EMBER_ASSIGN_OR_RETURN(BufferRange xh,
                                   f16_of(rec, b, b.att, n, {L->wo}, false, st.label));
            EMBER_TRY(op_matmul(rec, *L->wo, b.att, 0, b.tmp, 0, n, xh, b.wh));
            break;
        }
        case StageOp::FamilyPostAttnNorm:  // xb = rmsnorm(tmp) * post_attn_norm [n][E]
            EMBER_TRY(norm(rec, m, b.tmp, L->post_attn_norm, b.xb, n));
            break;
        case StageOp::FamilyAttnResidual:  // x += tmp, or the post-normed xb
            EMBER_TRY(op_add(rec, b.x, L->post_attn_norm ? b.xb : b.tmp, nE));
            break;
        case StageOp::FamilyFfnNorm: {  // xb (or F16 xh) = rmsnorm(x) * ffn_norm  [n][E]
            const bool f16 = all_read_f16(rec, b, n, {L->gate_up, L->gate, L->up});
            EMBER_TRY(norm(rec, m, b.x, L->ffn_norm, f16 ? b.xh : b.xb, n, f16));
            break;
        }
        case StageOp::FamilyGateUp: {  // g, u [n][F] = Wgate xb, Wup xb; fused: wide [n][2F]
            EMBER_ASSIGN_OR_RETURN(
                BufferRange xh,
                f16_of(rec, b, b.xb, n, {L->gate_up, L->gate, L->up},
                       all_read_f16(rec, b, n, {L->gate_up, L->gate, L->up}), st.label));
            if (L->gate_up) {
                EMBER_TRY(op_matmul(rec, *L->gate_up, b.xb, 0, b.wide, 0, n, xh, b.wh));
            } else {
                EMBER_TRY(op_matmul(rec, *L->gate, b.xb, 0, b.g, 0, n, xh, b.wh));
                EMBER_TRY(op_matmul(rec, *L->up, b.xb, 0, b.u, 0, n, xh, b.wh));
            }
            break;
        }
        case StageOp::FamilyGlu: {  // g (or F16 xh) = act(gate) * up  [n][F]; SiLU, GELU-tanh
            RowView gate, up;
            gate_up_views(m, *L, b, gate, up);
            const bool f16 = all_read_f16(rec, b, n, {L->down});
            EMBER_TRY(op_glu(rec, hp.traits().act == FfnAct::GeluTanh, gate, up, f16 ? b.xh : b.g,
                             d.F, uint32_t(n), f16));
            break;
        }
        case StageOp::FamilyDown: {  // tmp = Wdown g  [n][E]
            EMBER_ASSIGN_OR_RETURN(
                BufferRange xh,
                f16_of(rec, b, b.g, n, {L->down}, all_read_f16(rec, b, n, {L->down}), st.label));
            EMBER_TRY(op_matmul(rec, *L->down, b.g, 0, b.tmp, 0, n, xh, b.wh));
            break;
        }
        case StageOp::FamilyPostFfnNorm:  // xb = rmsnorm(tmp) * post_ffn_norm  [n][E]
            EMBER_TRY(norm(rec, m, b.tmp, L->post_ffn_norm, b.xb, n));
            break;
        case StageOp::FamilyFfnResidual:  // x += tmp, or the post-normed xb
            EMBER_TRY(op_add(rec, b.x, L->post_ffn_norm ? b.xb : b.tmp, nE));
            break;
        case StageOp::FamilySoftcap:  // logits = cap * tanh(logits / cap)  [V] (Gemma 2)
            EMBER_TRY(op_softcap(rec, b.logits, 0, d.V, hp.final_softcap));
            break;
        default:
            return make_error("vulkan.bad_stage", "not a family stage");
    }
    rec.barrier();
    return {};
}

}  // namespace ember::vulkan
