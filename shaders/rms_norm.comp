#version 450
// out = x / sqrt(mean(x^2) + eps) * w, one workgroup per row. ADD: x += r first, written back
// (the residual add before the next norm, one dispatch for both). OUT_F16: out is F16 (the
// tensor-core matmul's input, written here instead of copied after). ADD_OUT: out += the normed
// row instead (Gemma's post-attention and post-FFN norms with the residual add after them),
// and x zeroed as it is read: the decode step's down projection adds its column parts into it.
#extension GL_GOOGLE_include_directive : require
#include "include/common.glsl"

#if defined(ADD)
layout(binding = 0) buffer XBuf { float x[]; };
layout(binding = 3) readonly buffer RBuf { float r[]; };
#elif defined(ADD_OUT)
layout(binding = 0) buffer XBuf { float x[]; };
#else
layout(binding = 0) readonly buffer XBuf { float x[]; };
#endif
layout(binding = 1) readonly buffer WBuf { float w[]; };
#if defined(OUT_F16)
layout(binding = 2) writeonly buffer OutBuf { float16_t o[]; };
#elif defined(ADD_OUT)
layout(binding = 2) buffer OutBuf { float o[]; };
#else
layout(binding = 2) writeonly buffer OutBuf { float o[]; };
#endif

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
    for (uint i = gl_LocalInvocationID.x; i < pc.n; i += WG_SIZE) {
#if defined(ADD)
        // r's rows are n apart from 0; each thread rereads below only what it wrote here.
        float v = x[xb + i] + r[gl_WorkGroupID.x * pc.n + i];
        x[xb + i] = v;
#else
        float v = x[xb + i];
#endif
        ss += v * v;
    }
    ss = wg_sum(ss);
    float scale = 1.0 / sqrt(ss / float(pc.n) + pc.eps);
    for (uint i = gl_LocalInvocationID.x; i < pc.n; i += WG_SIZE) {
#if defined(OUT_F16)
        o[ob + i] = float16_t(x[xb + i] * scale * w[i]);
#elif defined(ADD_OUT)
        // Each thread zeroes only the elements that it alone read.
        o[ob + i] += x[xb + i] * scale * w[i];
        x[xb + i] = 0.0;
#else
        o[ob + i] = x[xb + i] * scale * w[i];
#endif
    }
}
