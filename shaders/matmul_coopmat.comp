#version 450
// Y[t, r] = sum_c W[r, c] * X[t, c] on the tensor cores (GL_NV_cooperative_matrix): a
// workgroup of 4 subgroups of 32 computes a 64-row x 64-token tile, each subgroup 32 x 32 as
// 2 x 4 accumulators of 16 x 8. Weights and activations are staged in shared memory as F16, BK
// columns a stage; products accumulate in F32. XLOAD says whether a stage's global loads are
// issued before the previous stage's products, into registers, so that their latency overlaps
// the tensor-core work, or only when the stage is stored, which frees those registers for more
// workgroups per SM; staged data is written 8 or 4 halfs at a time.
// Every quantized type loads its quants into registers and turns them into F16 when a stage is
// stored (Q4_1, Q5_x and the K-quants: NIBBLES below).
// X_F16 (quantized types): the activations arrive as F16 (the producing dispatch writes them) and a
// stage is 128 columns, twice the products per memory round trip at about the registers of 64
// F32 columns (with XLOAD 2 or 3 faster in either order).
// WIDE (with X_F16): 8 subgroups and 128-row tiles, 64 columns a stage. BIG (with X_F16):
// 128 x 128 tiles, each subgroup 64 x 32.
// TOKENS_FAST orders the workgroups (ops.cpp picks it for big weight matrices).
// X_HI / X_LO (F32 activations): stage their high or low F16 part (include/f16_split.glsl);
// LO_ADD adds the product, scaled back, to y: an F32 matmul as three F16 products (ops.cpp).
#extension GL_GOOGLE_include_directive : require
#extension GL_NV_cooperative_matrix : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_control_flow_attributes : require
#include "include/common.glsl"
#define W_BINDING 0
#include "include/weights.glsl"
#if defined(X_HI) || defined(X_LO)
#include "include/f16_split.glsl"
#endif

#if defined(TYPE_F16)
layout(binding = 0) readonly buffer WBuf8 { uvec4 wdata8[]; };  // 8 halfs
#endif
#if defined(X_F16)
layout(binding = 1) readonly buffer XBufH { uvec4 xh8[]; };  // 8 halfs
#else
layout(binding = 1) readonly buffer XBuf { float x[]; };
layout(binding = 1) readonly buffer XBuf4 { vec4 x4[]; };
#endif
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

// WIDE: 128-row tiles of 8 subgroups (4 x 2), each still 32 x 32; a stage's loads then serve
// twice the rows, at 64 columns a stage so that the F16 stages fit in 48 KiB.
// BIG (with X_F16): 128-row x 128-token tiles of 8 subgroups (2 x 4), each 64 x 32 as 4 x 4
// accumulators: a third fewer fragment loads a product than 32 x 32, and a stage's loads serve
// twice the tokens.
#if defined(BIG)
#define WM 64u  // rows a subgroup
#define MSG 2u  // subgroups along the rows
#define NSG 4u  // along the tokens
#elif defined(WIDE)
#define WM 32u
#define MSG 4u
#define NSG 2u
#else
#define WM 32u
#define MSG 2u
#define NSG 2u
#endif
#define AM (WM / 16u)  // 16-row fragments a subgroup
#define BM (WM * MSG)
#define BN (32u * NSG)
#define NT (32u * MSG * NSG)  // threads: 2 for each row of the tile
// 1: workgroup x walks the token tiles, y the row tiles (the tiles of one weight row tile run
// side by side and share its loads in L2); 0: x walks the row tiles.
layout(constant_id = 1) const uint TOKENS_FAST = 0;
// Timing only (EMBER_VULKAN_COOPMAT_DIAG, meant for XLOAD = 0), bits: 1 = global loads for the
// first stage only, 2 = shared stores for the first stage only, 4 = fragments loaded once a
// stage, 8 = every product done twice, 16 = no barriers. Results are wrong by design.
layout(constant_id = 2) const uint DIAG = 0;
// When a stage's activations are loaded (EMBER_VULKAN_COOPMAT_XLOAD): 0 = with its weights,
// before the previous stage's products; 1 = after those products; 2 = when stored, with no
// registers held across the products; 3 = its weights too.
layout(constant_id = 3) const uint XLOAD = 0;
// Types whose 32-element blocks (K-quant sub-blocks) keep 16 bytes of nibbles in Q4_0's order
// (weights.glsl's layouts).
#if defined(TYPE_Q4_K) || defined(TYPE_Q5_K) || defined(TYPE_Q6_K)
#define NIBBLES 1
layout(binding = 0) readonly buffer WBufK4 { uvec4 wk4[]; };  // 16 bytes at a time
#elif defined(TYPE_Q4_1) || defined(TYPE_Q5_0) || defined(TYPE_Q5_1)
#define NIBBLES 1
#endif
#if defined(X_F16)
#if defined(TYPE_F16)
#error "X_F16 is built for the quantized types"
#endif
#if defined(WIDE) || defined(BIG)
#define BK 64u
#else
#define BK 128u  // columns a stage
#endif
#define X_VEC4 (BN * BK / 8u / NT)  // activation uvec4 (8 halfs) per thread a stage
#else
#define BK 64u
#define X_VEC4 (BN * BK / 4u / NT)  // activation vec4 per thread a stage
#endif
#define LD4 (BK / 8u + 1u)  // uvec4 (8 halfs) per staged row, + 1 so 8 rows hit distinct banks
#define WB (BK / 64u)  // weight blocks per thread a stage: 2 threads a row

