#version 450
// Y[t, r] = sum_c W[r, c] * X[t, c] for a batch of tokens: one workgroup per output row and tile
// of TILE_T tokens, so each dequantized weight chunk serves TILE_T tokens.
#extension GL_GOOGLE_include_directive : require
#include "include/common.glsl"
#define W_BINDING 0
#include "include/weights.glsl"

#define TILE_T 8

layout(binding = 1) readonly buffer XBuf { float x[]; };
layout(binding = 2) writeonly buffer YBuf { float y[]; };

layout(push_constant) uniform PC {
    uint ncols;
    uint stride;    // units (elements or blocks) per row
    uint nrows;
    uint n_tokens;
    uint x_off;
    uint x_stride;  // floats between tokens of X
    uint y_off;
    uint y_stride;  // floats between tokens of Y
} pc;

void main() {
    uint row = linear_workgroup();
    if (row >= pc.nrows) return;  // uniform across the workgroup
    uint t0 = gl_WorkGroupID.z * TILE_T;
    uint nt = min(uint(TILE_T), pc.n_tokens - t0);
    uint nchunks = (pc.ncols + 31) / 32;
    float acc[TILE_T];
    for (uint t = 0; t < TILE_T; ++t) acc[t] = 0.0;
    for (uint c = gl_LocalInvocationID.x; c < nchunks; c += WG_SIZE) {
        float w[32];
        dequant_chunk(row * pc.stride, c, pc.ncols, w);
        uint n = min(32u, pc.ncols - c * 32);
        for (uint t = 0; t < nt; ++t) {
            uint xb = pc.x_off + (t0 + t) * pc.x_stride + c * 32;
            float s = 0.0;
            for (uint i = 0; i < n; ++i) s += w[i] * x[xb + i];
            acc[t] += s;
        }
    }
    for (uint t = 0; t < TILE_T; ++t) {
        float s = wg_sum(acc[t]);
        if (gl_LocalInvocationID.x == 0 && t < nt) y[pc.y_off + (t0 + t) * pc.y_stride + row] = s;
    }
}
