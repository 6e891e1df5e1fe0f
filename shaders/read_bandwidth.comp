#version 450
// Reads a buffer once, 16 bytes at a time, for `ember-cli bench --membw` on a GPU: the memory
// roofline a decode step is held against. Each thread issues READS independent loads, the
// shape of the decode mat-vecs' weight stream; a checksum compared with a constant keeps the
// loads.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "include/common.glsl"

#define READS 4u

layout(binding = 0) readonly buffer Src { uvec4 src[]; };
layout(binding = 1) writeonly buffer Dst { uint dst[]; };

layout(push_constant) uniform PC {
    uint n;  // uvec4 in src
} pc;

void main() {
    uint base = linear_workgroup() * WG_SIZE * READS + gl_LocalInvocationID.x;
    uvec4 acc = uvec4(0u);
    [[unroll]] for (uint k = 0; k < READS; ++k) {
        uint i = base + k * WG_SIZE;
        if (i < pc.n) acc ^= src[i];
    }
    uint v = acc.x ^ acc.y ^ acc.z ^ acc.w;
    if (v == 0x9E3779B9u) dst[0] = v;  // rare (random contents) and harmless: dst is scratch
}