shared uvec4 sa[BM * LD4];
shared uvec4 sb[BN * LD4];
#if !defined(DIRECT_STORE)
shared float sc[(NT / 32u) * 16u * 8u];  // one 16 x 8 accumulator per subgroup, for partial tiles
#endif

// What one thread loads for a stage: WB weight blocks (row tid / 2, blocks WB * (tid % 2) ..
// of the stage) and X_VEC4 pieces of activations.
#if defined(TYPE_Q4_0)
uvec4 rq[WB];
#elif defined(TYPE_Q8_0)
uvec4 rq[WB], rq1[WB];
#elif defined(TYPE_Q4_K) || defined(TYPE_Q5_K)
uvec4 rq[WB], rk[WB];  // the sub-block's nibbles; the superblock's d, dmin and scales
#if defined(TYPE_Q5_K)
uint rqh[WB];  // the sub-block's high bits
#endif
#elif defined(TYPE_Q4_1) || defined(TYPE_Q5_0) || defined(TYPE_Q5_1)
uvec4 rq[WB];  // the block's nibbles
uint rqh[WB];  // Q5_x: its high bits
uint rdm[WB];  // its F16 (d, m), or Q5_0's d in the low half
#elif defined(TYPE_Q6_K)
uvec4 rq[WB];   // the sub-block's nibbles
uvec2 rqh[WB];  // its high bit pairs
uint rsc[WB];   // its two int8 scales (in the low or high half)
#else
uint rh[16];  // F16: the 32 halfs themselves
#endif
float16_t rd[WB];
#if defined(X_F16)
uvec4 rx[X_VEC4];
#else
vec4 rx[X_VEC4];
#endif

const uint MAGIC = 0x64006400u;  // two F16 1024.0; a value below 1024 ORed in is exact

