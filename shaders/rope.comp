#version 450
// Rotary embedding of a batch's Q and K in GGUF's adjacent-pair layout, in place: the pair
// (x[2i], x[2i+1]) of the first n_rot dims of every head of token t is rotated by
// (step_pos0 + t) * base^(-2i/n_rot) / ff[i]. K (rotated) and V are also stored as F16 in the
// caches at the step's positions: the whole step between the Q/K/V matmuls and the attention.
#extension GL_GOOGLE_include_directive : require
#include "include/common.glsl"

layout(binding = 0) buffer QBuf { float q[]; };
layout(binding = 1) readonly buffer FBuf { float ff[]; };
DECLARE_STEP_BUFFER(2)
layout(binding = 3) buffer KBuf { float k[]; };
layout(binding = 4) readonly buffer VBuf { float v[]; };
layout(binding = 5) writeonly buffer KCache { float16_t kc[]; };
layout(binding = 6) writeonly buffer VCache { float16_t vc[]; };

layout(push_constant) uniform PC {
    uint n_tokens;
    uint n_heads;  // of Q; rows of q are n_heads * head_dim floats
    uint n_heads_kv;  // of K and V, and of the caches' rows
    uint head_dim;
    uint n_rot;
    float freq_base;
    uint has_ff;
} pc;

// Pair (a, b) at dims d, d + 1 of a head (d even) of token t, rotated where d < n_rot.
vec2 rotated(uint t, uint d, vec2 ab) {
    if (d >= pc.n_rot) return ab;
    uint i = d / 2u;
    float theta = float(step_pos0 + t) * pow(pc.freq_base, -2.0 * float(i) / float(pc.n_rot));
    if (pc.has_ff != 0) theta /= ff[i];
    // Reduce to [0, 2pi): GPU sin/cos are only accurate near zero.
    const float two_pi = 6.283185307179586;
    theta -= two_pi * floor(theta / two_pi);
    float c = cos(theta), s = sin(theta);
    return vec2(ab.x * c - ab.y * s, ab.x * s + ab.y * c);
}

void main() {
    // A thread per pair; per token, Q's pairs, then K's, then V's.
    uint idx = linear_invocation();
    uint qp = pc.n_heads * pc.head_dim / 2u, kvd = pc.n_heads_kv * pc.head_dim;
    uint per = qp + kvd;
    if (idx >= pc.n_tokens * per) return;
    uint t = idx / per, p = idx - t * per;
    if (p < qp) {
        uint b = t * 2u * qp + 2u * p;
        vec2 r = rotated(t, (2u * p) % pc.head_dim, vec2(q[b], q[b + 1u]));
        q[b] = r.x;
        q[b + 1u] = r.y;
        return;
    }
    uint e = 2u * (p - qp), o = (step_pos0 + t) * kvd;
    if (e < kvd) {
        uint b = t * kvd + e;
        vec2 r = rotated(t, e % pc.head_dim, vec2(k[b], k[b + 1u]));
        k[b] = r.x;
        k[b + 1u] = r.y;
        kc[o + e] = float16_t(r.x);
        kc[o + e + 1u] = float16_t(r.y);
    } else {
        uint b = t * kvd + e - kvd;
        vc[o + e - kvd] = float16_t(v[b]);
        vc[o + e - kvd + 1u] = float16_t(v[b + 1u]);
    }
}
