#include "vulkan/family_pass.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace ember::vulkan {
namespace {

Error unsupported(const std::string& why) {
    return make_error("vulkan.unsupported_model", "the Vulkan backend does not run " + why);
}

// The device copy of t, or nullptr where the family has no such tensor; a present tensor
// without a copy is an error.
const DeviceTensor* bind(const WeightStore& s, const Tensor& t, Status& st) {
    if (!t.present()) return nullptr;
    const DeviceTensor* d = s.find(t);
    if (!d && st.ok())
        st = make_error("vulkan.missing_tensor", "tensor " + t.name + " is not on the device");
    return d;
}

BufferRange range_of(const DeviceTensor* t) {
    return t ? t->pieces[0].range : BufferRange{};
}

// Each of n rows of x (E apart) as rmsnorm(row) * w into out.
Status norm_rows(Recorder& rec, const FamilyModel& m, BufferRange x, const DeviceTensor* w,
                 BufferRange out, int n) {
    const int E = int(m.hp.n_embd);
    return op_rms_norm(rec, x, 0, range_of(w), out, 0, E, n, E, m.hp.rms_eps);
}

Status record_attention(Recorder& rec, const FamilyModel& m, const FamilyBuffers& b, size_t l,
                        int n);
Status record_ffn(Recorder& rec, const FamilyModel& m, const FamilyBuffers& b, size_t l, int n);

}  // namespace

Status family_pass_supports(const LlamaModel& model) {
    const LlamaHParams& hp = model.hp;
    if (hp.head_dim == 0 || hp.head_dim > 512 || hp.head_dim % 2 != 0)
        return unsupported("a head size of " + std::to_string(hp.head_dim) +
                           " (an even size up to 512 is needed)");
    if (hp.n_rot % 2 != 0 || hp.n_rot > hp.head_dim)
        return unsupported("rope.dimension_count " + std::to_string(hp.n_rot) +
                           " (an even count up to the head size is needed)");
    if (hp.n_head_kv == 0 || hp.n_head % hp.n_head_kv != 0)
        return unsupported("a head count that is not a multiple of the KV head count");
    // Norms and biases are read as F32 rows of one piece.
    for (const LlamaLayer& L : model.layers)
        for (const Tensor* t : {&L.attn_norm, &L.ffn_norm, &L.bq, &L.bk, &L.bv, &L.q_norm,
                                &L.k_norm, &L.post_attn_norm, &L.post_ffn_norm})
            if (t->present() && t->type != GgmlType::F32)
                return unsupported("a norm or bias (" + t->name + ") that is not F32");
    if (model.output_norm.type != GgmlType::F32 ||
        (model.rope_freqs.present() && model.rope_freqs.type != GgmlType::F32))
        return unsupported("an output norm or rope_freqs that is not F32");
    return {};
}

std::vector<const Tensor*> family_tensors(const LlamaModel& m) {
    std::vector<const Tensor*> t = {&m.tok_embd, &m.output_norm, &m.output};
    if (m.rope_freqs.present()) t.push_back(&m.rope_freqs);
    for (const LlamaLayer& L : m.layers)
        for (const Tensor* p :
             {&L.attn_norm, &L.wq, &L.wk, &L.wv, &L.wqkv, &L.bq, &L.bk, &L.bv, &L.q_norm, &L.k_norm,
              &L.wo, &L.post_attn_norm, &L.ffn_norm, &L.ffn_gate, &L.ffn_up, &L.ffn_gate_up,
              &L.ffn_down, &L.post_ffn_norm})
            if (p->present()) t.push_back(p);
    return t;
}

Result<FamilyModel> bind_family_model(const LlamaModel& m, const WeightStore& s) {
    EMBER_TRY(family_pass_supports(m));
    Status st;
    FamilyModel fm;
    fm.hp = m.hp;
    fm.tok_embd = bind(s, m.tok_embd, st);
    fm.output_norm = bind(s, m.output_norm, st);
    fm.output = bind(s, m.output, st);
    fm.rope_freqs = bind(s, m.rope_freqs, st);
    for (const LlamaLayer& L : m.layers)
        fm.layers.push_back(
            {bind(s, L.attn_norm, st), bind(s, L.wq, st), bind(s, L.wk, st), bind(s, L.wv, st),
             bind(s, L.wqkv, st), bind(s, L.bq, st), bind(s, L.bk, st), bind(s, L.bv, st),
             bind(s, L.q_norm, st), bind(s, L.k_norm, st), bind(s, L.wo, st),
             bind(s, L.post_attn_norm, st), bind(s, L.ffn_norm, st), bind(s, L.ffn_gate, st),
             bind(s, L.ffn_up, st), bind(s, L.ffn_gate_up, st), bind(s, L.ffn_down, st),
             bind(s, L.post_ffn_norm, st)});
    if (!st.ok()) return st.take_error();
    return fm;
}

