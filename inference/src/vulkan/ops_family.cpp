#include "vulkan/ops_family.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace ember::vulkan {
namespace {

constexpr uint32_t kWgHead = 64;   // qkv_rope.comp: one workgroup per head of a token
constexpr uint32_t kWgAttn = 64;   // attention_family.comp's tile (its shared arrays assume 64)
constexpr uint32_t kWgElem = 256;  // elementwise
constexpr int kMaxHeadDim = 512;   // the shaders' shared head arrays

constexpr uint32_t kWgCoopmat = 128;  // attention_coopmat.comp: 4 subgroups of 32
constexpr int kCoopmatQueries = 64;   // its queries a workgroup (SG * BQ)
constexpr int kCoopmatHead = 128;     // its staged rows of K and V (LDK, LDV) without SPLIT_O
constexpr int kCoopmatMaxHead = 256;  // and with SPLIT_O (two workgroups a head, 48 KiB shared)

// attention_coopmat.comp's specialization constants, in constant_id order (1).
struct AttentionCoopmatSpec {
    uint32_t head_dim;
};

Status bad_shape(const std::string& what) {
    return make_error("vulkan.unsupported_shape", what);
}

// YaRN's ramp ends and the magnitude of cos and sin, in double as cpu::rope computes them.
struct YarnRamp {
    float low = 0.0f, high = 0.0f, mscale = 1.0f;
};
YarnRamp yarn_ramp(const QkvRope& r) {
    YarnRamp y;
    double mscale = r.attn_factor;
    if (r.ext_factor != 0.0f) {
        // The pair index that turns `beta` times over n_ctx_orig tokens.
        auto corr_dim = [&](double beta) {
            return r.n_rot * std::log(r.n_ctx_orig / (beta * 2.0 * M_PI)) /
                   (2.0 * std::log(double(r.freq_base)));
        };
        y.low = float(std::max(0.0, std::floor(corr_dim(r.beta_fast))));
        y.high = float(std::min(double(r.n_rot - 1), std::ceil(corr_dim(r.beta_slow))));
        if (r.freq_scale < 1.0f) mscale *= 1.0 + 0.1 * std::log(1.0 / r.freq_scale);
    }
    y.mscale = float(mscale);
    return y;
}

}  // namespace

RopeRamp qkv_rope_ramp(const QkvRope& r) {
    const YarnRamp y = yarn_ramp(r);
    return {y.low, y.high, y.mscale};
}