// Stage s's weights into registers.
void load_stage(uint row0, uint s) {
    uint tid = gl_LocalInvocationID.x;
    uint r = row0 + (tid >> 1);
#if defined(TYPE_Q4_0) || defined(TYPE_Q8_0)
    [[unroll]] for (uint i = 0; i < WB; ++i) {
        uint c = (BK / 32u) * s + (tid & 1u) * WB + i;  // c: 32-column block
        if (r < pc.nrows && c * 32u < pc.ncols) {
            uint qi = QR_QUANTS(r * pc.stride, c);
            rq[i] = wq[qi];
#if defined(TYPE_Q8_0)
            rq1[i] = wq[qi + 1u];
#endif
            rd[i] = wd[QR_SCALE(r * pc.stride, c, pc.ncols / 32u)];
        } else {
            rd[i] = float16_t(0.0);
        }
    }
#elif defined(TYPE_Q4_1) || defined(TYPE_Q5_0) || defined(TYPE_Q5_1)
    [[unroll]] for (uint i = 0; i < WB; ++i) {
        uint c = (BK / 32u) * s + (tid & 1u) * WB + i, ib = r * pc.stride + c;
        rdm[i] = 0u;  // d = m = 0 past the matrix: zeros
        if (r < pc.nrows && c * 32u < pc.ncols) {
            rq[i] = wq[G_NIBBLES(ib)];
#if defined(TYPE_Q5_0)
            rdm[i] = ww[G_D_HALF(ib) / 2u] >> (16u * (ib & 1u));
#else
            rdm[i] = ww[G_DM(ib)];
#endif
#if !defined(TYPE_Q4_1)
            rqh[i] = ww[G_HIGH(ib)];
#endif
        }
    }
#elif defined(NIBBLES)
    [[unroll]] for (uint i = 0; i < WB; ++i) {
        uint c = (BK / 32u) * s + (tid & 1u) * WB + i, j = c & 7u;
        uint sb = r * pc.stride + c / 8u;  // superblock
#if defined(TYPE_Q4_K) || defined(TYPE_Q5_K)
        rk[i] = uvec4(0u);  // d = dmin = 0 past the matrix: zeros
        if (r < pc.nrows && c * 32u < pc.ncols) {
            rq[i] = wk4[sb * (K_WORDS / 4u) + j];
            rk[i] = wk4[sb * (K_WORDS / 4u) + 8u];
#if defined(TYPE_Q5_K)
            rqh[i] = wk[sb * K_WORDS + 36u + j];
#endif
        }
#else
        rd[i] = float16_t(0.0);
        if (r < pc.nrows && c * 32u < pc.ncols) {
            uint b4 = (sb >> 3) * 105u + (sb & 7u) * 13u;
            rq[i] = wk4[b4 + j];
            rqh[i] = uvec2(wk[(b4 + 8u) * 4u + 2u * j], wk[(b4 + 8u) * 4u + 2u * j + 1u]);
            rsc[i] = wk[(b4 + 12u) * 4u + j / 2u] >> (16u * (j & 1u));
            vec2 d2 = unpackHalf2x16(wk[(sb >> 3) * 420u + 416u + (sb & 7u) / 2u]);
            rd[i] = float16_t(d2[sb & 1u]);
        }
#endif
    }
#else
    uint c = 2u * s + (tid & 1u);
    bool ok = r < pc.nrows && c * 32u < pc.ncols;
    if (ok && pc.stride % 8u == 0u && c * 32u + 32u <= pc.ncols) {
        // A whole chunk of a row that starts on 16 bytes (op_matmul's F16 copies of other
        // types always do): 4 loads instead of 32.
        uint e = (r * pc.stride + c * 32u) / 8u;
        [[unroll]] for (uint i = 0; i < 4u; ++i) {
            uvec4 v = wdata8[e + i];
            rh[4u * i] = v.x;
            rh[4u * i + 1u] = v.y;
            rh[4u * i + 2u] = v.z;
            rh[4u * i + 3u] = v.w;
        }
        return;
    }
    [[unroll]] for (uint i = 0; i < 16u; ++i) {
        uint col = c * 32u + 2u * i;
        float a = ok && col < pc.ncols ? w_elem(r * pc.stride + col) : 0.0;
        float b = ok && col + 1u < pc.ncols ? w_elem(r * pc.stride + col + 1u) : 0.0;
        rh[i] = packHalf2x16(vec2(a, b));
    }
#endif
}

// Stage s's activations into registers.
void load_x_stage(uint t0, uint s, bool vec_x) {
    uint tid = gl_LocalInvocationID.x;
#if defined(X_F16)
    // BK / 8 uvec4 per token a stage; x_off, x_stride and ncols are multiples of 8 (ops.cpp).
    [[unroll]] for (uint it = 0; it < X_VEC4; ++it) {
        uint idx = it * NT + tid;
        uint t = t0 + idx / (BK / 8u), col = s * BK + idx % (BK / 8u) * 8u;
        rx[it] = t < pc.n_tokens && col < pc.ncols ? xh8[(pc.x_off + t * pc.x_stride + col) >> 3]
                                                   : uvec4(0u);
    }
#else
    [[unroll]] for (uint it = 0; it < X_VEC4; ++it) {
        uint idx = it * NT + tid;
        uint t = t0 + (idx >> 4), col = s * BK + (idx & 15u) * 4u;
        vec4 v = vec4(0.0);
        if (t < pc.n_tokens && col < pc.ncols) {
            uint xi = pc.x_off + t * pc.x_stride + col;
            if (vec_x) {
                v = x4[xi >> 2];
            } else {
                for (uint e = 0; e < 4u; ++e)
                    if (col + e < pc.ncols) v[e] = x[xi + e];
            }
        }
        rx[it] = v;
    }
#endif
}

