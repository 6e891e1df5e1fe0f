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
        if (n == 32 && (xb & 3u) == 0) {  // whole chunks 16-byte aligned: vec4 loads
            for (uint i = 0; i < 8; ++i)
                acc += dot(vec4(w[4 * i], w[4 * i + 1], w[4 * i + 2], w[4 * i + 3]), x4[xb / 4 + i]);
        } else {
            for (uint i = 0; i < n; ++i) acc += w[i] * x[xb + i];
        }
    }
    acc = wg_sum(acc);
    if (gl_LocalInvocationID.x == 0) y[pc.y_off + row] = acc;
}
