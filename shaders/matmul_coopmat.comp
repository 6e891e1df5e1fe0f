#version 450
// Y[t, r] = sum_c W[r, c] * X[t, c] on the tensor cores (GL_NV_cooperative_matrix): a
// workgroup of 4 subgroups of 32 computes a 64-row x 64-token tile, each subgroup 32 x 32 as
// 2 x 4 accumulators of 16 x 8. Weights and activations are staged in shared memory as F16, 32
// columns (one quant block) at a time; products accumulate in F32.
#extension GL_GOOGLE_include_directive : require
#extension GL_NV_cooperative_matrix : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_control_flow_attributes : require
#include "include/common.glsl"
#define W_BINDING 0
#include "include/weights.glsl"

layout(binding = 1) readonly buffer XBuf { float x[]; };
layout(binding = 2) buffer YBuf { float y[]; };

layout(push_constant) uniform PC {
    uint ncols;
    uint stride;
    uint nrows;
    uint n_tokens;
    uint x_off;
    uint x_stride;
    uint y_off;
    uint y_stride;
} pc;

#define BM 64
#define BN 64
#define LDA 40  // halfs per staged row: 32 + 8 keeps rows 16-byte aligned and spreads banks
#define LDB 40
#define LDC 68

shared float16_t sa[BM * LDA];
shared float16_t sb[BN * LDB];
#if !defined(DIRECT_STORE)
shared float sc[BN * LDC];
#endif

void main() {
    uint row0 = gl_WorkGroupID.x * BM;
    uint t0 = gl_WorkGroupID.y * BN;
    uint tid = gl_LocalInvocationID.x;
    uint sg = gl_SubgroupID;
    uint sm = (sg & 1u) * 32u, sn = (sg >> 1) * 32u;
    fcoopmatNV<32, gl_ScopeSubgroup, 16, 8> acc[2][4];
    [[unroll]] for (int i = 0; i < 2; ++i)
        [[unroll]] for (int j = 0; j < 4; ++j) acc[i][j] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 8>(0.0);

    uint nch = (pc.ncols + 31u) / 32u;
    for (uint c = 0; c < nch; ++c) {
        // Weights: two threads per row, each staging half of the row's 32 columns.
        {
            uint r = tid >> 1, h = (tid & 1u) * 16u;
            float w[32];
            if (row0 + r < pc.nrows) {
                dequant_chunk((row0 + r) * pc.stride, c, pc.ncols, w);
            } else {
                for (uint i = 0; i < 32; ++i) w[i] = 0.0;
            }
            // Constant indices into w keep it in registers.
            [[unroll]] for (uint i = 0; i < 16; ++i)
                sa[r * LDA + h + i] = float16_t(h == 0u ? w[i] : w[i + 16]);
        }
        // Activations: eight threads per token read its 32 columns as one 128-byte line.
        for (uint it = 0; it < BN * 8u / WG_SIZE; ++it) {
            uint idx = it * WG_SIZE + tid;
            uint t = idx >> 3, q = (idx & 7u) * 4u;
            uint tt = t0 + t, col = c * 32u + q;
            uint xb = pc.x_off + tt * pc.x_stride + col;
            for (uint e = 0; e < 4; ++e) {
                float v = (tt < pc.n_tokens && col + e < pc.ncols) ? x[xb + e] : 0.0;
                sb[t * LDB + q + e] = float16_t(v);
            }
        }
        barrier();
        [[unroll]] for (uint k = 0; k < 32u; k += 16u) {
            fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> a[2];
            fcoopmatNV<16, gl_ScopeSubgroup, 16, 8> b[4];
            [[unroll]] for (int i = 0; i < 2; ++i)
                coopMatLoadNV(a[i], sa, (sm + 16u * uint(i)) * LDA + k, LDA, false);
            [[unroll]] for (int j = 0; j < 4; ++j)
                coopMatLoadNV(b[j], sb, (sn + 8u * uint(j)) * LDB + k, LDB, true);
            [[unroll]] for (int i = 0; i < 2; ++i)
                [[unroll]] for (int j = 0; j < 4; ++j) acc[i][j] = coopMatMulAddNV(a[i], b[j], acc[i][j]);
        }
        barrier();
    }
#if defined(DIRECT_STORE)
    // Whole tiles only (ops.cpp checks): the accumulators go straight to y, and without the
    // staging array the workgroup needs less than half the shared memory.
    [[unroll]] for (int i = 0; i < 2; ++i)
        [[unroll]] for (int j = 0; j < 4; ++j)
            coopMatStoreNV(acc[i][j], y,
                           pc.y_off + (t0 + sn + 8u * uint(j)) * pc.y_stride + row0 + sm + 16u * uint(i),
                           pc.y_stride, true);
#else
    [[unroll]] for (int i = 0; i < 2; ++i)
        [[unroll]] for (int j = 0; j < 4; ++j)
            coopMatStoreNV(acc[i][j], sc, (sn + 8u * uint(j)) * LDC + sm + 16u * uint(i), LDC, true);
    barrier();
    for (uint e = tid; e < BM * BN; e += WG_SIZE) {
        uint t = e / BM, r = e % BM;
        if (row0 + r < pc.nrows && t0 + t < pc.n_tokens)
            y[pc.y_off + (t0 + t) * pc.y_stride + row0 + r] = sc[t * LDC + r];
    }
#endif
}
