#version 450
// o[i] = silu(g[i]) * u[i]. OUT_F16: o is F16 (the tensor-core matmul's input).
#extension GL_GOOGLE_include_directive : require
#include "include/common.glsl"

layout(binding = 0) readonly buffer GBuf { float g[]; };
layout(binding = 1) readonly buffer UBuf { float u[]; };
#if defined(OUT_F16)
layout(binding = 2) writeonly buffer OBuf { float16_t o[]; };
#else
layout(binding = 2) writeonly buffer OBuf { float o[]; };
#endif

layout(push_constant) uniform PC { uint n; uint g_off; uint u_off; uint o_off; } pc;

void main() {
    uint i = linear_invocation();
    if (i >= pc.n) return;
    float v = g[pc.g_off + i];
#if defined(OUT_F16)
    o[pc.o_off + i] = float16_t(v / (1.0 + exp(-v)) * u[pc.u_off + i]);
#else
    o[pc.o_off + i] = v / (1.0 + exp(-v)) * u[pc.u_off + i];
#endif
}