#if defined(TYPE_Q4_0)
// Nibbles at bit offsets (lo, hi) of u as an F16 pair of (n - 8) * d.
uint q4_pair(uint u, uint lo, uint hi, float16_t d) {
    uint p = ((u >> lo) & 15u) | (((u >> hi) & 15u) << 16);
    return packFloat2x16((unpackFloat2x16(p | MAGIC) - f16vec2(1032.0)) * d);
}
#elif defined(TYPE_Q8_0)
// Bytes at bit offsets (lo, hi) of u (sign bits flipped) as an F16 pair of v * d.
uint q8_pair(uint u, uint lo, uint hi, float16_t d) {
    uint p = ((u >> lo) & 255u) | (((u >> hi) & 255u) << 16);
    return packFloat2x16((unpackFloat2x16(p | MAGIC) - f16vec2(1152.0)) * d);
}
#elif defined(NIBBLES)
// Quant e (0..31) of slot b: its nibble (byte e % 16, the high nibble from e = 16), with
// Q5_x's high bit or Q6_K's two high bits above it (weights.glsl's layouts).
uint k_quant(uint b, uint e) {
    uint k = (e & 15u) >> 2, at = 8u * (e & 3u);
    uint q = (rq[b][k] >> (at + (e >= 16u ? 4u : 0u))) & 15u;
#if defined(TYPE_Q5_K) || defined(TYPE_Q5_0) || defined(TYPE_Q5_1)
    q |= ((rqh[b] >> q5_high_bit(e)) & 1u) << 4;
#elif defined(TYPE_Q6_K)
    q |= ((rqh[b][k >> 1] >> (at + ((k & 1u) == 0u ? 4u : 0u) + (e >= 16u ? 2u : 0u))) & 3u) << 4;
#endif
    return q;
}
// Elements e and e + 1 of slot b as an F16 pair: q * d - m (dm = (d, m): Q4_K's and Q5_K's
// sub-block scale and min, Q4_1's and Q5_1's (d, -m), Q5_0's (d, 16 d)) or (q - 32) * d (Q6_K;
// dm.x the scale of the half).
uint k_pair(uint b, uint e, f16vec2 dm) {
    f16vec2 q = unpackFloat2x16(k_quant(b, e) | (k_quant(b, e + 1u) << 16) | MAGIC);
#if defined(TYPE_Q6_K)
    return packFloat2x16((q - f16vec2(1056.0)) * dm.x);
#else
    return packFloat2x16(fma(q - f16vec2(1024.0), f16vec2(dm.x), f16vec2(-dm.y)));
#endif
}
#endif

