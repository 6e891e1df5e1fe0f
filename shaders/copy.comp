#version 450
// Stores rows of floats as F16 at the step's position: dst[(step_pos0 + t) * dst_stride + i] =
// src[t * src_stride + i] (the K/V cache write). NO_STEP: at position 0 (the F16 copy of a
// matmul's activations).
#extension GL_GOOGLE_include_directive : require
#include "include/common.glsl"

layout(binding = 0) readonly buffer SrcBuf { float src[]; };
layout(binding = 1) writeonly buffer DstBuf { float16_t dst[]; };
#if defined(NO_STEP)
const uint step_pos0 = 0u;
#else
DECLARE_STEP_BUFFER(2)
#endif

layout(push_constant) uniform PC {
    uint n;  // floats per row
    uint n_tokens;
    uint src_off;
    uint src_stride;
    uint dst_off;
    uint dst_stride;
} pc;

void main() {
    uint idx = linear_invocation();
    if (idx >= pc.n * pc.n_tokens) return;
    uint t = idx / pc.n, i = idx % pc.n;
    dst[pc.dst_off + (step_pos0 + t) * pc.dst_stride + i] = float16_t(src[pc.src_off + t * pc.src_stride + i]);
}
