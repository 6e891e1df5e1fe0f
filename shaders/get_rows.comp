#version 450
// Embedding lookup: out[t] = dequantized row step_tokens[t] of the table. The table may be
// bound in pieces of rows [row0, row0 + nrows); tokens outside the piece are left alone.
// 8 threads share a 32-column chunk, each storing 4 of its columns, so that neighbouring
// threads store neighbouring words; workgroups split a row's chunks (x) and the tokens (y).
// (One workgroup a token, each thread storing whole chunks, took 12 us of a 7B decode step on
// the H200.)
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
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
    uint t = gl_WorkGroupID.y;
    uint tok = step_tokens[t];
    if (tok < pc.row0 || tok >= pc.row0 + pc.nrows) return;
    uint row = tok - pc.row0;
    uint g = gl_WorkGroupID.x * WG_SIZE + gl_LocalInvocationID.x;
    uint c = g / 8u, part = g % 8u;
    if (c >= (pc.ncols + 31u) / 32u) return;
    float w[32];
    dequant_chunk(row * pc.stride, c, pc.ncols, w);
    uint base = pc.out_off + t * pc.ncols + c * 32u;
    // (A constant index into w: a variable one would put the array in memory.)
    [[unroll]] for (uint i = 0; i < 32u; ++i)
        if (i / 4u == part && c * 32u + i < pc.ncols) o[base + i] = w[i];
}