void store_stage(uint row0, uint t0, uint s, bool vec_x) {
    uint tid = gl_LocalInvocationID.x;
    if (XLOAD == 3u) load_stage(row0, s);
#if defined(TYPE_Q4_0)
    // Byte k of the block: element k (low nibble) and element k + 16 (high nibble).
    [[unroll]] for (uint b = 0; b < WB; ++b) {
        uint a = (tid >> 1) * LD4 + ((tid & 1u) * WB + b) * 4u;  // the block's 32 halfs: 4 uvec4
        float16_t d = rd[b];
        [[unroll]] for (uint i = 0; i < 2u; ++i) {
            uint u0 = rq[b][2u * i], u1 = rq[b][2u * i + 1u];
            sa[a + i] = uvec4(q4_pair(u0, 0, 8, d), q4_pair(u0, 16, 24, d), q4_pair(u1, 0, 8, d),
                              q4_pair(u1, 16, 24, d));
            sa[a + 2u + i] = uvec4(q4_pair(u0, 4, 12, d), q4_pair(u0, 20, 28, d),
                                   q4_pair(u1, 4, 12, d), q4_pair(u1, 20, 28, d));
        }
    }
#elif defined(TYPE_Q8_0)
    [[unroll]] for (uint b = 0; b < WB; ++b) {
        uint a = (tid >> 1) * LD4 + ((tid & 1u) * WB + b) * 4u;
        float16_t d = rd[b];
        [[unroll]] for (uint i = 0; i < 4u; ++i) {
            uvec4 q = (i < 2u ? rq[b] : rq1[b]) ^ uvec4(0x80808080u);
            uint j = 2u * (i & 1u);
            uint u0 = q[j], u1 = q[j + 1u];
            sa[a + i] = uvec4(q8_pair(u0, 0, 8, d), q8_pair(u0, 16, 24, d), q8_pair(u1, 0, 8, d),
                              q8_pair(u1, 16, 24, d));
        }
    }
#elif defined(NIBBLES)
    [[unroll]] for (uint b = 0; b < WB; ++b) {
        uint a = (tid >> 1) * LD4 + ((tid & 1u) * WB + b) * 4u;
        uint j = ((BK / 32u) * s + (tid & 1u) * WB + b) & 7u;  // sub-block in its superblock
#if defined(TYPE_Q5_0)
        float d = unpackHalf2x16(rdm[b]).x;
        f16vec2 s0 = f16vec2(d, 16.0 * d), s1 = s0;
#elif defined(TYPE_Q4_1) || defined(TYPE_Q5_1)
        vec2 d = unpackHalf2x16(rdm[b]);
        f16vec2 s0 = f16vec2(d.x, -d.y), s1 = s0;
#elif defined(TYPE_Q6_K)
        float d = float(rd[b]);
        f16vec2 s0 = f16vec2(d * float(int(rsc[b] << 24) >> 24), 0.0),
                s1 = f16vec2(d * float(int(rsc[b] << 16) >> 24), 0.0);
#else
        uint sc, mn;
        scale_min_q4k(rk[b].yzw, j, sc, mn);
        vec2 d = unpackHalf2x16(rk[b].x);
        f16vec2 s0 = f16vec2(d.x * float(sc), d.y * float(mn)), s1 = s0;
#endif
        [[unroll]] for (uint i = 0; i < 4u; ++i) {
            f16vec2 dm = i < 2u ? s0 : s1;  // elements 8i .. 8i + 7
            sa[a + i] = uvec4(k_pair(b, 8u * i, dm), k_pair(b, 8u * i + 2u, dm),
                              k_pair(b, 8u * i + 4u, dm), k_pair(b, 8u * i + 6u, dm));
        }
    }
#else
    uint a = (tid >> 1) * LD4 + (tid & 1u) * 4u;
    [[unroll]] for (uint i = 0; i < 4u; ++i)
        sa[a + i] = uvec4(rh[4u * i], rh[4u * i + 1u], rh[4u * i + 2u], rh[4u * i + 3u]);
#endif
    if (XLOAD >= 2u) load_x_stage(t0, s, vec_x);
#if defined(X_F16)
    [[unroll]] for (uint it = 0; it < X_VEC4; ++it) {
        uint idx = it * NT + tid;
        sb[idx / (BK / 8u) * LD4 + idx % (BK / 8u)] = rx[it];
    }
#else
    [[unroll]] for (uint it = 0; it < X_VEC4; ++it) {
        uint idx = it * NT + tid;
        uint q = idx & 15u;  // 4 halfs: half of a uvec4
        uint o = (idx >> 4) * LD4 + (q >> 1);
#if defined(X_HI) || defined(X_LO)
        // An F32 matmul's high or low F16 part of the activations (include/f16_split.glsl).
#if defined(X_HI)
        vec4 v = f16_hi(rx[it]);
#else
        vec4 v = f16_lo(rx[it]);
#endif
        uvec2 h = uvec2(packHalf2x16(v.xy), packHalf2x16(v.zw));
#else
        uvec2 h = uvec2(packHalf2x16(rx[it].xy), packHalf2x16(rx[it].zw));
#endif
        if ((q & 1u) == 0u) sb[o].xy = h;
        else sb[o].zw = h;
    }
#endif
}

