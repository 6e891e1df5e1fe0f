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

#include "include/rope_pair.glsl"

void main() {
    // A thread per pair; per token, Q's pairs, then K's, then V's.
    uint idx = linear_invocation();
    uint qp = pc.n_heads * pc.head_dim / 2u, kvd = pc.n_heads_kv * pc.head_dim;
    uint per = qp + kvd;
    if (idx >= pc.n_tokens * per) return;
    uint t = idx / per, p = idx - t * per;
    if (p < qp) {
        uint b = t * 2u * qp + 2u * p;
        float x0 = q[b], x1 = q[b + 1u];
        rope_pair((2u * p) % pc.head_dim, step_pos0 + t, x0, x1);
        q[b] = x0;
        q[b + 1u] = x1;
        return;
    }
    uint e = 2u * (p - qp), o = (step_pos0 + t) * kvd;
    if (e < kvd) {
        uint b = t * kvd + e;
        float x0 = k[b], x1 = k[b + 1u];
        rope_pair(e % pc.head_dim, step_pos0 + t, x0, x1);
        k[b] = x0;
        k[b + 1u] = x1;
        kc[o + e] = float16_t(x0);
        kc[o + e + 1u] = float16_t(x1);
    } else {
        uint b = t * kvd + e - kvd;
        vc[o + e - kvd] = float16_t(v[b]);
        vc[o + e - kvd + 1u] = float16_t(v[b + 1u]);
    }
}
