#version 450
// Reads a buffer once, 16 bytes at a time, for `ember-cli bench --membw` on a GPU: the memory
// roofline a decode step is held against. Each thread issues READS independent loads, the
// shape of the decode mat-vecs' weight stream; a checksum compared with a constant keeps the
// loads.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "include/common.glsl"

#define READS 4u
#extension GL_KHR_shader_subgroup_ballot : require

// Timing only (EMBER_VULKAN_MEMBW_PATTERN): 0 = the plain read above; 1 = the decode mat-vec's
// pattern: persistent workgroups, each subgroup taking groups of 2 rows of 144 uvec4 (a
// 4096-column Q4_0 row), row g of the first half and of the second, U pieces a lane a row per
// step; 2 = the same bytes per step, the group's rows side by side (one contiguous run).
layout(constant_id = 1) const uint PATTERN = 0;
layout(constant_id = 2) const uint U = 3;
const uint ROW = 144u;

layout(binding = 0) readonly buffer Src { uvec4 src[]; };
layout(binding = 1) writeonly buffer Dst { uint dst[]; };

layout(push_constant) uniform PC {
    uint n;  // uvec4 in src
} pc;

void main_rows() {
    const uint lane = gl_SubgroupInvocationID, sgs = gl_SubgroupSize;
    const uint n_sg = gl_NumWorkGroups.x * gl_NumWorkGroups.y * gl_NumSubgroups;
    const uint n_groups = pc.n / (2u * ROW);
    uvec4 acc = uvec4(0u);
    for (uint g = linear_workgroup() * gl_NumSubgroups + gl_SubgroupID; g < n_groups; g += n_sg) {
        const uint ra = PATTERN == 1u ? g * ROW : 2u * g * ROW;
        const uint rb = PATTERN == 1u ? (g + n_groups) * ROW : ra;
        for (uint s0 = 0u; s0 < ROW; s0 += sgs * U) {
            uvec4 v[2u * U];
            [[unroll]] for (uint u = 0u; u < U; ++u) {
                const uint i = min(s0 + u * sgs + lane, ROW - 1u);
                v[u] = src[ra + (PATTERN == 1u ? i : min(2u * s0 + u * sgs + lane, 2u * ROW - 1u))];
                v[U + u] = src[rb + (PATTERN == 1u ? i : min(2u * s0 + (U + u) * sgs + lane, 2u * ROW - 1u))];
            }
            [[unroll]] for (uint u = 0u; u < 2u * U; ++u) acc ^= v[u];
        }
    }
    uint w = acc.x ^ acc.y ^ acc.z ^ acc.w;
    if (w == 0x9E3779B9u) dst[0] = w;
}

void main() {
    if (PATTERN != 0u) {
        main_rows();
        return;
    }
    uint base = linear_workgroup() * WG_SIZE * READS + gl_LocalInvocationID.x;
    uvec4 acc = uvec4(0u);
    [[unroll]] for (uint k = 0; k < READS; ++k) {
        uint i = base + k * WG_SIZE;
        if (i < pc.n) acc ^= src[i];
    }
    uint v = acc.x ^ acc.y ^ acc.z ^ acc.w;
    if (v == 0x9E3779B9u) dst[0] = v;  // rare (random contents) and harmless: dst is scratch
}