Status op_qkv_rope(Recorder& rec, const QkvRope& r) {
    if (r.head_dim <= 0 || r.head_dim > kMaxHeadDim || r.n_rot % 2 != 0 || r.n_rot < 0 ||
        r.n_rot > r.head_dim)
        return bad_shape("qkv_rope needs head_dim in [1, " + std::to_string(kMaxHeadDim) +
                         "] and an even n_rot <= head_dim, got head_dim " +
                         std::to_string(r.head_dim) + ", n_rot " + std::to_string(r.n_rot));
    if (r.n_head <= 0 || r.n_head_kv <= 0 || r.n_tokens < 0)
        return bad_shape("qkv_rope needs positive head counts");
    if (r.kv_ring != 0 && r.kv_ring < uint32_t(r.n_tokens))
        return make_error("vulkan.bad_argument",
                          "qkv_rope: a cache ring of " + std::to_string(r.kv_ring) +
                              " rows cannot take a batch of " + std::to_string(r.n_tokens));
    const bool bias = r.bq.buffer != VK_NULL_HANDLE;
    const bool norm = r.q_norm.buffer != VK_NULL_HANDLE;
    if (bias != (r.bk.buffer && r.bv.buffer) || norm != (r.k_norm.buffer != VK_NULL_HANDLE))
        return make_error("vulkan.bad_argument",
                          "qkv_rope takes all of bq, bk, bv or none, and both q/k norms or none");
    if (r.ext_factor != 0.0f && (r.n_ctx_orig <= 0 || !(r.beta_fast > 0.0f) ||
                                 !(r.beta_slow > 0.0f) || !(r.freq_base > 1.0f)))
        return make_error("vulkan.bad_argument",
                          "qkv_rope: YaRN needs an original context, positive betas and a base "
                          "above 1");
    const YarnRamp y = yarn_ramp(r);
    struct {
        uint32_t n_head, n_head_kv, head_dim, n_rot;
        float freq_base, freq_scale, eps;
        uint32_t flags;
        uint32_t q_off, q_stride, k_off, k_stride, v_off, v_stride, kv_ring;
        float mscale, ext_factor, corr_low, corr_high;
    } pc{uint32_t(r.n_head),
         uint32_t(r.n_head_kv),
         uint32_t(r.head_dim),
         uint32_t(r.n_rot),
         r.freq_base,
         r.freq_scale,
         r.eps,
         (bias ? 1u : 0u) | (norm ? 2u : 0u) | (r.ff.buffer ? 4u : 0u) | (r.neox ? 8u : 0u),
         r.q.off,
         r.q.stride,
         r.k.off,
         r.k.stride,
         r.v.off,
         r.v.stride,
         r.kv_ring,
         y.mscale,
         r.ext_factor,
         y.low,
         y.high};
    // Unused bindings still need a buffer: q stands in.
    auto or_q = [&](BufferRange b) { return b.buffer ? b : r.q.buf; };
    return rec.dispatch("qkv_rope_f32_f16",
                        {r.q.buf, r.k.buf, r.v.buf, or_q(r.bq), or_q(r.bk), or_q(r.bv),
                         or_q(r.q_norm), or_q(r.k_norm), or_q(r.ff), r.step, r.k_cache, r.v_cache},
                        &pc, push_size<decltype(pc)>(), kWgHead,
                        uint32_t(r.n_head + 2 * r.n_head_kv), uint32_t(r.n_tokens));
}

bool family_attention_supported(const AttentionShape& s) {
    return s.head_dim > 0 && s.head_dim <= kMaxHeadDim && s.n_head_kv > 0 &&
           s.n_head % s.n_head_kv == 0;
}

bool family_attention_on_tensor_cores(const Plan& plan, const FamilyAttention& a) {
    const AttentionShape& s = a.s;
    return plan.family_attn_coopmat && !a.keep_f32 && s.n_tokens >= 16 && s.head_dim % 16 == 0 &&
           s.head_dim <= kCoopmatMaxHead && s.n_head_kv > 0 && s.n_head % s.n_head_kv == 0 &&
           a.q.off % 4 == 0 && a.q.stride % 4 == 0;
}

namespace {
// The batch on the tensor cores: 64 queries of one head a workgroup (of 256-wide heads two
// workgroups, each summing half of the output), keys and values of every position from the F16
// caches.
Status attention_family_coopmat(Recorder& rec, const FamilyAttention& a) {
    const AttentionShape& s = a.s;
    struct {
        uint32_t n_head, n_head_kv, q_stride, kv_stride, o_stride;
        float scale;
        uint32_t n_tokens, q_off;
        float softcap;
        uint32_t window, kv_ring;
    } pc{uint32_t(s.n_head),
         uint32_t(s.n_head_kv),
         a.q.stride,
         uint32_t(s.n_head_kv * s.head_dim),
         uint32_t(s.n_head * s.head_dim),
         s.scale,
         uint32_t(s.n_tokens),
         a.q.off,
         a.softcap,
         uint32_t(a.window > 0 ? a.window : 0),
         a.kv_ring};
    const bool split = s.head_dim > kCoopmatHead;
    return rec.dispatch(
        split ? "attention_coopmat_family_split_f16_f32" : "attention_coopmat_family_f16_f32",
        {a.q.buf, a.k_cache, a.v_cache, a.out, a.step}, &pc, push_size<decltype(pc)>(), kWgCoopmat,
        uint32_t(s.n_head), uint32_t((s.n_tokens + kCoopmatQueries - 1) / kCoopmatQueries),
        split ? 2 : 1, SpecConstants::of(AttentionCoopmatSpec{uint32_t(s.head_dim)}));
}
}  // namespace

