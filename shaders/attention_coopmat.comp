#version 450
// Causal attention of a batch of queries on the tensor cores (GL_NV_cooperative_matrix): a
// workgroup of 4 subgroups of 32 takes BQ queries of one head and walks the keys in tiles of
// BK positions of the F16 cache (the batch's own keys and values are stored there first).
// Two passes over the keys: the first finds each query's softmax maximum, the second adds P V
// with it fixed, so the output accumulators never need rescaling (NV cooperative matrices
// cannot scale rows), and sums the denominator that divides the output at the end; computing
// Q K^T twice is cheap on tensor cores.
// Q, K, V and P are F16 (products accumulate in F32). Needs head_dim % 16 == 0 and
// head_dim <= 128 (ops.cpp checks).
#extension GL_GOOGLE_include_directive : require
#extension GL_NV_cooperative_matrix : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_control_flow_attributes : require
#include "include/common.glsl"

layout(binding = 0) readonly buffer QBuf { float q[]; };
layout(binding = 1) readonly buffer KBuf { uvec4 kc4[]; };
layout(binding = 2) readonly buffer VBuf { uvec4 vc4[]; };
layout(binding = 3) writeonly buffer OBuf { float o[]; };
DECLARE_STEP_BUFFER(4)

layout(push_constant) uniform PC {
    uint n_head;
    uint n_head_kv;
    uint head_dim;
    uint q_off;
    uint q_stride;   // floats between tokens of q
    uint kv_stride;  // halfs between positions of the cache
    uint o_off;
    uint o_stride;
    float scale;
    uint n_tokens;
} pc;

#define BQ 32u
#define BK 64u
#define LDH 17u        // uvec4 per staged row of up to 128 halfs, + 1 to spread banks
#define LDS (BK + 4u)  // floats per row of scores
#define LDP 9u         // uvec4 per row of P (64 halfs + 8)
#define OUT_FRAGS 8u   // output fragments (16 x 8) per subgroup: head_dim / 16 of them

shared uvec4 sq[BQ * LDH];   // Q, scaled: [query][dim]
shared uvec4 skv[BK * LDH];  // the tile's K, then its V: [position][dim]
shared float ss[BQ * LDS];   // scores [query][position]
shared uvec4 sp[BQ * LDP];   // probabilities [query][position]
shared float sred[BQ * 4u];  // per-row partial maxima / sums of 4 threads
shared float so[4u * 128u];  // per subgroup: one output fragment on its way out

uint hd8, kv0, n_keys;

// Positions [kt * BK, kt * BK + BK) of the cache into skv (zeros past the keys in use).
void load_tile(uint kt, bool values) {
    uint tid = gl_LocalInvocationID.x;
    for (uint i = tid; i < BK * hd8; i += WG_SIZE) {
        uint p = i / hd8, c = i - p * hd8, j = kt * BK + p;
        uvec4 v = uvec4(0u);
        if (j < n_keys) {
            uint a = j * (pc.kv_stride / 8u) + kv0 + c;
            v = values ? vc4[a] : kc4[a];
        }
        skv[p * LDH + c] = v;
    }
}

// Scores of key tile kt into ss (unmasked).
void scores(uint kt) {
    load_tile(kt, false);
    barrier();
    uint sg = gl_SubgroupID;
    uint r0 = (sg & 1u) * 16u, c0 = (sg >> 1) * 32u;
    fcoopmatNV<32, gl_ScopeSubgroup, 16, 8> acc[4];
    [[unroll]] for (uint j = 0; j < 4u; ++j) acc[j] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 8>(0.0);
    for (uint d = 0; d < pc.head_dim; d += 16u) {
        fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> a;
        coopMatLoadNV(a, sq, r0 * LDH + d / 8u, LDH, false);
        [[unroll]] for (uint j = 0; j < 4u; ++j) {
            fcoopmatNV<16, gl_ScopeSubgroup, 16, 8> b;
            coopMatLoadNV(b, skv, (c0 + 8u * j) * LDH + d / 8u, LDH, true);
            acc[j] = coopMatMulAddNV(a, b, acc[j]);
        }
    }
    [[unroll]] for (uint j = 0; j < 4u; ++j)
        coopMatStoreNV(acc[j], ss, r0 * LDS + c0 + 8u * j, LDS, false);
    barrier();
}

