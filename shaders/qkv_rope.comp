#version 450
// Everything between the Q/K/V projections and the attention, for every decoder family, in one
// dispatch: workgroup (slot, t) takes one head of token t (Q heads, then K heads, then V heads)
// and adds its bias (Qwen 2), RMS-normalizes it with its per-head weight (Qwen 3, Gemma 3: the
// file's weights are used as they are, as on the CPU), rotates its first n_rot dimensions (rope
// in adjacent-pair or half-split NEOX layout, linear scaling, Llama 3 / LongRoPE frequency
// factors, YaRN's blend of scaled and unscaled angles, cos and sin scaled by mscale), writes
// it back in place and stores K and V as F16 in the caches at the step's positions. Q, K and V
// may be views of one buffer (Phi-3's fused attn_qkv): each has its own offset and row stride.
// A sliding-window layer's cache may be a ring of kv_ring positions (position p in row
// p % kv_ring), so that it keeps no more than its window needs.
#extension GL_GOOGLE_include_directive : require
#include "include/common.glsl"

layout(binding = 0) buffer QBuf { float q[]; };
layout(binding = 1) buffer KBuf { float k[]; };
layout(binding = 2) buffer VBuf { float v[]; };
layout(binding = 3) readonly buffer BqBuf { float bq[]; };
layout(binding = 4) readonly buffer BkBuf { float bk[]; };
layout(binding = 5) readonly buffer BvBuf { float bv[]; };
layout(binding = 6) readonly buffer QnBuf { float qn[]; };
layout(binding = 7) readonly buffer KnBuf { float kn[]; };
layout(binding = 8) readonly buffer FBuf { float ff[]; };
DECLARE_STEP_BUFFER(9)
layout(binding = 10) writeonly buffer KCache { float16_t kc[]; };
layout(binding = 11) writeonly buffer VCache { float16_t vc[]; };

const uint HAS_BIAS = 1u, HAS_QK_NORM = 2u, HAS_FF = 4u, NEOX = 8u;

layout(push_constant) uniform PC {
    uint n_head;     // of Q
    uint n_head_kv;  // of K and V, and of the caches' rows
    uint head_dim;   // <= 512
    uint n_rot;      // dimensions rotated at the start of each head (even, <= head_dim)
    float freq_base;
    float freq_scale;  // 1 / linear scaling factor
    float eps;         // of the q/k norm
    uint flags;
    uint q_off, q_stride, k_off, k_stride, v_off, v_stride;  // floats
    uint kv_ring;  // rows of the caches when they are rings; 0: one row per position
    // cos and sin times mscale (rope.scaling.attn_factor, and YaRN's 1 + 0.1 ln(1/scale));
    // YaRN (ext_factor > 0): pair i keeps ext_factor * ramp(i) of its unscaled angle, the ramp
    // falling from 1 at pair corr_low to 0 at corr_high (cpu::rope computes the same).
    float mscale, ext_factor, corr_low, corr_high;
} pc;

shared float x_s[512];

#include "include/rope_family.glsl"

void main() {
    uint slot = gl_WorkGroupID.x, t = gl_WorkGroupID.y, tid = gl_LocalInvocationID.x;
    uint hd = pc.head_dim, kvd = pc.n_head_kv * hd;
    uint pos = step_pos0 + t;
    uint row = pc.kv_ring > 0u ? pos % pc.kv_ring : pos;  // of the caches
    // kind 0: Q head h; 1: K head h; 2: V head h
    uint kind = slot < pc.n_head ? 0u : (slot < pc.n_head + pc.n_head_kv ? 1u : 2u);
    uint h = kind == 0u ? slot : (kind == 1u ? slot - pc.n_head : slot - pc.n_head - pc.n_head_kv);
    uint base = kind == 0u ? pc.q_off + t * pc.q_stride
                           : (kind == 1u ? pc.k_off + t * pc.k_stride : pc.v_off + t * pc.v_stride);
    base += h * hd;
    bool bias = (pc.flags & HAS_BIAS) != 0u;

    // Load (and add the bias)
    float ss = 0.0;
    for (uint d = tid; d < hd; d += WG_SIZE) {
        float x;
        if (kind == 0u) x = q[base + d] + (bias ? bq[h * hd + d] : 0.0);
        else if (kind == 1u) x = k[base + d] + (bias ? bk[h * hd + d] : 0.0);
        else x = v[base + d] + (bias ? bv[h * hd + d] : 0.0);
        x_s[d] = x;
        ss += x * x;
    }
    if (kind == 2u) {
        // V: stored as it is (after the bias), in place for the attention's batch reads too
        uint o = row * kvd + h * hd;
        for (uint d = tid; d < hd; d += WG_SIZE) {
            if (bias) v[base + d] = x_s[d];
            vc[o + d] = float16_t(x_s[d]);
        }
        return;
    }
    // Per-head RMSNorm (uniform branch: flags are push constants)
    if ((pc.flags & HAS_QK_NORM) != 0u) {
        float r = inversesqrt(wg_sum(ss) / float(hd) + pc.eps);
        for (uint d = tid; d < hd; d += WG_SIZE) x_s[d] *= r * (kind == 0u ? qn[d] : kn[d]);
    }
    barrier();
    // RoPE: pair i is (2i, 2i+1), or (i, i + n_rot/2) in NEOX layout
    uint half_rot = pc.n_rot / 2u;
    bool neox = (pc.flags & NEOX) != 0u;
    for (uint i = tid; i < half_rot; i += WG_SIZE) {
        vec2 cs = family_rope_cs(i, pos, pc.n_rot, pc.freq_base, pc.freq_scale,
                                 (pc.flags & HAS_FF) != 0u, pc.ext_factor, pc.corr_low,
                                 pc.corr_high, pc.mscale);
        float c = cs.x, s = cs.y;
        uint ia = neox ? i : 2u * i, ib = neox ? i + half_rot : 2u * i + 1u;
        float a = x_s[ia], b = x_s[ib];
        x_s[ia] = a * c - b * s;
        x_s[ib] = a * s + b * c;
    }
    barrier();
    if (kind == 0u) {
        for (uint d = tid; d < hd; d += WG_SIZE) q[base + d] = x_s[d];
    } else {
        uint o = row * kvd + h * hd;
        for (uint d = tid; d < hd; d += WG_SIZE) {
            k[base + d] = x_s[d];
            kc[o + d] = float16_t(x_s[d]);
        }
    }
}