void main() {
    uint row0 = (TOKENS_FAST != 0u ? gl_WorkGroupID.y : gl_WorkGroupID.x) * BM;
    uint t0 = (TOKENS_FAST != 0u ? gl_WorkGroupID.x : gl_WorkGroupID.y) * BN;
    uint sg = gl_SubgroupID;
    uint sm = (sg % MSG) * WM, sn = (sg / MSG) * 32u;
    fcoopmatNV<32, gl_ScopeSubgroup, 16, 8> acc[AM][4];
    [[unroll]] for (int i = 0; i < AM; ++i)
        [[unroll]] for (int j = 0; j < 4; ++j) acc[i][j] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 8>(0.0);

    // 16-byte activation loads need 4-aligned rows.
    bool vec_x = (pc.x_off & 3u) == 0u && (pc.x_stride & 3u) == 0u && (pc.ncols & 3u) == 0u;
    uint nst = (pc.ncols + BK - 1u) / BK;
    if (XLOAD < 3u) load_stage(row0, 0u);
    if (XLOAD < 2u) load_x_stage(t0, 0u, vec_x);
    for (uint s = 0; s < nst; ++s) {
        if ((DIAG & 2u) == 0u || s == 0u) store_stage(row0, t0, s, vec_x);
        if ((DIAG & 16u) == 0u) barrier();
        bool next = s + 1u < nst && ((DIAG & 1u) == 0u || s == 0u);
        if (next && XLOAD < 3u) load_stage(row0, s + 1u);
        if (next && XLOAD == 0u) load_x_stage(t0, s + 1u, vec_x);
        fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> a[AM];
        fcoopmatNV<16, gl_ScopeSubgroup, 16, 8> b[4];
        [[unroll]] for (uint k = 0; k < BK / 16u; ++k) {
            // Offsets and strides in uvec4 (8 halfs): 16 columns are 2.
            if ((DIAG & 4u) == 0u || k == 0u) {
                [[unroll]] for (int i = 0; i < AM; ++i)
                    coopMatLoadNV(a[i], sa, (sm + 16u * uint(i)) * LD4 + 2u * k, LD4, false);
                [[unroll]] for (int j = 0; j < 4; ++j)
                    coopMatLoadNV(b[j], sb, (sn + 8u * uint(j)) * LD4 + 2u * k, LD4, true);
            }
            [[unroll]] for (int i = 0; i < AM; ++i)
                [[unroll]] for (int j = 0; j < 4; ++j) {
                    acc[i][j] = coopMatMulAddNV(a[i], b[j], acc[i][j]);
                    if ((DIAG & 8u) != 0u) acc[i][j] = coopMatMulAddNV(a[i], b[j], acc[i][j]);
                }
        }
        if (next && XLOAD == 1u) load_x_stage(t0, s + 1u, vec_x);
        if ((DIAG & 16u) == 0u) barrier();
    }
#if defined(DIRECT_STORE)
    // Whole tiles only (ops.cpp checks): the accumulators go straight to y.
    [[unroll]] for (int i = 0; i < AM; ++i)
        [[unroll]] for (int j = 0; j < 4; ++j)
            coopMatStoreNV(acc[i][j], y,
                           pc.y_off + (t0 + sn + 8u * uint(j)) * pc.y_stride + row0 + sm + 16u * uint(i),
                           pc.y_stride, true);
#else
    // Partial tiles: each accumulator through the subgroup's 16 x 8 scratch (column-major, a
    // token's 16 rows together), copied out by its lanes where the row and token exist.
    uint lane = gl_SubgroupInvocationID;
    [[unroll]] for (int i = 0; i < AM; ++i)
        [[unroll]] for (int j = 0; j < 4; ++j) {
            coopMatStoreNV(acc[i][j], sc, sg * 128u, 16u, true);
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            for (uint e = lane; e < 128u; e += gl_SubgroupSize) {
                uint r = row0 + sm + 16u * uint(i) + (e & 15u), t = t0 + sn + 8u * uint(j) + (e >> 4);
#if defined(LO_ADD)
                // A product with one low part (include/f16_split.glsl): added, scaled back.
                if (r < pc.nrows && t < pc.n_tokens)
                    y[pc.y_off + t * pc.y_stride + r] += sc[sg * 128u + e] * (1.0 / F16_LO_SCALE);
#else
                if (r < pc.nrows && t < pc.n_tokens) y[pc.y_off + t * pc.y_stride + r] = sc[sg * 128u + e];
#endif
            }
            subgroupBarrier();
        }
#endif
}
