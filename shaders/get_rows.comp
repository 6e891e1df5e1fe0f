#version 450
// Embedding lookup: out[t] = dequantized row step_tokens[t] of the table. The table may be
// bound in pieces of rows [row0, row0 + nrows); tokens outside the piece are left alone.
#extension GL_GOOGLE_include_directive : require
#include "include/common.glsl"
#define W_BINDING 0
#include "include/weights.glsl"

layout(binding = 1) writeonly buffer OutBuf { float o[]; };
DECLARE_STEP_BUFFER(2)

layout(push_constant) uniform PC {
    uint ncols;
    uint stride;
    uint row0;
    uint nrows;
    uint out_off;
} pc;

void main() {
    uint t = gl_WorkGroupID.x;
    uint tok = step_tokens[t];
    if (tok < pc.row0 || tok >= pc.row0 + pc.nrows) return;
    uint row = tok - pc.row0;
    uint nchunks = (pc.ncols + 31) / 32;
    for (uint c = gl_LocalInvocationID.x; c < nchunks; c += WG_SIZE) {
        float w[32];
        dequant_chunk(row * pc.stride, c, pc.ncols, w);
        uint n = min(32u, pc.ncols - c * 32);
        for (uint i = 0; i < n; ++i) o[pc.out_off + t * pc.ncols + c * 32 + i] = w[i];
    }
}
