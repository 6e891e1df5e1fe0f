#include "cpu/ops.h"

#include <algorithm>
#include <cmath>

#include "cpu/kernels.h"
#include "quant/quant.h"

namespace ember::cpu {

void rms_norm(const float* x, const float* w, float* out, int n, float eps) {
    double ss = 0.0;  // double: the sum of n squares must not lose the small terms
    for (int i = 0; i < n; i++) ss += double(x[i]) * x[i];
    const float scale = float(1.0 / std::sqrt(ss / n + eps));
    for (int i = 0; i < n; i++) out[i] = x[i] * scale * w[i];
}

namespace {
// The pair index where the pair turns `beta` times over n_ctx_orig tokens (llama.cpp's
// ggml_rope_yarn_corr_dim, Hugging Face's find_correction_dim).
double yarn_corr_dim(const RopeSpec& s, double beta) {
    return s.n_rot * std::log(s.n_ctx_orig / (beta * 2.0 * M_PI)) / (2.0 * std::log(s.freq_base));
}
}  // namespace

void rope(float* x, int n_heads, int head_dim, int pos, const RopeSpec& spec) {
    const int half = spec.n_rot / 2;
    // Pair i is (x[a], x[b]): adjacent, or split across the two halves of the rotated dims.
    const int stride = spec.neox ? 1 : 2, partner = spec.neox ? half : 1;
    const bool yarn = spec.ext_factor != 0.0f;
    double low = 0.0, high = 0.0, mscale = spec.attn_factor;
    if (yarn) {
        low = std::max(0.0, std::floor(yarn_corr_dim(spec, spec.beta_fast)));
        high = std::min(double(spec.n_rot - 1), std::ceil(yarn_corr_dim(spec, spec.beta_slow)));
        if (spec.freq_scale < 1.0f) mscale *= 1.0 + 0.1 * std::log(1.0 / spec.freq_scale);
    }
    for (int i = 0; i < half; i++) {
        double theta = double(pos) * std::pow(double(spec.freq_base), -2.0 * i / spec.n_rot);
        if (spec.freq_factors) theta /= spec.freq_factors[i];
        const double extrap = theta;
        theta *= spec.freq_scale;
        if (yarn) {
            // 1 below `low` (unscaled), 0 above `high` (scaled), linear between
            const double ramp = 1.0 - std::clamp((i - low) / std::max(0.001, high - low), 0.0, 1.0);
            const double mix = ramp * spec.ext_factor;
            theta = theta * (1.0 - mix) + extrap * mix;
        }
        const float c = float(std::cos(theta) * mscale), s = float(std::sin(theta) * mscale);
        for (int h = 0; h < n_heads; h++) {
            float* v = x + size_t(h) * head_dim + size_t(i) * stride;
            const float a = v[0], b = v[partner];
            v[0] = a * c - b * s;
            v[partner] = a * s + b * c;
        }
    }
}

void rope(float* x, int n_heads, int head_dim, int n_rot, int pos, float freq_base,
          const float* freq_factors) {
    RopeSpec spec;
    spec.n_rot = n_rot;
    spec.freq_base = freq_base;
    spec.freq_factors = freq_factors;
    rope(x, n_heads, head_dim, pos, spec);
}

void silu_mul(const float* gate, const float* up, float* out, int n) {
    active_kernels().silu_mul(gate, up, out, n);
}

void gelu_tanh_mul(const float* gate, const float* up, float* out, int n) {
    active_kernels().gelu_tanh_mul(gate, up, out, n);
}

void softcap(float* x, int n, float cap) {
    active_kernels().softcap(x, n, cap);
}

void add_inplace(float* y, const float* x, int n) {
    for (int i = 0; i < n; i++) y[i] += x[i];
}

void scale_inplace(float* x, int n, float s) {
    for (int i = 0; i < n; i++) x[i] *= s;
}

namespace {
inline float load_kv(const uint16_t* p, int i) {
    return fp16_to_fp32(p[i]);
}
inline float load_kv(const float* p, int i) {
    return p[i];
}

// q . k and out += a * v over one head; the F32 cache uses the SIMD helpers.
inline float dot_kv(const KernelSet&, const float* q, const uint16_t* k, int n) {
    float s = 0.0f;
    for (int d = 0; d < n; d++) s += q[d] * load_kv(k, d);
    return s;
}
inline float dot_kv(const KernelSet& ks, const float* q, const float* k, int n) {
    return ks.dot(q, k, n);
}
inline void axpy_kv(const KernelSet&, float a, const uint16_t* v, float* out, int n) {
    for (int d = 0; d < n; d++) out[d] += a * load_kv(v, d);
}
inline void axpy_kv(const KernelSet& ks, float a, const float* v, float* out, int n) {
    ks.axpy(a, v, out, n);
}

template <class KV>
struct AttnJob {
    const KernelSet& ks;
    const float* q;
    const KV* k_cache;
    const KV* v_cache;
    float* out;
    float* scratch;
    int pos0, n_head, head_dim, kv_dim, q_dim, group, n_ctx_used;
    float scale;
    int head_dim_v, v_dim, out_dim;  // v heads' size, v rows, output rows
    float softcap = 0.0f;            // > 0: cap * tanh(s / cap) on the scaled scores
    int window = 0;                  // > 0: keys j with pos - window < j only

