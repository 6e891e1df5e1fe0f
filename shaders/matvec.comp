#version 450
// y[y_off + r] = sum_c W[r, c] * x[x_off + c] for one token: one workgroup per output row, the
// weights dequantized in 32-element chunks inside the shader.
#extension GL_GOOGLE_include_directive : require
#include "include/common.glsl"
#define W_BINDING 0
#include "include/weights.glsl"

layout(binding = 1) readonly buffer XBuf { float x[]; };
layout(binding = 1) readonly buffer XBuf4 { vec4 x4[]; };
layout(binding = 2) writeonly buffer YBuf { float y[]; };

layout(push_constant) uniform PC {
    uint ncols;
    uint stride;  // units (elements or blocks) per row
    uint nrows;
    uint x_off;
    uint y_off;
} pc;

void main() {
    uint row = linear_workgroup();
    if (row >= pc.nrows) return;  // uniform across the workgroup
    uint nchunks = (pc.ncols + 31) / 32;
    float acc = 0.0;
    for (uint c = gl_LocalInvocationID.x; c < nchunks; c += WG_SIZE) {
        float w[32];
        dequant_chunk(row * pc.stride, c, pc.ncols, w);
        uint xb = pc.x_off + c * 32;
        uint n = min(32u, pc.ncols - c * 32);
        if (n == 32 && (xb & 3u) == 0) {
            // Whole chunks 16-byte aligned: vec4 loads, summed in the same order as below (the
            // fused decode is held to 1e-9 against this kernel).
            for (uint i = 0; i < 8; ++i) {
                vec4 xv = x4[xb / 4 + i];
                for (uint j = 0; j < 4; ++j) acc += w[4 * i + j] * xv[j];
            }
        } else {
            for (uint i = 0; i < n; ++i) acc += w[i] * x[xb + i];
        }
    }
    acc = wg_sum(acc);
    if (gl_LocalInvocationID.x == 0) y[pc.y_off + row] = acc;
}
