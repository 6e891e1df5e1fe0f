#version 450
// dst (F16)[i] = src[i], i < n: the F16 copy of a matmul's activations.
#extension GL_GOOGLE_include_directive : require
#include "include/common.glsl"

layout(binding = 0) readonly buffer SrcBuf { float src[]; };
layout(binding = 1) writeonly buffer DstBuf { float16_t dst[]; };

layout(push_constant) uniform PC {
    uint n;
} pc;

void main() {
    uint i = linear_invocation();
    if (i < pc.n) dst[i] = float16_t(src[i]);
}
