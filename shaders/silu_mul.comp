#version 450
// o[i] = silu(g[i]) * u[i]
#extension GL_GOOGLE_include_directive : require
#include "include/common.glsl"

layout(binding = 0) readonly buffer GBuf { float g[]; };
layout(binding = 1) readonly buffer UBuf { float u[]; };
layout(binding = 2) writeonly buffer OBuf { float o[]; };

layout(push_constant) uniform PC { uint n; uint g_off; uint u_off; uint o_off; } pc;

void main() {
    uint i = linear_invocation();
    if (i >= pc.n) return;
    float v = g[pc.g_off + i];
    o[pc.o_off + i] = v / (1.0 + exp(-v)) * u[pc.u_off + i];
}
