#version 450
// The index of the largest of n floats (the lowest index among equals), in one workgroup.
#extension GL_GOOGLE_include_directive : require
#include "include/common.glsl"

layout(binding = 0) readonly buffer XBuf { float x[]; };
layout(binding = 1) writeonly buffer OBuf { uint result; };

layout(push_constant) uniform PC { uint n; uint x_off; } pc;

void main() {
    float best = -3.402823466e38;
    uint best_i = 0xffffffffu;
    for (uint i = gl_LocalInvocationID.x; i < pc.n; i += WG_SIZE) {
        float v = x[pc.x_off + i];
        if (v > best) { best = v; best_i = i; }
    }
    float m = wg_max(best);
    uint idx = wg_min_u(best == m ? best_i : 0xffffffffu);
    if (gl_LocalInvocationID.x == 0) result = idx == 0xffffffffu ? 0u : idx;
}
