// Elementwise and attention ops of the CPU forward pass. They also serve as the reference
// the Vulkan ops are tested against.
#pragma once

#include <cstdint>

#include "cpu/threadpool.h"

namespace ember::cpu {

// out[i] = x[i] / sqrt(mean(x^2) + eps) * w[i], for n elements. out may alias x.
void rms_norm(const float* x, const float* w, float* out, int n, float eps);

// How rope rotates the first n_rot dims of a head (the rest pass through: partial rotary).
// Pair i (i < n_rot/2) turns by theta_i = pos * base^(-2i/n_rot) / freq_factors[i] times
// freq_scale; with YaRN (ext_factor > 0) the pairs that turn often over the original context
// keep part of their unscaled angle (llama.cpp's rope_yarn, Hugging Face's YaRN inv_freq).
struct RopeSpec {
    int n_rot = 0;
    float freq_base = 10000.0f;
    float freq_scale = 1.0f;              // 1 / scaling factor (linear or YaRN)
    const float* freq_factors = nullptr;  // [n_rot/2] divisors (Llama 3, LongRoPE), or none
    bool neox = false;         // pair i is (x[i], x[i + n_rot/2]) instead of (x[2i], x[2i+1])
    float attn_factor = 1.0f;  // cos and sin times this (rope.scaling.attn_factor)
    // YaRN: the ramp runs from the pair turning beta_fast times over n_ctx_orig tokens
    // (unscaled) to the one turning beta_slow times (fully scaled); the magnitude also gets
    // 1 + 0.1 ln(1 / freq_scale).
    float ext_factor = 0.0f;
    float beta_fast = 32.0f, beta_slow = 1.0f;
    int n_ctx_orig = 0;
};
void rope(float* x, int n_heads, int head_dim, int pos, const RopeSpec& spec);
// Adjacent pairs, no scaling.
void rope(float* x, int n_heads, int head_dim, int n_rot, int pos, float freq_base,
          const float* freq_factors);

// out[i] = silu(gate[i]) * up[i]. out may alias gate.
void silu_mul(const float* gate, const float* up, float* out, int n);
// out[i] = gelu_tanh(gate[i]) * up[i], with GELU's tanh approximation
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). out may alias gate.
void gelu_tanh_mul(const float* gate, const float* up, float* out, int n);

// x[i] = cap * tanh(x[i] / cap) (soft-capping).
void softcap(float* x, int n, float cap);

// y[i] += x[i]
void add_inplace(float* y, const float* x, int n);
// x[i] *= s
void scale_inplace(float* x, int n, float s);

// What attention computes, beyond the shapes: score = scale * q.k, then soft-capped when
// softcap > 0, then causally masked; with window > 0 the query at position i also sees only
// keys j with i - window < j (a sliding window). v heads have head_dim_v dims (0: head_dim).
struct AttentionSpec {
    int n_head = 0, n_head_kv = 0, head_dim = 0;
    float scale = 0.0f;
    float softcap = 0.0f;
    int window = 0;
    int head_dim_v = 0;
};
// q: [n_tokens][n_head * head_dim]; k_cache: [n_ctx][n_head_kv * head_dim], v_cache:
// [n_ctx][n_head_kv * head_dim_v] F32 (positions < pos0 + n_tokens are filled); out:
// [n_tokens][n_head * head_dim_v]. scratch: at least pool.size() * (pos0 + n_tokens) floats.
void attention(ThreadPool& pool, const float* q, const float* k_cache, const float* v_cache,
               float* out, int n_tokens, int pos0, const AttentionSpec& spec, float* scratch);

// Causal attention of n_tokens queries at positions [pos0, pos0 + n_tokens) over the cache.
// q: [n_tokens][n_head * head_dim]; k_cache, v_cache: [n_ctx][n_head_kv * head_dim] as F16
// (positions < pos0 + n_tokens are filled); out: [n_tokens][n_head * head_dim].
// Query head h reads KV head h / (n_head / n_head_kv) (grouped-query attention).
// scratch: at least pool.size() * (pos0 + n_tokens) floats.
void attention(ThreadPool& pool, const float* q, const uint16_t* k_cache, const uint16_t* v_cache,
               float* out, int n_tokens, int pos0, int n_head, int n_head_kv, int head_dim,
               float* scratch);
// The same over an F32 cache (the CPU backend's default: it keeps logits within 1e-3 of a
// float64 reference, which an F16 cache does not guarantee).
void attention(ThreadPool& pool, const float* q, const float* k_cache, const float* v_cache,
               float* out, int n_tokens, int pos0, int n_head, int n_head_kv, int head_dim,
               float* scratch);

}  // namespace ember::cpu
