#version 450
// Rotary embedding in GGUF's adjacent-pair layout, in place: the pair (x[2i], x[2i+1]) of the
// first n_rot dims of every head is rotated by (step_pos0 + t) * base^(-2i/n_rot) / ff[i].
#extension GL_GOOGLE_include_directive : require
#include "include/common.glsl"

layout(binding = 0) buffer XBuf { float x[]; };
layout(binding = 1) readonly buffer FBuf { float ff[]; };
DECLARE_STEP_BUFFER(2)

layout(push_constant) uniform PC {
    uint n_tokens;
    uint n_heads;
    uint head_dim;
    uint n_rot;
    uint x_off;
    uint x_stride;  // floats between tokens
    float freq_base;
    uint has_ff;
} pc;

void main() {
    uint idx = linear_invocation();
    uint pairs = pc.n_rot / 2;
    if (idx >= pc.n_tokens * pc.n_heads * pairs) return;
    uint i = idx % pairs;
    uint h = (idx / pairs) % pc.n_heads;
    uint t = idx / (pairs * pc.n_heads);
    float pos = float(step_pos0 + t);
    float theta = pos * pow(pc.freq_base, -2.0 * float(i) / float(pc.n_rot));
    if (pc.has_ff != 0) theta /= ff[i];
    // Reduce to [0, 2pi): GPU sin/cos are only accurate near zero.
    const float two_pi = 6.283185307179586;
    theta -= two_pi * floor(theta / two_pi);
    float c = cos(theta), s = sin(theta);
    uint b = pc.x_off + t * pc.x_stride + h * pc.head_dim + 2 * i;
    float x0 = x[b], x1 = x[b + 1];
    x[b] = x0 * c - x1 * s;
    x[b + 1] = x0 * s + x1 * c;
}
