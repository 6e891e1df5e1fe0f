#include "cpu/ops.h"

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

void rope(float* x, int n_heads, int head_dim, int n_rot, int pos, float freq_base,
          const float* freq_factors) {
    for (int i = 0; i < n_rot; i += 2) {
        double theta = double(pos) * std::pow(double(freq_base), -double(i) / n_rot);
        if (freq_factors) theta /= freq_factors[i / 2];
        const float c = float(std::cos(theta)), s = float(std::sin(theta));
        for (int h = 0; h < n_heads; h++) {
            float* v = x + size_t(h) * head_dim + i;
            const float a = v[0], b = v[1];
            v[0] = a * c - b * s;
            v[1] = a * s + b * c;
        }
    }
}

void silu_mul(const float* gate, const float* up, float* out, int n) {
    active_kernels().silu_mul(gate, up, out, n);
}

void add_inplace(float* y, const float* x, int n) {
    for (int i = 0; i < n; i++) y[i] += x[i];
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

    // Query head h of token t.
    void run(int t, int h, int thread) const {
        const int kvh = h / group;
        const int n_keys = pos0 + t + 1;  // causal: keys up to this token's own position
        const float* qh = q + size_t(t) * q_dim + size_t(h) * head_dim;
        float* att = scratch + size_t(thread) * n_ctx_used;
        float max_s = -INFINITY;
        for (int p = 0; p < n_keys; p++) {
            const KV* kp = k_cache + size_t(p) * kv_dim + size_t(kvh) * head_dim;
            const float s = dot_kv(ks, qh, kp, head_dim) * scale;
            att[p] = s;
            if (s > max_s) max_s = s;
        }
        float sum = 0.0f;
        for (int p = 0; p < n_keys; p++) {
            att[p] = std::exp(att[p] - max_s);
            sum += att[p];
        }
        const float inv = 1.0f / sum;
        float* oh = out + size_t(t) * q_dim + size_t(h) * head_dim;
        for (int d = 0; d < head_dim; d++) oh[d] = 0.0f;
        for (int p = 0; p < n_keys; p++) {
            const KV* vp = v_cache + size_t(p) * kv_dim + size_t(kvh) * head_dim;
            axpy_kv(ks, att[p] * inv, vp, oh, head_dim);
        }
    }
};

template <class KV>
void attention_impl(ThreadPool& pool, const float* q, const KV* k_cache, const KV* v_cache,
                    float* out, int n_tokens, int pos0, int n_head, int n_head_kv, int head_dim,
                    float* scratch) {
    const AttnJob<KV> job{active_kernels(),
                          q,
                          k_cache,
                          v_cache,
                          out,
                          scratch,
                          pos0,
                          n_head,
                          head_dim,
                          n_head_kv * head_dim,
                          n_head * head_dim,
                          n_head / n_head_kv,
                          pos0 + n_tokens,
                          1.0f / std::sqrt(float(head_dim))};
    // One task per (token, head); the lambda holds one pointer so std::function stays inline.
    pool.parallel_for(n_tokens * n_head, [j = &job](int task, int thread) {
        j->run(task / j->n_head, task % j->n_head, thread);
    });
}
}  // namespace

void attention(ThreadPool& pool, const float* q, const uint16_t* k_cache, const uint16_t* v_cache,
               float* out, int n_tokens, int pos0, int n_head, int n_head_kv, int head_dim,
               float* scratch) {
    attention_impl(pool, q, k_cache, v_cache, out, n_tokens, pos0, n_head, n_head_kv, head_dim,
                   scratch);
}

void attention(ThreadPool& pool, const float* q, const float* k_cache, const float* v_cache,
               float* out, int n_tokens, int pos0, int n_head, int n_head_kv, int head_dim,
               float* scratch) {
    attention_impl(pool, q, k_cache, v_cache, out, n_tokens, pos0, n_head, n_head_kv, head_dim,
                   scratch);
}

}  // namespace ember::cpu