Status op_attention_family(Recorder& rec, const FamilyAttention& a) {
    const AttentionShape& s = a.s;
    if (!family_attention_supported(s))
        return bad_shape("attention needs head_dim <= " + std::to_string(kMaxHeadDim) +
                         " and n_head a multiple of n_head_kv, got head_dim " +
                         std::to_string(s.head_dim) + ", heads " + std::to_string(s.n_head) + "/" +
                         std::to_string(s.n_head_kv));
    const bool batch = a.k_batch.buf.buffer && a.v_batch.buf.buffer;
    if (batch && a.k_batch.stride != a.v_batch.stride)
        return make_error("vulkan.bad_argument", "attention: batch K and V rows differ in stride");
    if (a.kv_ring != 0 &&
        (a.window <= 0 || uint64_t(a.kv_ring) < uint64_t(a.window) + uint64_t(s.n_tokens) - 1))
        return make_error("vulkan.bad_argument",
                          "attention: a cache ring of " + std::to_string(a.kv_ring) +
                              " rows needs a window of at most " +
                              std::to_string(int64_t(a.kv_ring) - s.n_tokens + 1) +
                              " positions for a batch of " + std::to_string(s.n_tokens));
    if (family_attention_on_tensor_cores(rec.plan(), a)) return attention_family_coopmat(rec, a);
    struct {
        uint32_t n_head, n_head_kv, head_dim, q_off, q_stride, kv_stride, o_stride;
        float scale, softcap;
        uint32_t window, batch_kv, kb_off, vb_off, b_stride, kv_ring;
    } pc{uint32_t(s.n_head),
         uint32_t(s.n_head_kv),
         uint32_t(s.head_dim),
         a.q.off,
         a.q.stride,
         uint32_t(s.n_head_kv * s.head_dim),
         uint32_t(s.n_head * s.head_dim),
         s.scale,
         a.softcap,
         uint32_t(a.window > 0 ? a.window : 0),
         batch ? 1u : 0u,
         a.k_batch.off,
         a.v_batch.off,
         a.k_batch.stride,
         a.kv_ring};
    // Unused batch bindings still need a buffer: the caches stand in.
    const BufferRange kb = batch ? a.k_batch.buf : a.k_cache,
                      vb = batch ? a.v_batch.buf : a.v_cache;
    return rec.dispatch(
        "attention_family_f16_f32", {a.q.buf, a.k_cache, a.v_cache, a.out, kb, vb, a.step}, &pc,
        push_size<decltype(pc)>(), kWgAttn, uint32_t(s.n_head), uint32_t(s.n_tokens));
}

Status op_glu(Recorder& rec, bool gelu, RowView gate, RowView up, BufferRange out, uint32_t n,
              uint32_t n_rows, bool out_f16) {
    struct {
        uint32_t n, n_rows, g_off, g_stride, u_off, u_stride;
    } pc{n, n_rows, gate.off, gate.stride, up.off, up.stride};
    const std::string shader =
        std::string(gelu ? "glu_gelu" : "glu_silu") + (out_f16 ? "_f32_f16" : "_f32_f32");
    const uint64_t total = uint64_t(n) * n_rows;
    return rec.dispatch_linear(shader, {gate.buf, up.buf, out}, &pc, push_size<decltype(pc)>(),
                               kWgElem, (total + kWgElem - 1) / kWgElem);
}

namespace {
Status in_place(Recorder& rec, const char* shader, BufferRange x, uint32_t off, uint32_t n,
                float value) {
    struct {
        uint32_t off, n;
        float value;
    } pc{off, n, value};
    return rec.dispatch_linear(shader, {x}, &pc, push_size<decltype(pc)>(), kWgElem,
                               (uint64_t(n) + kWgElem - 1) / kWgElem);
}
}  // namespace

Status op_softcap(Recorder& rec, BufferRange x, uint32_t off, uint32_t n, float cap) {
    if (!(cap > 0.0f)) return make_error("vulkan.bad_argument", "soft-cap must be positive");
    return in_place(rec, "softcap_f32_f32", x, off, n, cap);
}

Status op_scale(Recorder& rec, BufferRange x, uint32_t off, uint32_t n, float s) {
    return in_place(rec, "scale_f32_f32", x, off, n, s);
}

}  // namespace ember::vulkan
