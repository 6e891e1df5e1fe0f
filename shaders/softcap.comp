#version 450
// In place on x[off .. off + n): x = cap * tanh(x / cap) (Gemma 2's final logits), or with
// SCALE x = x * value (Gemma's embeddings times sqrt(n_embd)).
#extension GL_GOOGLE_include_directive : require
#include "include/common.glsl"

layout(binding = 0) buffer XBuf { float x[]; };

layout(push_constant) uniform PC { uint off, n; float value; } pc;

void main() {
    uint i = linear_invocation();
    if (i >= pc.n) return;
#if defined(SCALE)
    x[pc.off + i] *= pc.value;
#else
    // tanh is 1 in float well before 10; clamping keeps exp-based tanh from inf / inf.
    x[pc.off + i] = pc.value * tanh(clamp(x[pc.off + i] / pc.value, -10.0, 10.0));
#endif
}