FamilySizes family_sizes(const LlamaHParams& hp) {
    return {hp.n_embd,    uint64_t(hp.n_q_dim()) + 2 * hp.n_kv_dim(),
            hp.n_q_dim(), 2 * uint64_t(hp.n_ff),
            hp.n_ff,      hp.n_vocab};
}

uint32_t family_cache_rows(const LlamaHParams& hp, uint32_t l, int n_ctx, int batch) {
    if (!hp.layer_hp(l).swa || hp.n_swa == 0) return uint32_t(n_ctx);
    return uint32_t(std::min<int64_t>(n_ctx, int64_t(hp.n_swa) + batch - 1));
}

Status record_family_forward(Recorder& rec, const FamilyModel& m, const FamilyBuffers& b, int n) {
    const LlamaHParams& hp = m.hp;
    const uint32_t E = hp.n_embd;

    // Embeddings: x[t] = tok_embd[token t]  [n][E]; Gemma scales them by sqrtf(n_embd)
    rec.tag("embed");
    EMBER_TRY(op_get_rows(rec, *m.tok_embd, b.step, b.x, n));
    rec.barrier();
    if (hp.traits().embd_scale) {
        EMBER_TRY(op_scale(rec, b.x, 0, uint32_t(n) * E, std::sqrt(float(E))));
        rec.barrier();
    }

    for (size_t l = 0; l < m.layers.size(); ++l) {
        EMBER_TRY(record_attention(rec, m, b, l, n));
        EMBER_TRY(record_ffn(rec, m, b, l, n));
    }

    // Final norm of the last token and the output head: logits = Wout rmsnorm(x)  [V];
    // Gemma 2 soft-caps them
    rec.tag("output norm + head");
    EMBER_TRY(op_rms_norm(rec, b.x, uint32_t(n - 1) * E, range_of(m.output_norm), b.xb, 0, int(E),
                          1, int(E), hp.rms_eps));
    rec.barrier();
    EMBER_TRY(op_matmul(rec, *m.output, b.xb, 0, b.logits, 0, 1));
    rec.barrier();
    if (hp.final_softcap > 0.0f) {
        EMBER_TRY(op_softcap(rec, b.logits, 0, hp.n_vocab, hp.final_softcap));
        rec.barrier();
    }
    return {};
}

