// Elementwise and attention ops of the CPU forward pass. They also serve as the reference
// the Vulkan ops are tested against.
#pragma once

#include <cstdint>

#include "cpu/threadpool.h"

namespace ember::cpu {

// out[i] = x[i] / sqrt(mean(x^2) + eps) * w[i], for n elements. out may alias x.
void rms_norm(const float* x, const float* w, float* out, int n, float eps);

// Rotates adjacent pairs (x[2i], x[2i+1]) of the first n_rot dims of each of n_heads heads
// of size head_dim by pos * theta_i, theta_i = base^(-2i/n_rot) / freq_factors[i] (if given).
void rope(float* x, int n_heads, int head_dim, int n_rot, int pos, float freq_base,
          const float* freq_factors);

// out[i] = silu(gate[i]) * up[i]. out may alias gate.
void silu_mul(const float* gate, const float* up, float* out, int n);

// y[i] += x[i]
void add_inplace(float* y, const float* x, int n);

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
