#include "vulkan/stages_family_decode.h"

#include "vulkan/ops_family.h"
#include "vulkan/stages_family.h"

namespace ember::vulkan {

namespace {

// How a layer's FFN runs in a decode step.
enum class Ffn {
    Apart,    // norm + gate/up stored apart [gate; up] (GateUp), act + down + residual (silu_in)
    Product,  // norm + gate/up + act (Silu mode), down + residual
    Joined,   // Phi-3's one gate_up matrix: norm + [gate | up] (Store), act + down + residual
    Generic,  // the family's own ops (norm, matmuls, glu), down + residual
};

// Which Ffn layer L takes here: the fused kernels where they read its weights (a GELU gate:
// matvec_fused_h.comp only; gate and up of one type; an activation on down's input: the
// subgroup mode), else the generic ops.
Ffn ffn_of(const Recorder& rec, const DeviceModel& m, const DeviceLayer& L) {
    const bool gelu = m.hp.traits().act == FfnAct::GeluTanh;
    if (L.gate_up)
        return fused_gate_up_apart(rec, *L.gate_up, *L.gate_up, *L.down) ? Ffn::Joined
                                                                         : Ffn::Generic;
    if (L.gate->type != L.up->type) return Ffn::Generic;
    if (fused_gate_up_apart(rec, *L.gate, *L.up, *L.down)) return Ffn::Apart;
    if (gelu && !fused_matvec_gelu_supported(rec, *L.gate)) return Ffn::Generic;
    return Ffn::Product;
}

// Whether Gemma's post-norms fold into the next mat-vec's input (FusedMatvec::resid) in every
// layer: the post-FFN norm into the next layer's QKV, the post-attention one into gate/up (not
// in the last layer, whose norms keep their dispatches so that x ends where the head reads it).
// The residual then alternates: QKV reads xb and writes x, gate/up reads x and writes xb, and
// down adds into u (gate/up zeroes it) instead of tmp.
bool folds_post_norms(const Recorder& rec, const DeviceModel& m) {
    for (const DeviceLayer& L : m.layers) {
        if (!L.post_attn_norm || !L.post_ffn_norm || L.wqkv || ffn_of(rec, m, L) != Ffn::Apart)
            return false;
        for (const DeviceTensor* t : {L.wq, L.wk, L.wv, L.gate, L.post_attn_norm, L.post_ffn_norm})
            if (t->pieces.size() != 1) return false;
        for (const DeviceTensor* t : {L.wq, L.wk, L.wv, L.gate})
            if (!fused_resid_supported(rec, *t)) return false;
    }
    return true;
}

// Whether layer L's Q/K/V take one fused dispatch (a dispatch per run of one type, no barrier
// between them, except for Q6_K V rows, which a Q4_K or Q5_K dispatch reads too) that also adds the
// biases, norms and rotates the heads and stores K and V (FusedMode::Heads), instead of three
// mat-vecs and qkv_rope.comp.
bool heads_fold(const Recorder& rec, const DeviceModel& m, const DeviceLayer& L) {
    return !L.wqkv && fused_heads_supported(rec, *L.wq, *L.wk, *L.wv, m.hp.head_dim);
}

// The decode attention's shape: one token, the family's heads and scale.
AttentionShape decode_shape(const LlamaHParams& hp) {
    return {1, int(hp.n_head), int(hp.n_head_kv), int(hp.head_dim), hp.attention_scale()};
}

// Whether layer L's output projection runs inside its attention (attention.comp WO FAMILY) in a
// step whose context one run per head covers, as Llama's does: x += Wo att, or tmp += Wo att
// where Gemma's post-attention norm follows.
bool wo_in_attention(const Recorder& rec, const DeviceModel& m, const DeviceLayer& L) {
    return attention_wo_supported(rec, decode_shape(m.hp), *L.wo, true);
}

// Whether layer L's q/k norms are left from its Q/K/V to its attention (FusedMatvec::
// defer_qk_norm, the K store with them): heads finished in RoPE pairs, and an attention that is
// attention.comp's in every step (the fused Wo, or the split one, which the runner then has:
// decode_attention_split). A head's norm otherwise waits for the last of its rows, and its count
// and finish cost Gemma-3-4B a third of its QKV's time.
bool defers_qk_norm(const Recorder& rec, const DeviceModel& m, const DeviceLayer& L) {
    return L.q_norm && heads_fold(rec, m, L) &&
           decode_attention_supported(rec.plan(), decode_shape(m.hp), true) &&
           fused_heads_in_pairs(rec, *L.wq, *L.wk, *L.wv, m.hp.head_dim);
}

bool one_piece(const Adapter& a, const Plan& plan, const DeviceTensor* t) {
    return !t || fused_matvec_supports(a, plan, {t});
}

}  // namespace

bool family_fused_layers(const Adapter& a, const Plan& plan, const DeviceModel& m) {
    if (!plan.fused || m.layers.empty()) return false;
    for (const DeviceLayer& L : m.layers) {
        // Each matrix takes a dispatch of its own (Q, K and V of different types too).
        for (const DeviceTensor* t : {L.wq, L.wk, L.wv, L.wqkv, L.wo, L.gate, L.up, L.gate_up})
            if (!one_piece(a, plan, t)) return false;
        if (!L.down || !fused_matvec_add_supported(a, plan, *L.down) ||
            L.attn_norm->type != GgmlType::F32 || L.ffn_norm->type != GgmlType::F32)
            return false;
    }
    return true;
}

bool is_family_decode_stage(StageOp op) {
    return op >= StageOp::FamDecQkv && op <= StageOp::FamDecFfnPostNorm;
}

std::vector<Stage> family_decode_stages(const Recorder& rec, const DeviceModel& m,
                                        const Step& step) {
    std::vector<Stage> s;
    s.push_back({StageOp::Embed, 0, "embed"});
    if (m.hp.traits().embd_scale) s.push_back({StageOp::FamilyEmbedScale, 0, "embedding scale"});
    const bool fold = folds_post_norms(rec, m);
    const uint32_t last = uint32_t(m.layers.size()) - 1;
    for (uint32_t l = 0; l < m.layers.size(); ++l) {
        const DeviceLayer& L = m.layers[l];
        const bool fold_in = fold && l > m.first_layer, fold_out = fold && l < last;
        const bool defer = defers_qk_norm(rec, m, L);
        if (defer) {
            s.push_back({StageOp::FamDecQkv, l,
                         fold_in ? "post-ffn norm + norm + qkv + rope + v store"
                                 : "norm + qkv + rope + v store"});
        } else if (heads_fold(rec, m, L)) {
            s.push_back({StageOp::FamDecQkv, l,
                         fold_in ? "post-ffn norm + norm + qkv + rope + kv store"
                                 : "norm + qkv + rope + kv store"});
        } else {
            s.push_back(
                {StageOp::FamDecQkv, l, fold_in ? "post-ffn norm + norm + qkv" : "norm + qkv"});
            s.push_back({StageOp::FamilyQkvRope, l, "bias + qk norm + rope + kv store"});
        }
        const bool post = L.post_attn_norm != nullptr;
        if (step.short_context && wo_in_attention(rec, m, L)) {
            s.push_back({StageOp::FamDecAttentionWo, l,
                         defer ? (post ? "qk norm + k store + attention + wo"
                                       : "qk norm + k store + attention + wo + residual")
                               : (post ? "attention + wo" : "attention + wo + residual")});
        } else {
            s.push_back({StageOp::FamDecAttention, l,
                         defer ? "qk norm + k store + attention" : "attention"});
            s.push_back({StageOp::FamDecWo, l, post ? "wo" : "wo + residual"});
        }
        if (post && !fold_out)
            s.push_back({StageOp::FamDecAttnPostNorm, l, "post-attention norm + residual"});
        switch (ffn_of(rec, m, L)) {
            case Ffn::Apart:
                s.push_back({StageOp::FamDecGateUp, l,
                             fold_out ? "post-attention norm + norm + gate/up" : "norm + gate/up"});
                break;
            case Ffn::Product:
                s.push_back({StageOp::FamDecGateUp, l, "norm + gate/up + act"});
                break;
            case Ffn::Joined:
                s.push_back({StageOp::FamDecGateUp, l, "norm + gate_up"});
                break;
            case Ffn::Generic:
                s.push_back({StageOp::FamilyFfnNorm, l, "ffn norm"});
                s.push_back({StageOp::FamilyGateUp, l, "matmul gate/up"});
                s.push_back({StageOp::FamilyGlu, l, "gated activation"});
                break;
        }
        if (L.post_ffn_norm) {
            s.push_back({StageOp::FamDecDown, l, "down"});
            if (!fold_out) s.push_back({StageOp::FamDecFfnPostNorm, l, "post-ffn norm + residual"});
        } else {
            s.push_back({StageOp::FamDecDown, l, "down + residual"});
        }
    }
    if (step.out == Output::None) return s;
    // The fused head writes the logits where the host reads them, unless a soft-cap follows.
    const bool softcap = m.hp.final_softcap > 0.0f;
    if (m.fused_output && step.out == Output::Logits && !softcap) {
        s.push_back({StageOp::OutputDirect, 0, "output norm + head"});
        return s;
    }
    s.push_back({StageOp::OutputHead, 0, "output norm + head"});
    if (softcap) s.push_back({StageOp::FamilySoftcap, 0, "logit soft-cap"});
    if (step.out == Output::Argmax) s.push_back({StageOp::Argmax, 0, "argmax"});
    s.push_back({StageOp::Readback, 0, "readback"});
    return s;
}

namespace {

// y = W rmsnorm(x) * norm (Store), or y += W x (Add, no norm).
FusedMatvec matvec(FusedMode mode, const DeviceTensor* w, BufferRange x, BufferRange y) {
    FusedMatvec f;
    f.mode = mode;
    f.w[0] = w;
    f.x = x;
    f.y = y;
    return f;
}

FusedMatvec normed(const DeviceModel& m, FusedMode mode, const DeviceTensor* w,
                   const DeviceTensor* norm, BufferRange x, BufferRange y) {
    FusedMatvec f = matvec(mode, w, x, y);
    f.norm = norm->pieces[0].range;
    f.eps = m.hp.rms_eps;
    return f;
}

// q [Dq], k, v [Dkv] = Wq, Wk, Wv rmsnorm(x) * attn_norm, a dispatch each (their types may
// differ; no barrier between them); Phi-3: wide [Dq + 2 Dkv] = Wqkv rmsnorm(x) * attn_norm.
// Heads (heads_fold): one dispatch a type (op_matvec_fused), which also adds the biases, norms and
// rotates q and k and stores K and V in the caches (q to b.q; qkv_rope's stage is gone). Folded
// (fold_in): x = xb + rmsnorm(u) * the previous layer's post_ffw_norm first, written to x by Q's
// dispatch (the step's tmp zeroed there too: nothing reads it before Wo stores into it).
Status qkv(Recorder& rec, const DeviceModel& m, const Buffers& b, uint32_t l,
           const DeviceLayer* fold_in) {
    const DeviceLayer& L = m.layers[l];
    if (L.wqkv)
        return op_matvec_fused(rec, normed(m, FusedMode::Store, L.wqkv, L.attn_norm, b.x, b.wide));
    if (heads_fold(rec, m, L)) {
        const QkvRope r = family_qkv_rope(m, b, 1, l);
        FusedMatvec f =
            normed(m, FusedMode::Heads, L.wq, L.attn_norm, fold_in ? b.xb : b.x, r.q.buf);
        f.w[1] = L.wk, f.w[2] = L.wv;
        f.heads = &r, f.head_count = b.head_count;
        f.defer_qk_norm = defers_qk_norm(rec, m, L), f.qk_ss = b.qk_ss;
        if (fold_in) {
            f.fold = true, f.resid = b.u, f.resid_norm = fold_in->post_ffn_norm->pieces[0].range;
            f.x_out = b.x, f.zero = b.tmp;
        }
        return op_matvec_fused(rec, f);
    }
    const DeviceTensor* w[3] = {L.wq, L.wk, L.wv};
    const BufferRange y[3] = {b.q, b.k, b.v};
    for (int i = 0; i < 3; ++i) {
        FusedMatvec f = normed(m, FusedMode::Store, w[i], L.attn_norm, fold_in ? b.xb : b.x, y[i]);
        if (fold_in) {
            f.fold = true, f.resid = b.u, f.resid_norm = fold_in->post_ffn_norm->pieces[0].range;
            f.x_out = b.x, f.zero = b.tmp, f.resid_out = i == 0;
        }
        EMBER_TRY(op_matvec_fused(rec, f));
    }
    return {};
}

// Layer l's soft-cap, sliding window, cache ring and q/k norms left by its Q/K/V.
DecodeAttentionFamily attention_extras(const Recorder& rec, const DeviceModel& m, const Buffers& b,
                                       uint32_t l) {
    DecodeAttentionFamily f;
    f.softcap = m.hp.attn_softcap;
    f.window = m.hp.layer_hp(l).swa ? m.hp.n_swa : 0;
    f.kv_ring = l < b.kv_ring.size() ? b.kv_ring[l] : 0;
    if (defers_qk_norm(rec, m, m.layers[l])) {
        f.qk_norm = true, f.k_new = b.k, f.qk_ss = b.qk_ss, f.qk_eps = m.hp.rms_eps;
    }
    return f;
}

// att [Dq] = softmax(softcap(scale q K^T)) V over the layer's window: split over positions where
// the runner has partials for it, else the family's one-workgroup-per-head attention.
Status attention(Recorder& rec, const DeviceModel& m, const Buffers& b, uint32_t l) {
    const AttentionShape s = decode_shape(m.hp);
    const DecodeAttentionFamily f = attention_extras(rec, m, b, l);
    // Q: b.q, or the first Dq floats of Phi-3's fused row.
    const BufferRange q = m.layers[l].wqkv ? b.wide : b.q;
    if (b.attn_split && decode_attention_supported(rec.plan(), s, true))
        return op_attention_decode(rec, q, b.k_cache[l], b.v_cache[l], b.att, b.step, s,
                                   b.attn_part, b.attn_count, b.attn_split, b.attn_grid, &f);
    if (f.qk_norm)
        return make_error("vulkan.bad_stage",
                          "q/k norms left to an attention that does not take them");
    FamilyAttention a;
    a.q = {q, 0, uint32_t(s.n_head * s.head_dim)};
    a.k_cache = b.k_cache[l], a.v_cache = b.v_cache[l], a.out = b.att, a.step = b.step;
    a.s = s;
    a.softcap = f.softcap, a.window = int(f.window), a.kv_ring = f.kv_ring;
    return op_attention_family(rec, a);
}

// x [E] += Wo attention(q, K, V), or tmp [E] += Wo attention before Gemma's post-norm. The float
// atomics add into tmp, which is zero here: the layer before left it so (its post-norm, or the
// fold in this layer's QKV), but the step's first layer zeroes it (a prompt leaves it written).
Status attention_wo(Recorder& rec, const DeviceModel& m, const Buffers& b, uint32_t l) {
    const DeviceLayer& L = m.layers[l];
    const DecodeAttentionFamily f = attention_extras(rec, m, b, l);
    if (L.post_attn_norm && l == m.first_layer)
        rec.fill_zero(b.tmp.sub(0, VkDeviceSize(m.hp.n_embd) * sizeof(float)));
    return op_attention_wo(rec, L.wqkv ? b.wide : b.q, b.k_cache[l], b.v_cache[l],
                           L.post_attn_norm ? b.tmp : b.x, b.step, decode_shape(m.hp), *L.wo, &f);
}

// The FFN's first dispatch (Ffn): g [F] = act(Wgate xn) * (Wup xn), or g [2F] = [gate; up],
// xn = rmsnorm(x) * ffn_norm; folded: x = x + rmsnorm(tmp) * post_attention_norm first, written
// to xb, and u zeroed for down.
Status gate_up(Recorder& rec, const DeviceModel& m, const Buffers& b, const DeviceLayer& L,
               bool fold) {
    const bool gelu = m.hp.traits().act == FfnAct::GeluTanh;
    switch (ffn_of(rec, m, L)) {
        case Ffn::Joined:
            return op_matvec_fused(rec,
                                   normed(m, FusedMode::Store, L.gate_up, L.ffn_norm, b.x, b.g));
        case Ffn::Apart:
        case Ffn::Product: {
            const bool apart = ffn_of(rec, m, L) == Ffn::Apart;
            FusedMatvec f = normed(m, apart ? FusedMode::GateUp : FusedMode::Silu, L.gate,
                                   L.ffn_norm, b.x, b.g);
            f.w[1] = L.up;
            f.gelu = gelu;
            if (fold) {
                f.fold = true, f.resid = b.tmp, f.resid_norm = L.post_attn_norm->pieces[0].range;
                f.x_out = b.xb, f.zero = b.u;
            }
            return op_matvec_fused(rec, f);
        }
        default:
            return make_error("vulkan.bad_stage", "gate/up of a layer on the generic FFN ops");
    }
}

// x += Wdown g (g: act(gate) * up, or [gate; up] with the activation taken here), or tmp +=
// Wdown g before Gemma's post-norm: the post-attention norm left tmp zeroed, and an Add lets the
// plan split down's long rows (10,240 columns for 2,560 rows) over column parts, whose sums
// meet in tmp (a Store took a third of the subgroups, 28 us a call on the H200).
// Folded (fold): u += Wdown g (gate/up zeroed u; the next layer's QKV takes its post-norm).
Status down(Recorder& rec, const DeviceModel& m, const Buffers& b, const DeviceLayer& L,
            bool fold) {
    const FusedMode into_tmp = L.post_attn_norm ? FusedMode::Add : FusedMode::Store;
    FusedMatvec f = fold              ? matvec(FusedMode::Add, L.down, b.g, b.u)
                    : L.post_ffn_norm ? matvec(into_tmp, L.down, b.g, b.tmp)
                                      : matvec(FusedMode::Add, L.down, b.g, b.x);
    const Ffn ffn = ffn_of(rec, m, L);
    f.silu_in = ffn == Ffn::Apart || ffn == Ffn::Joined;
    f.gelu = m.hp.traits().act == FfnAct::GeluTanh;
    return op_matvec_fused(rec, f);
}

}  // namespace

Status record_family_decode_stage(Recorder& rec, const DeviceModel& m, const Buffers& b,
                                  const Stage& st) {
    const uint32_t l = st.layer;
    const DeviceLayer& L = m.layers[l];
    const int E = int(m.hp.n_embd);
    // The post-norms folded (folds_post_norms): into this QKV from the layer before, and from this
    // layer's attention into its gate/up, its down then adding into u.
    const bool fold = folds_post_norms(rec, m);
    const bool fold_in = fold && l > m.first_layer, fold_out = fold && l + 1 < m.layers.size();
    rec.tag(st.label);
    switch (st.op) {
        case StageOp::FamDecQkv:  // q [Dq], k, v [Dkv] (or wide) = W rmsnorm(x) * attn_norm
            EMBER_TRY(qkv(rec, m, b, l, fold_in ? &m.layers[l - 1] : nullptr));
            break;
        case StageOp::FamDecAttention:  // att [Dq]
            EMBER_TRY(attention(rec, m, b, l));
            break;
        case StageOp::FamDecAttentionWo:  // x [E] += Wo attention, or tmp [E] += (post-norm next)
            EMBER_TRY(attention_wo(rec, m, b, l));
            break;
        case StageOp::FamDecWo:  // x [E] += Wo att, or tmp [E] = Wo att (a post-norm follows)
            EMBER_TRY(op_matvec_fused(rec, L.post_attn_norm
                                               ? matvec(FusedMode::Store, L.wo, b.att, b.tmp)
                                               : matvec(FusedMode::Add, L.wo, b.att, b.x)));
            break;
        case StageOp::FamDecAttnPostNorm:  // x [E] += rmsnorm(tmp) * post_attention_norm; tmp = 0
            EMBER_TRY(op_rms_norm_add(rec, b.tmp, L.post_attn_norm->pieces[0].range, b.x, E, 1,
                                      m.hp.rms_eps));
            break;
        case StageOp::FamDecFfnPostNorm:  // x [E] += rmsnorm(tmp) * post_ffw_norm; tmp = 0
            EMBER_TRY(op_rms_norm_add(rec, b.tmp, L.post_ffn_norm->pieces[0].range, b.x, E, 1,
                                      m.hp.rms_eps));
            break;
        case StageOp::FamDecGateUp:  // g [F] = act(gate) * up, or [2F] = [gate; up]
            EMBER_TRY(gate_up(rec, m, b, L, fold_out));
            break;
        case StageOp::FamDecDown:  // x [E] += Wdown g, or tmp [E] += Wdown g
            EMBER_TRY(down(rec, m, b, L, fold_out));
            break;
        default:
            return make_error("vulkan.bad_stage", "not a family decode stage");
    }
    rec.barrier();
    return {};
}

}  // namespace ember::vulkan
