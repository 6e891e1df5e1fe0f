// Ops that the decoder families beyond Llama need (Qwen 2/3, Gemma 2/3, Phi-3; model/arch.h
// lists what differs): bias, per-head q/k norm and rope in either layout with the KV store; the
// attention with soft-capping, a sliding window and head sizes up to 512; the gated FFN product
// with GELU-tanh or SiLU over strided gate/up rows; soft-capping and scaling in place. Each
// matches its CPU op (cpu/ops.h) within the tolerance tests/vulkan/test_ops_family.cpp sets.
#pragma once

#include <cstdint>

#include "vulkan/ops.h"

namespace ember::vulkan {

// A view of rows in a buffer: row t starts at element off + t * stride.
struct RowView {
    BufferRange buf;
    uint32_t off = 0, stride = 0;
};

// What runs between the Q/K/V projections and the attention, on n_tokens tokens at the step's
// positions: q, k, v (+= bias, when bq/bk/bv are given), then q and k RMS-normalized over each
// head with q_norm / k_norm [head_dim] (when given), then the first n_rot dims of each q and k
// head rotated (pair i turns by pos * freq_scale * freq_base^(-2i/n_rot) / ff[i]; pairs are
// (2i, 2i+1), or (i, i + n_rot/2) with neox; YaRN and attn_factor as cpu::RopeSpec has them:
// the same fields, the same angles); q, k (and v with a bias) written back in place,
// and k and v stored as F16 at the step's positions of k_cache and v_cache (rows of
// n_head_kv * head_dim). q, k and v may be views of one buffer (a fused attn_qkv's output).
struct QkvRope {
    RowView q, k, v;
    BufferRange bq, bk, bv;      // optional, all three or none: [n_head * hd], [n_head_kv * hd]
    BufferRange q_norm, k_norm;  // optional, both or none: [head_dim]
    float eps = 1e-6f;
    BufferRange ff;  // optional frequency factors [n_rot / 2] (Llama 3, Phi-3 LongRoPE)
    BufferRange k_cache, v_cache, step;
    int n_tokens = 0, n_head = 0, n_head_kv = 0, head_dim = 0, n_rot = 0;
    float freq_base = 10000.0f, freq_scale = 1.0f;
    bool neox = false;
    float attn_factor = 1.0f;  // cos and sin times this (rope.scaling.attn_factor, LongRoPE)
    // YaRN (ext_factor > 0): the ramp from the pair turning beta_fast times over n_ctx_orig
    // tokens (unscaled) to the one turning beta_slow times (scaled), and the magnitude times
    // 1 + 0.1 ln(1 / freq_scale).
    float ext_factor = 0.0f, beta_fast = 32.0f, beta_slow = 1.0f;
    int n_ctx_orig = 0;
    // > 0: the caches are rings of this many rows (position p in row p % kv_ring), at least
    // n_tokens; a sliding-window layer's then holds window + batch - 1 rows instead of n_ctx.
    uint32_t kv_ring = 0;
};
Status op_qkv_rope(Recorder& rec, const QkvRope& r);
// YaRN's ramp (from pair low to pair high) and the factor of cos and sin, as op_qkv_rope passes
// them to its shader (the fused Q/K/V's FusedMode::Heads takes the same).
struct RopeRamp {
    float low = 0.0f, high = 0.0f, mscale = 1.0f;
};
RopeRamp qkv_rope_ramp(const QkvRope& r);

// out[t][h * hd ..] = softmax(softcap(scale q k^T)) v over positions (pos0 + t - window,
// pos0 + t] (all of [0, pos0 + t] when window is 0), K and V from the F16 caches (rows of
// n_head_kv * head_dim), or, with k_batch and v_batch given, the batch's own positions from
// those F32 rows. q rows and out rows: out is contiguous [n_tokens][n_head * head_dim].
struct FamilyAttention {
    RowView q;
    BufferRange k_cache, v_cache, out, step;
    RowView k_batch, v_batch;  // optional, both or none (same stride)
    AttentionShape s{};
    float softcap = 0.0f;  // > 0: cap * tanh(score / cap)
    int window = 0;        // > 0: sliding window of this many keys
    // > 0: the caches are rings of this many rows (QkvRope::kv_ring), which needs a window and
    // kv_ring >= window + n_tokens - 1 (no row a query reads is overwritten by the batch).
    uint32_t kv_ring = 0;
    // F32 arithmetic asked for (a layer of F32 weights): never the F16 tensor cores.
    bool keep_f32 = false;
};
// Head sizes the family attention takes: even and at most 512.
bool family_attention_supported(const AttentionShape& s);
// Whether op_attention_family runs this batch on the tensor cores (attention_coopmat.comp,
// FAMILY; Plan::family_attn_coopmat): batches of 16+ tokens without keep_f32, head sizes a
// multiple of 16 up to 256, q rows at offsets and strides of whole vec4s. Then every position's K
// and V come from the F16 caches (the batch's are stored there first; k_batch / v_batch are not
// read), and Q and the probabilities are rounded to F16.
bool family_attention_on_tensor_cores(const Plan& plan, const FamilyAttention& a);
Status op_attention_family(Recorder& rec, const FamilyAttention& a);

// out[r][i] = act(gate[r][i]) * up[r][i], r < n_rows, i < n; out contiguous (F16 with out_f16).
// act: GELU's tanh approximation (gelu) or SiLU.
Status op_glu(Recorder& rec, bool gelu, RowView gate, RowView up, BufferRange out, uint32_t n,
              uint32_t n_rows, bool out_f16 = false);

// x[off + i] = cap * tanh(x[off + i] / cap), i < n.
Status op_softcap(Recorder& rec, BufferRange x, uint32_t off, uint32_t n, float cap);
// x[off + i] *= s, i < n.
Status op_scale(Recorder& rec, BufferRange x, uint32_t off, uint32_t n, float s);

}  // namespace ember::vulkan