namespace {

Status record_attention(Recorder& rec, const FamilyModel& m, const FamilyBuffers& b, size_t l,
                        int n) {
    const LlamaHParams& hp = m.hp;
    const FamilyLayer& L = m.layers[l];
    const LayerHParams lh = hp.layer_hp(uint32_t(l));
    const uint32_t E = hp.n_embd, QD = hp.n_q_dim(), KVD = hp.n_kv_dim(), HD = hp.head_dim;

    // Attention input: xb = rmsnorm(x) * attn_norm  [n][E]
    rec.tag("attention norm");
    EMBER_TRY(norm_rows(rec, m, b.x, L.attn_norm, b.xb, n));
    rec.barrier();

    // Projections: a fused attn_qkv gives rows [q | k | v]  [n][QD + 2 KVD] (Phi-3); else
    // q [n][QD], k [n][KVD], v [n][KVD] one after the other in qkv
    rec.tag("matmul q/k/v");
    RowView q, k, v;
    if (L.wqkv) {
        const uint32_t row = QD + 2 * KVD;
        EMBER_TRY(op_matmul(rec, *L.wqkv, b.xb, 0, b.qkv, 0, n));
        q = {b.qkv, 0, row}, k = {b.qkv, QD, row}, v = {b.qkv, QD + KVD, row};
    } else {
        const uint32_t k_off = uint32_t(n) * QD, v_off = k_off + uint32_t(n) * KVD;
        EMBER_TRY(op_matmul(rec, *L.wq, b.xb, 0, b.qkv, 0, n));
        EMBER_TRY(op_matmul(rec, *L.wk, b.xb, 0, b.qkv, k_off, n));
        EMBER_TRY(op_matmul(rec, *L.wv, b.xb, 0, b.qkv, v_off, n));
        q = {b.qkv, 0, QD}, k = {b.qkv, k_off, KVD}, v = {b.qkv, v_off, KVD};
    }
    rec.barrier();

    // Biases (Qwen 2), RMSNorm of each q and k head (Qwen 3, Gemma 3), rope with this layer's
    // base and scale, then k and v appended to the cache at the step's positions
    rec.tag("bias + qk norm + rope + kv store");
    QkvRope r;
    r.q = q, r.k = k, r.v = v;
    r.bq = range_of(L.bq), r.bk = range_of(L.bk), r.bv = range_of(L.bv);
    r.q_norm = range_of(L.q_norm), r.k_norm = range_of(L.k_norm);
    r.eps = hp.rms_eps;
    r.ff = range_of(m.rope_freqs);
    r.k_cache = b.k_cache[l], r.v_cache = b.v_cache[l], r.step = b.step;
    r.n_tokens = n, r.n_head = int(hp.n_head), r.n_head_kv = int(hp.n_head_kv);
    r.head_dim = int(HD), r.n_rot = int(hp.n_rot);
    r.freq_base = lh.rope_base, r.freq_scale = lh.rope_freq_scale;
    r.neox = hp.traits().rope == RopeMode::Neox;
    r.kv_ring = b.kv_ring.empty() ? 0 : b.kv_ring[l];
    EMBER_TRY(op_qkv_rope(rec, r));
    rec.barrier();

    // Causal grouped-query attention, soft-capped (Gemma 2), over the layer's sliding window
    // where it has one: att [n][QD]. A prompt attends over its own unrounded K/V; a decoded
    // token reads the F16 cache.
    rec.tag("attention");
    FamilyAttention a;
    a.q = q;
    a.k_cache = b.k_cache[l], a.v_cache = b.v_cache[l], a.out = b.att, a.step = b.step;
    if (n > 1) a.k_batch = k, a.v_batch = v;
    a.s = {n, int(hp.n_head), int(hp.n_head_kv), int(HD), hp.attention_scale()};
    a.softcap = hp.attn_softcap;
    a.window = lh.swa ? int(hp.n_swa) : 0;
    a.kv_ring = r.kv_ring;
    EMBER_TRY(op_attention_family(rec, a));
    rec.barrier();

    // Output projection: xb = Wo att  [n][E]; Gemma norms it again (tmp) before the residual
    rec.tag("matmul wo");
    EMBER_TRY(op_matmul(rec, *L.wo, b.att, 0, b.xb, 0, n));
    rec.barrier();
    BufferRange out = b.xb;
    if (L.post_attn_norm) {
        EMBER_TRY(norm_rows(rec, m, b.xb, L.post_attn_norm, b.tmp, n));
        rec.barrier();
        out = b.tmp;
    }

    // Residual: x += out  [n][E]
    rec.tag("residual");
    EMBER_TRY(op_add(rec, b.x, out, uint32_t(n) * E));
    rec.barrier();
    return {};
}

Status record_ffn(Recorder& rec, const FamilyModel& m, const FamilyBuffers& b, size_t l, int n) {
    const LlamaHParams& hp = m.hp;
    const FamilyLayer& L = m.layers[l];
    const uint32_t E = hp.n_embd, F = hp.n_ff;

    // FFN input: xb = rmsnorm(x) * ffn_norm  [n][E]
    rec.tag("ffn norm");
    EMBER_TRY(norm_rows(rec, m, b.x, L.ffn_norm, b.xb, n));
    rec.barrier();

    // Gate and up: a fused ffn_up gives rows [gate | up]  [n][2F] (Phi-3); else gate [n][F]
    // then up [n][F] in gu
    rec.tag("matmul gate/up");
    RowView gate, up;
    if (L.gate_up) {
        EMBER_TRY(op_matmul(rec, *L.gate_up, b.xb, 0, b.gu, 0, n));
        gate = {b.gu, 0, 2 * F}, up = {b.gu, F, 2 * F};
    } else {
        EMBER_TRY(op_matmul(rec, *L.gate, b.xb, 0, b.gu, 0, n));
        EMBER_TRY(op_matmul(rec, *L.up, b.xb, 0, b.gu, uint32_t(n) * F, n));
        gate = {b.gu, 0, F}, up = {b.gu, uint32_t(n) * F, F};
    }
    rec.barrier();

    // h = act(gate) * up  [n][F]; act is SiLU, or GELU-tanh (Gemma)
    rec.tag("gated activation");
    EMBER_TRY(
        op_glu(rec, hp.traits().act == FfnAct::GeluTanh, gate, up, b.h, F, uint32_t(n), false));
    rec.barrier();

    // Down projection: xb = Wdown h  [n][E]; Gemma norms it again (tmp) before the residual
    rec.tag("matmul down");
    EMBER_TRY(op_matmul(rec, *L.down, b.h, 0, b.xb, 0, n));
    rec.barrier();
    BufferRange out = b.xb;
    if (L.post_ffn_norm) {
        EMBER_TRY(norm_rows(rec, m, b.xb, L.post_ffn_norm, b.tmp, n));
        rec.barrier();
        out = b.tmp;
    }

    // Residual: x += out  [n][E]
    rec.tag("residual");
    EMBER_TRY(op_add(rec, b.x, out, uint32_t(n) * E));
    rec.barrier();
    return {};
}

}  // namespace
}  // namespace ember::vulkan
