#version 450
// The gated FFN's product o[r][i] = act(g[r][i]) * u[r][i] over n_rows rows of n, with gate and
// up rows read at their own offsets and strides (Phi-3's fused ffn_up holds gate then up in one
// row of 2n). GELU: GELU's tanh approximation (Gemma); SILU: x * sigmoid(x). OUT_F16: o is F16
// (the tensor-core matmul's input).
#extension GL_GOOGLE_include_directive : require
#include "include/common.glsl"

layout(binding = 0) readonly buffer GBuf { float g[]; };
layout(binding = 1) readonly buffer UBuf { float u[]; };
#if defined(OUT_F16)
layout(binding = 2) writeonly buffer OBuf { float16_t o[]; };
#else
layout(binding = 2) writeonly buffer OBuf { float o[]; };
#endif

layout(push_constant) uniform PC {
    uint n, n_rows;
    uint g_off, g_stride, u_off, u_stride;  // floats
} pc;

void main() {
    uint idx = linear_invocation();
    if (idx >= pc.n * pc.n_rows) return;
    uint r = idx / pc.n, i = idx - r * pc.n;
    float x = g[pc.g_off + r * pc.g_stride + i];
#if defined(GELU)
    // tanh saturates well before |z| = 10; clamping keeps exp-based tanh from inf / inf.
    float z = clamp(0.7978845608028654 * (x + 0.044715 * x * x * x), -10.0, 10.0);
    float a = 0.5 * x * (1.0 + tanh(z));
#else
    float a = x / (1.0 + exp(-x));
#endif
    float y = a * u[pc.u_off + r * pc.u_stride + i];
#if defined(OUT_F16)
    o[idx] = float16_t(y);
#else
    o[idx] = y;
#endif
}