    // Query head h of token t.
    void run(int t, int h, int thread) const {
        const int kvh = h / group;
        const int n_keys = pos0 + t + 1;  // causal: keys up to this token's own position
        const int first = window > 0 ? std::max(0, n_keys - window) : 0;  // sliding window
        const float* qh = q + size_t(t) * q_dim + size_t(h) * head_dim;
        float* att = scratch + size_t(thread) * n_ctx_used;
        float max_s = -INFINITY;
        for (int p = first; p < n_keys; p++) {
            const KV* kp = k_cache + size_t(p) * kv_dim + size_t(kvh) * head_dim;
            att[p] = dot_kv(ks, qh, kp, head_dim) * scale;
        }
        if (softcap > 0.0f) ks.softcap(att + first, n_keys - first, softcap);
        for (int p = first; p < n_keys; p++) max_s = std::max(max_s, att[p]);
        float sum = 0.0f;
        for (int p = first; p < n_keys; p++) {
            att[p] = std::exp(att[p] - max_s);
            sum += att[p];
        }
        const float inv = 1.0f / sum;
        float* oh = out + size_t(t) * out_dim + size_t(h) * head_dim_v;
        for (int d = 0; d < head_dim_v; d++) oh[d] = 0.0f;
        for (int p = first; p < n_keys; p++) {
            const KV* vp = v_cache + size_t(p) * v_dim + size_t(kvh) * head_dim_v;
            axpy_kv(ks, att[p] * inv, vp, oh, head_dim_v);
        }
    }
};

template <class KV>
void attention_impl(ThreadPool& pool, const float* q, const KV* k_cache, const KV* v_cache,
                    float* out, int n_tokens, int pos0, const AttentionSpec& a, float* scratch) {
    const int hd_v = a.head_dim_v > 0 ? a.head_dim_v : a.head_dim;
    const AttnJob<KV> job{active_kernels(),
                          q,
                          k_cache,
                          v_cache,
                          out,
                          scratch,
                          pos0,
                          a.n_head,
                          a.head_dim,
                          a.n_head_kv * a.head_dim,
                          a.n_head * a.head_dim,
                          a.n_head / a.n_head_kv,
                          pos0 + n_tokens,
                          a.scale,
                          hd_v,
                          a.n_head_kv * hd_v,
                          a.n_head * hd_v,
                          a.softcap,
                          a.window};
    // One task per (token, head); the lambda holds one pointer so std::function stays inline.
    pool.parallel_for(n_tokens * a.n_head, [j = &job](int task, int thread) {
        j->run(task / j->n_head, task % j->n_head, thread);
    });
}

AttentionSpec plain(int n_head, int n_head_kv, int head_dim) {
    AttentionSpec a;
    a.n_head = n_head;
    a.n_head_kv = n_head_kv;
    a.head_dim = head_dim;
    a.scale = 1.0f / std::sqrt(float(head_dim));
    return a;
}
}  // namespace

void attention(ThreadPool& pool, const float* q, const uint16_t* k_cache, const uint16_t* v_cache,
               float* out, int n_tokens, int pos0, int n_head, int n_head_kv, int head_dim,
               float* scratch) {
    attention_impl(pool, q, k_cache, v_cache, out, n_tokens, pos0,
                   plain(n_head, n_head_kv, head_dim), scratch);
}

void attention(ThreadPool& pool, const float* q, const float* k_cache, const float* v_cache,
               float* out, int n_tokens, int pos0, int n_head, int n_head_kv, int head_dim,
               float* scratch) {
    attention_impl(pool, q, k_cache, v_cache, out, n_tokens, pos0,
                   plain(n_head, n_head_kv, head_dim), scratch);
}

void attention(ThreadPool& pool, const float* q, const float* k_cache, const float* v_cache,
               float* out, int n_tokens, int pos0, const AttentionSpec& spec, float* scratch) {
    attention_impl(pool, q, k_cache, v_cache, out, n_tokens, pos0, spec, scratch);
}

}  // namespace ember::cpu