void main() {
    const uint h = gl_WorkGroupID.x, t0 = gl_WorkGroupID.y * BQ, tid = gl_LocalInvocationID.x;
    const uint hd = pc.head_dim, hk = h / (pc.n_head / pc.n_head_kv);
    hd8 = hd / 8u;
    kv0 = hk * hd8;
    const uint t_end = min(t0 + BQ, pc.n_tokens);
    n_keys = step_pos0 + t_end;  // the last query of the block sees these positions
    const uint n_tiles = (n_keys + BK - 1u) / BK;

    for (uint i = tid; i < BQ * hd8; i += WG_SIZE) {
        uint r = i / hd8, c = i - r * hd8, t = t0 + r;
        uvec4 v = uvec4(0u);
        if (t < pc.n_tokens) {
            uint b = pc.q_off + t * pc.q_stride + h * hd + c * 8u;
            vec4 x = vec4(q[b], q[b + 1u], q[b + 2u], q[b + 3u]) * pc.scale;
            vec4 y = vec4(q[b + 4u], q[b + 5u], q[b + 6u], q[b + 7u]) * pc.scale;
            v = uvec4(packHalf2x16(x.xy), packHalf2x16(x.zw), packHalf2x16(y.xy), packHalf2x16(y.zw));
        }
        sq[r * LDH + c] = v;
    }

    // Thread (row, part) owns columns part * 16 .. + 16 of its query's row of scores. Pass 1:
    // each thread's own maximum over its columns of every tile; a row's 4 combine once.
    const uint row = tid >> 2, part = tid & 3u;
    const uint qpos = step_pos0 + t0 + row;  // positions <= qpos are visible
    float m = -1e30;
    for (uint kt = 0; kt < n_tiles; ++kt) {
        scores(kt);
        uint j0 = kt * BK + part * 16u;
        for (uint c = 0; c < 16u; ++c)
            if (j0 + c <= qpos) m = max(m, ss[row * LDS + part * 16u + c]);
    }
    sred[tid] = m;
    barrier();
    m = max(max(sred[row * 4u], sred[row * 4u + 1u]), max(sred[row * 4u + 2u], sred[row * 4u + 3u]));

    const uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
    const uint r0 = (sg & 1u) * 16u, c0 = (sg >> 1) * (hd / 2u), nf = hd / 16u;
    fcoopmatNV<32, gl_ScopeSubgroup, 16, 8> acc[OUT_FRAGS];
    [[unroll]] for (uint f = 0; f < OUT_FRAGS; ++f)
        acc[f] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 8>(0.0);
    // Pass 2: P = exp(S - m), at most 1, times V; each thread sums its part of the
    // denominator, which divides the output on its way out.
    float l = 0.0;
    for (uint kt = 0; kt < n_tiles; ++kt) {
        scores(kt);
        uint j0 = kt * BK + part * 16u;
        uint w[8];
        [[unroll]] for (uint c = 0; c < 16u; c += 2u) {
            float a = j0 + c <= qpos ? exp(ss[row * LDS + part * 16u + c] - m) : 0.0;
            float b = j0 + c + 1u <= qpos ? exp(ss[row * LDS + part * 16u + c + 1u] - m) : 0.0;
            l += a + b;
            w[c / 2u] = packHalf2x16(vec2(a, b));
        }
        sp[row * LDP + part * 2u] = uvec4(w[0], w[1], w[2], w[3]);
        sp[row * LDP + part * 2u + 1u] = uvec4(w[4], w[5], w[6], w[7]);
        load_tile(kt, true);
        barrier();
        for (uint k = 0; k < BK; k += 16u) {
            fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> a;
            coopMatLoadNV(a, sp, r0 * LDP + k / 8u, LDP, false);
            [[unroll]] for (uint f = 0; f < OUT_FRAGS; ++f) {
                if (f < nf) {
                    fcoopmatNV<16, gl_ScopeSubgroup, 16, 8> b;
                    coopMatLoadNV(b, skv, k * LDH + (c0 + 8u * f) / 8u, LDH, false);
                    acc[f] = coopMatMulAddNV(a, b, acc[f]);
                }
            }
        }
        barrier();
    }

    sred[tid] = l;
    barrier();
    // Out through a per-subgroup fragment in shared memory, divided by the row's denominator:
    // rows past the batch are dropped.
    [[unroll]] for (uint f = 0; f < OUT_FRAGS; ++f) {
        if (f >= nf) break;
        coopMatStoreNV(acc[f], so, sg * 128u, 8u, false);
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        for (uint e = lane; e < 128u; e += gl_SubgroupSize) {
            uint r = r0 + e / 8u, t = t0 + r;
            float den = (sred[r * 4u] + sred[r * 4u + 1u]) + (sred[r * 4u + 2u] + sred[r * 4u + 3u]);
            if (t < pc.n_tokens)
                o[pc.o_off + t * pc.o_stride + h * hd + c0 + 8u * f + e % 8u] = so[sg * 128u + e] / den;
        }
        subgroupBarrier();
    }
}
