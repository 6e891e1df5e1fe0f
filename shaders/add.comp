#version 450
// y[i] += x[i]
#extension GL_GOOGLE_include_directive : require
#include "include/common.glsl"

layout(binding = 0) buffer YBuf { float y[]; };
layout(binding = 1) readonly buffer XBuf { float x[]; };

layout(push_constant) uniform PC { uint n; uint y_off; uint x_off; } pc;

void main() {
    uint i = linear_invocation();
    if (i >= pc.n) return;
    y[pc.y_off + i] += x[pc.x_off + i];
}
