#version 450
// out = x / sqrt(mean(x^2) + eps) * w, one workgroup per row.
#extension GL_GOOGLE_include_directive : require
#include "include/common.glsl"

layout(binding = 0) readonly buffer XBuf { float x[]; };
layout(binding = 1) readonly buffer WBuf { float w[]; };
layout(binding = 2) writeonly buffer OutBuf { float o[]; };

layout(push_constant) uniform PC {
    uint n;
    float eps;
    uint x_off;
    uint x_stride;
    uint out_off;
    uint out_stride;
} pc;

void main() {
    uint xb = pc.x_off + gl_WorkGroupID.x * pc.x_stride;
    uint ob = pc.out_off + gl_WorkGroupID.x * pc.out_stride;
    float ss = 0.0;
    for (uint i = gl_LocalInvocationID.x; i < pc.n; i += WG_SIZE) ss += x[xb + i] * x[xb + i];
    ss = wg_sum(ss);
    float scale = 1.0 / sqrt(ss / float(pc.n) + pc.eps);
    for (uint i = gl_LocalInvocationID.x; i < pc.n; i += WG_SIZE) o[ob + i] = x[xb + i] * scale * w[i];
}
