#version 450
// Rows [row0, row0 + nrows) of a weight matrix of any type, dequantized to F16 (ncols halfs a
// row), for the tensor-core matmul of the types that it does not read itself (ops.cpp): one
// thread per 32-column chunk.
#extension GL_GOOGLE_include_directive : require
#include "include/common.glsl"
#define W_BINDING 0
#include "include/weights.glsl"
#if defined(SPLIT_HI) || defined(SPLIT_LO)
#include "include/f16_split.glsl"
#endif

layout(binding = 1) writeonly buffer OutBuf { uint oh[]; };  // F16 pairs

layout(push_constant) uniform PC {
    uint ncols;  // even (ops.cpp checks)
    uint stride;
    uint row0;
    uint nrows;
} pc;

void main() {
    uint nchunks = (pc.ncols + 31) / 32;
    uint i = linear_workgroup() * WG_SIZE + gl_LocalInvocationID.x;
    if (i >= pc.nrows * nchunks) return;
    uint r = i / nchunks, c = i % nchunks;
    float w[32];
    dequant_chunk((pc.row0 + r) * pc.stride, c, pc.ncols, w);
    uint o = (r * pc.ncols + c * 32) / 2, n = min(32u, pc.ncols - c * 32);
#if defined(SPLIT_HI)
    // F32 weights' high or low F16 part (include/f16_split.glsl).
    for (uint k = 0; k < n; k += 2) oh[o + k / 2] = packHalf2x16(f16_hi(vec2(w[k], w[k + 1])));
#elif defined(SPLIT_LO)
    for (uint k = 0; k < n; k += 2) oh[o + k / 2] = packHalf2x16(f16_lo(vec2(w[k], w[k + 1])));
#else
    for (uint k = 0; k < n; k += 2) oh[o + k / 2] = packHalf2x16(vec2(w[k], w[k + 1]));
#endif
}
