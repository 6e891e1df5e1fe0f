#version 450
// Decode mat-vec of Q4_0/Q8_0 (and, in the subgroup mode, Q4_1/Q5_0/Q5_1/Q4_K/Q5_K/Q6_K)
// weights with F16 dot products, for devices with shaderFloat16:
// the modes, bindings and push constants of matvec_fused.comp. That shader reads all of x (and
// the norm weight) in every workgroup of 4 rows, which for a 7B gate/up moves 3.5x the weight
// bytes through L2. Here a few workgroups (ops.cpp: enough to fill each SM once) each prepare x
// once:
//   x' = x * rsqrt(mean(x^2) + eps) * norm_w   (has_norm; else x' = x)
//   xs = F16(x' * 2^-e), 2^e > max|x'|        (block sums of 32 products stay within 2^12)
// in shared memory, as F16 pairs in the order in which the quants unpack, and then loop over
// groups of ROWS rows: one 16-byte load per block per row (Q4_0), two quants turned into an F16
// pair by one AND-OR into the mantissa of 1024, 16 packed FMAs per block. Groups go to
// subgroups (the default, WARP_UNROLL > 0: no barrier after the staging) or to whole
// workgroups (WARP_UNROLL = 0, kept for comparison).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#include "include/common.glsl"
#if defined(ATOMIC)
// Rows split over column parts (ADD mode, pc.ksplit > 1) add their partial sums with float
// atomics (VK_EXT_shader_atomic_float).
#extension GL_EXT_shader_atomic_float : require
#endif

#define MODE_STORE 0u
#define MODE_ADD 1u
#define MODE_QKV 2u
#define MODE_SILU 3u
// Gate and up rows apart, one row a group where subgroups own their rows: y[r] of W0, then
// y[rows0 + r] of W1; the down projection applies SiLU(gate) * up as it stages x (SILU_IN).
// Groups of one row leave fewer subgroups idle in the last round than pairs do.
#define MODE_GU 4u
// The families' Q/K/V (HEADS variants): rows of [Wq; Wk; Wv] as QKV groups them, one row a lane;
// q rows go to y, k rows to binding 21, v rows plus their bias straight to the V cache. The last
// subgroup to write a q or k head (an atomic count per head) finishes it: bias, per-head RMSNorm,
// RoPE in either layout over the first n_rot dimensions; q back to y, k to the K cache. Without
// q/k norms, or with the norms left to the attention, groups of 2 rows are RoPE pairs, finished
// where they are summed (HEADS_C, include/fused_heads.glsl). What qkv_rope.comp did in a dispatch
// of its own.
#define MODE_HEADS 5u

// The gate's activation (SILU mode and SILU_IN): SiLU, or with GELU GELU's tanh approximation
// (Gemma; tanh saturates well before |z| = 10, and the clamp keeps it from inf / inf).
#if defined(GELU)
#define ACT(v) \
    (0.5 * (v) * (1.0 + tanh(clamp(0.7978845608028654 * ((v) + 0.044715 * (v) * (v) * (v)), -10.0, 10.0))))
#else
#define ACT(v) ((v) / (1.0 + exp(-(v))))
#endif

layout(constant_id = 1) const uint XS_BLOCKS = 128;  // shared x capacity in 32-column blocks
layout(constant_id = 2) const uint ROWS = 8;         // rows per group (SILU: half gate, half up)
// 0: a workgroup takes a group of rows at a time, each thread whole blocks of every row.
// U > 0: each subgroup takes its own groups, each lane U blocks of every row per step, all
// loaded before any is used; sums need no barrier.
layout(constant_id = 3) const uint WARP_UNROLL = 0;
// Timing only (EMBER_VULKAN_MATVEC_DIAG), bits: 1 = weight loads without dot products or reads
// of x (subgroup mode), 2 = x not staged, 4 = no scale loads (subgroup mode, Q4_0 and Q8_0),
// 8 = no norm weight loads (XREG).
// Results are wrong by design.
layout(constant_id = 4) const uint DIAG = 0;
// 1 (the default; EMBER_VULKAN_MATVEC_XREG=0 sets 0): where a thread stages at most 8 vec4,
// stage_x loads its X_ITERS vec4 of x and of the norm weight at once and keeps them in
// registers for the second pass.
layout(constant_id = 5) const uint XREG_ALLOWED = 1;
// pc.mode as a constant: a pipeline per mode holds only that mode's code (7B Q4_0 decoded 2%
// faster on the H200). 8: read pc.mode.
layout(constant_id = 6) const uint MODE_CONST = 8;
// The shape as constants (0: from the push constants; EMBER_VULKAN_MATVEC_SHAPES=0): columns,
// row stride and column parts, so that addresses and trip counts fold.
layout(constant_id = 7) const uint NCOLS_C = 0;
layout(constant_id = 8) const uint STRIDE_C = 0;
layout(constant_id = 9) const uint KSPLIT_C = 0;
// ... and the rows, the workgroups, the norm (1: none, 2: one), the head size and the cache's
// row.
layout(constant_id = 10) const uint ROWS0_C = 0;
layout(constant_id = 11) const uint ROWS1_C = 0;
layout(constant_id = 12) const uint NWG_C = 0;
layout(constant_id = 13) const uint NORM_C = 0;
layout(constant_id = 14) const uint HEAD_DIM_C = 0;
layout(constant_id = 15) const uint KV_DIM_C = 0;
// 1: x is [gate; up] of a MODE_GU dispatch, each ncols long, and the staged x' is
// SiLU(gate) * up.
layout(constant_id = 16) const uint SILU_IN = 0;
// The offsets of x and y and the dispatch's rows, plus one (0: from the push constants), and the
// norm's epsilon and the RoPE's rotated dimensions, base and frequency factors (plus one).
layout(constant_id = 17) const uint X_OFF_C = 0;
layout(constant_id = 18) const uint Y_OFF_C = 0;
layout(constant_id = 19) const uint ROW_FIRST_C = 0;
layout(constant_id = 20) const uint ROW_END_C = 0;
layout(constant_id = 21) const float EPS_C = 0.0;
layout(constant_id = 22) const uint N_ROT_C = 0;
layout(constant_id = 23) const float FREQ_BASE_C = 0.0;
layout(constant_id = 24) const uint HAS_FF_C = 0;
// 1: x is row step_tokens[0] of the embedding table at binding 3, in the matrix's own type
// (Q4_0 or Q8_0) and row stride, and workgroup 0 also writes that row to binding 11 for the
// residual: the decode step's lookup folded into layer 0's QKV (EMBER_VULKAN_EMBED_FOLD=0 keeps
// its own dispatch and barrier).
layout(constant_id = 25) const uint EMBED_C = 0;
#define X_OFF (X_OFF_C != 0u ? X_OFF_C - 1u : pc.x_off)
#define Y_OFF (Y_OFF_C != 0u ? Y_OFF_C - 1u : pc.y_off)
#define ROW_FIRST (ROW_FIRST_C != 0u ? ROW_FIRST_C - 1u : pc.row_first)
#define ROW_END (ROW_END_C != 0u ? ROW_END_C - 1u : pc.row_end)
#define EPS (EPS_C != 0.0 ? EPS_C : pc.eps)
#define ROPE_N_ROT (N_ROT_C != 0u ? N_ROT_C : pc.n_rot)
#define ROPE_FREQ_BASE (FREQ_BASE_C != 0.0 ? FREQ_BASE_C : pc.freq_base)
#define ROPE_HAS_FF (HAS_FF_C != 0u ? HAS_FF_C == 2u : pc.has_ff != 0u)
#define NCOLS (NCOLS_C != 0u ? NCOLS_C : pc.ncols)
#define ROWS0 (ROWS0_C != 0u ? ROWS0_C : pc.rows0)
#define ROWS1 (ROWS1_C != 0u ? ROWS1_C : pc.rows1)
#define NWG (NWG_C != 0u ? NWG_C : gl_NumWorkGroups.x * gl_NumWorkGroups.y)
#define HAS_NORM (NORM_C != 0u ? NORM_C == 2u : pc.has_norm != 0u)
#define HEAD_DIM (HEAD_DIM_C != 0u ? HEAD_DIM_C : pc.head_dim)
#define KV_DIM (KV_DIM_C != 0u ? KV_DIM_C : pc.kv_dim)
#define STRIDE (STRIDE_C != 0u ? STRIDE_C : pc.stride)
#define KSPLIT (KSPLIT_C != 0u ? KSPLIT_C : pc.ksplit)
const uint X_ITERS = (XS_BLOCKS * 8u + gl_WorkGroupSize.x - 1u) / gl_WorkGroupSize.x;
const bool XREG = XREG_ALLOWED != 0u && X_ITERS <= 8u;
// Length of the per-step load arrays: at least 1, since SPIR-V has no empty arrays (the
// workgroup mode specializes WARP_UNROLL to 0 and never runs that code).
const uint STEP_LOADS = (WARP_UNROLL > 0u ? WARP_UNROLL : 1u) * ROWS;

#if !defined(TYPE_Q4_0) && !defined(TYPE_Q8_0)
// Only the subgroup mode reads the other types (ops_matvec.cpp); K-quant blocks are the
// 32-element sub-blocks of weights.cpp's layouts, 8 to a superblock.
#define SUBGROUP_ONLY 1
#endif

layout(binding = 3) readonly buffer XBuf4 { vec4 x4[]; };
layout(binding = 4) readonly buffer NBuf4 { vec4 nw4[]; };
layout(binding = 5) buffer YBuf { float y[]; };
layout(binding = 6) writeonly buffer KBuf { float16_t kc[]; };
layout(binding = 7) writeonly buffer VBuf { float16_t vc[]; };
DECLARE_STEP_BUFFER(8)
layout(binding = 9) readonly buffer FBuf { float ff[]; };
layout(binding = 11) writeonly buffer XOutBuf { vec4 xo4[]; };
#if defined(RESID)
// x is the residual stream before a post-norm's residual add (Gemma): the staged input is
// x' = x + rmsnorm(r) * rw (then normed as any x), workgroup 0 of the dispatch that starts at row
// 0 (RESID_OUT_C) writes x' to binding 11 (another buffer than x: the others still read x) and
// zeroes binding 14, where the next Add mat-vec of the step sums its column parts. The post-norm and its add
// take no dispatch of their own.
layout(binding = 12) readonly buffer RBuf4 { vec4 r4[]; };
layout(binding = 13) readonly buffer RwBuf4 { vec4 rw4[]; };
layout(binding = 14) writeonly buffer ZBuf4 { vec4 z4[]; };
// 0: another dispatch of the step (Q's, beside K's and V's) writes x' and zeroes binding 14.
layout(constant_id = 26) const uint RESID_OUT_C = 1;
#endif
#if defined(HEADS)
// y (q) and k read back by other workgroups (coherent), the biases [Dq], [Dkv], [Dkv], the q/k
// norm weights [head_dim], and a count per q and k head (zero before the dispatch, left at zero).
layout(binding = 5) coherent buffer YBufC { float yc[]; };
layout(binding = 21) coherent buffer KRawBuf { float kr[]; };
layout(binding = 15) readonly buffer BqBuf { float bq[]; };
layout(binding = 16) readonly buffer BkBuf { float bk[]; };
layout(binding = 17) readonly buffer BvBuf { float bv[]; };
layout(binding = 18) readonly buffer QnBuf { float qn[]; };
layout(binding = 19) readonly buffer KnBuf { float kn[]; };
layout(binding = 20) coherent buffer CountBuf { uint head_count[]; };
// How the heads are finished: 0 by the last subgroup to write each (a count per head), 1 in RoPE
// pairs where they are summed (no q/k norms), 2 in pairs with the q/k norms left to the attention
// (binding 20 then takes [n_head + n_head_kv][head_dim / 2] sums of squares, binding 21 k).
layout(constant_id = 27) const uint HEADS_C = 0;
layout(binding = 20) writeonly buffer SsBuf { float qk_ss[]; };
#endif
#if defined(TYPE_Q4_0) || defined(TYPE_Q8_0)
layout(binding = 3) readonly buffer EBufQ { uvec4 eq[]; };
layout(binding = 3) readonly buffer EBufD { float16_t ed[]; };
#endif

layout(push_constant) uniform PC {
    uint ncols;
    uint stride;  // blocks per row
    uint mode;
    uint rows0;   // rows of W0 (QKV: of Wq; SILU: of Wg and of Wu)
    uint rows1;   // QKV: rows of Wk and of Wv
    uint x_off;
    uint y_off;
    uint has_norm;
    float eps;
    uint head_dim;
    uint n_rot;
    float freq_base;
    uint has_ff;
    uint kv_dim;  // QKV: halfs between positions of the cache
    uint ksplit;  // column parts per group of rows (ATOMIC and ADD mode only; else 1)
    // Rows [row_first, row_end) of this dispatch (QKV: of [Wq; Wk; Wv]; row_end 0: to the last),
    // multiples of ROWS: matrices of different types take a dispatch each.
    uint row_first;
    uint row_end;
    uint tl_slot;  // TIMELINE: where this dispatch's timestamps go
#if defined(HEADS)
    // qkv_rope.comp's: the RoPE's linear scale, cos and sin's factor, YaRN's blend and ramp, the
    // flags (1 biases, 2 q/k norms, 8 NEOX), the caches' ring (0: a row per position) and where
    // k's rows start in binding 21.
    float freq_scale, mscale, ext_factor, corr_low, corr_high;
    uint flags, kv_ring, k_off;
#endif
} pc;

#if defined(TIMELINE)
// Timing only (EMBER_VULKAN_TIMELINE): each subgroup's timestamps, TL_EVENTS of them at
// [((slot * 1024 + workgroup) * 16 + subgroup) * TL_EVENTS + event]: the device clock (ns)
// and the SM's cycle counter. Events: 0 start, 1 x staged, 2 + i group i written (i < 5), 7
// done. ops_matvec.cpp binds the buffer; forward.cpp writes it to the file.
#extension GL_ARB_shader_clock : require
#extension GL_EXT_shader_realtime_clock : require
layout(binding = 10) writeonly buffer TlBuf { uvec4 tl[]; };
const uint TL_EVENTS = 8u;
void tl_mark(uint e) {
    uint wg = linear_workgroup(), sg = gl_SubgroupID;
    if (wg < 1024u && sg < 16u && e < TL_EVENTS && subgroupElect())
        tl[((pc.tl_slot * 1024u + wg) * 16u + sg) * TL_EVENTS + e] =
            uvec4(clockRealtime2x32EXT(), clock2x32ARB());
}
#else
#define tl_mark(e)
#endif

// Block b of x' as 4 uvec4 of F16 pairs; uvec4 i sits at 4b + (i ^ ((b >> 1) & 3)) so that the
// 16-byte reads of 8 threads on consecutive blocks hit distinct banks.
shared uvec4 xs[XS_BLOCKS * 4];
// Per-subgroup partial sums: workgroups have at most 128 threads, subgroups at least 4.
shared float partial[ROWS * 32];

uint xs_slot(uint b, uint i) { return b * 4u + (i ^ ((b >> 1) & 3u)); }

#include "include/dot_f16.glsl"
#if defined(HAS_XSUM)
// Each staged block's sum of x' (for the mins), from its F16 values.
shared float xsum_s[XS_BLOCKS];
#define XSUM(xv) const float xsum = xsum_s[bx]
#endif
#define DIAG_SCALE(v) ((DIAG & 4u) != 0u ? float16_t(1.0) : (v))
#define FUSED_ROW_BLOCKS (NCOLS / 32u)
#include "include/fused_weights.glsl"
FUSED_WEIGHTS(0)
FUSED_WEIGHTS(1)
#if defined(V_Q6_K)
// Q/K/V (QKV and HEADS modes) whose V rows are Q6_K: one dispatch, x staged once.
FUSED_WEIGHTS_V(2)
#else
FUSED_WEIGHTS(2)
#endif

#if !defined(SUBGROUP_ONLY)
// The slots' dot products: each thread takes whole blocks, the ROWS loads of a block
// independent of each other (all in flight at once); slots [0, n) read binding A, the others
// binding B.
#define BLOCK_LOOP(A, B, n)                                                            \
    for (uint blk = tid; blk < nblk; blk += WG_SIZE) {                                 \
        uvec4 xv[4];                                                                   \
        [[unroll]] for (uint i = 0; i < 4u; ++i) xv[i] = xs[xs_slot(blk, i)];          \
        [[unroll]] for (uint s = 0; s < ROWS; ++s) {                                   \
            uint g = QR_QUANTS(sbase[s], blk), h = D_INDEX(sbase[s], blk);             \
            if (s < n) acc[s] += DOT(wq##A, g) * float(wd##A[h]);                      \
            else acc[s] += DOT(wq##B, g) * float(wd##B[h]);                            \
        }                                                                              \
    }
#else
#define BLOCK_LOOP(A, B, n)
#endif

#if defined(TYPE_Q4_0)
#define DOT(Q, g) block_dot(Q[g], xv)
#elif defined(TYPE_Q8_0)
#define DOT(Q, g) block_dot(Q[g], Q[g + 1u], xv)
#endif

// The per-subgroup loop: in the step at `base`, lane takes blocks base + lane, base + lane +
// sgs, ... (WARP_UNROLL of them) of every row, all loaded before the first dot product, so a
// step is one memory round trip. (Issuing the next step's or group's loads before this one's
// arithmetic held more registers and ran 3-12% slower on the H200.) WARP_LOOP_WITH takes the
// type's macros: V_Q6_K's V rows have their own.
#define WARP_LOOP(A, B, n) WARP_LOOP_WITH(LOADQ, DOTQ, FOLDQ, A, B, n)
#define WARP_LOOP_WITH(LQ, DQ, FQ, A, B, n)                                            \
    for (uint base = kb0; base < kb1; base += sgs * WARP_UNROLL) {                     \
        [[unroll]] for (uint u = 0; u < WARP_UNROLL; ++u) {                             \
            uint blk = min(base + lane + u * sgs, kb1 - 1u);                            \
            [[unroll]] for (uint s = 0; s < ROWS; ++s) {                                \
                uint i = u * ROWS + s;                                                  \
                if (s < n) {                                                            \
                    LQ(A, sbase[s], blk, i);                                            \
                } else {                                                                \
                    LQ(B, sbase[s], blk, i);                                            \
                }                                                                       \
            }                                                                           \
        }                                                                               \
        [[unroll]] for (uint u = 0; u < WARP_UNROLL; ++u) {                             \
            uint blk = base + lane + u * sgs, bc = min(blk, kb1 - 1u), bx = bc - kb0;   \
            uint j = bc & 7u;                                                           \
            uvec4 xv[4];                                                                \
            if ((DIAG & 1u) == 0u)                                                      \
                [[unroll]] for (uint i = 0; i < 4u; ++i) xv[i] = xs[xs_slot(bx, i)];    \
            XSUM(xv);                                                                   \
            [[unroll]] for (uint s = 0; s < ROWS; ++s) {                                \
                uint i = u * ROWS + s;                                                  \
                float v = (DIAG & 1u) != 0u ? FQ(i) : DQ(i, j);                         \
                acc[s] += blk < kb1 ? v : 0.0;                                          \
            }                                                                           \
        }                                                                               \
    }
float vmax_abs(vec4 v) {
    vec4 a = abs(v);
    return max(max(a.x, a.y), max(a.z, a.w));
}

// x' of vec4 c (from the first staged block) into xs, as F16 pairs.
void stage_vec4(uint c, vec4 v) {
    uint w = pair_word(c & 7u), slot = xs_slot(c >> 3, w >> 2);
    xs[slot][w & 3u] = packHalf2x16(v.xz);
    xs[slot][(w & 3u) + PAIR_STEP] = packHalf2x16(v.yw);
}

// Each staged block's sum (types with a min term), after the staging's barrier.
void stage_xsum(uint c0, uint c1) {
#if defined(HAS_XSUM)
    for (uint b = gl_LocalInvocationID.x; b < (c1 - c0) / 8u; b += WG_SIZE) {
        uvec4 xv[4];
        [[unroll]] for (uint i = 0; i < 4u; ++i) xv[i] = xs[xs_slot(b, i)];
        xsum_s[b] = block_xsum(xv);
    }
    barrier();
#endif
}

// Column vec4 c of the embedding row step_tokens[0] (EMBED_C): elements 4j..4j+3 of block
// c / 8, j = c % 8, exactly as get_rows.comp dequantizes them.
vec4 embed_vec4(uint c) {
#if defined(TYPE_Q4_0) || defined(TYPE_Q8_0)
    const uint rb = step_tokens[0] * STRIDE, blk = c / 8u, j = c % 8u;
    const float d = float(ed[QR_SCALE(rb, blk, NCOLS / 32u)]);
#if defined(TYPE_Q4_0)
    // Element e < 16 is byte e's low nibble, e >= 16 byte e - 16's high one.
    const uint w = eq[QR_QUANTS(rb, blk)][j & 3u] >> (4u * (j >> 2));
    const vec4 q = vec4(uvec4(w, w >> 8, w >> 16, w >> 24) & 15u) - 8.0;
#else
    const int w = int(eq[QR_QUANTS(rb, blk) + (j >> 2)][j & 3u]);
    const vec4 q = vec4(bitfieldExtract(w, 0, 8), bitfieldExtract(w, 8, 8),
                        bitfieldExtract(w, 16, 8), bitfieldExtract(w, 24, 8));
#endif
    return q * d;
#else
    return vec4(0.0);
#endif
}

#if defined(RESID)
// Whether this workgroup writes x' and zeroes binding 14: the first of the first dispatch.
bool resid_out() { return RESID_OUT_C != 0u && linear_workgroup() == 0u && ROW_FIRST == 0u; }

// 1 / rms(r), r being ncols long; resid_out(): binding 14 zeroed too.
float resid_inv() {
    float ss = 0.0;
    const bool zero = resid_out();
    for (uint c = gl_LocalInvocationID.x; c < NCOLS / 4u; c += WG_SIZE) {
        const vec4 v = r4[c];
        ss += dot(v, v);
        if (zero) z4[c] = vec4(0.0);
    }
    return inversesqrt(wg_sum(ss) / float(NCOLS) + EPS);
}
float g_resid_inv = 0.0;

// Per subgroup: sum(r^2), sum(x^2), sum(x p), sum(p^2), p = r * rw.
shared vec4 resid_red[128];

// stage_x's XREG path with the post-norm in the same pass: x, r, rw and the norm weight loaded
// at once, and one exchange gives both norms: with a = 1 / rms(r) and p = r * rw, x' = x + a p
// has sum(x'^2) = sum(x^2) + 2a sum(x p) + a^2 sum(p^2), and max|x' nw| <= max|x nw| + a max|p nw|
// sets the F16 scale (a bound: the scale may come out a power of 2 lower, never too high). Only
// x nw and p nw stay in registers across the exchange, as many as stage_x keeps (x and nw).
// (resid_inv() then stage_x's pass read r from L2 twice, a reduction apart.)
float stage_x_resid(uint c0, uint c1) {
    const uint tid = gl_LocalInvocationID.x, xb = X_OFF / 4u;
    const bool norm = HAS_NORM, zero = resid_out();
    vec4 xr[X_ITERS], pr[X_ITERS], qr[X_ITERS], nr[X_ITERS];
    vec4 sums = vec4(0.0);
    float mx = 0.0, mp = 0.0;
    [[unroll]] for (uint k = 0; k < X_ITERS; ++k) {
        const uint c = min(c0 + tid + k * WG_SIZE, c1 - 1u);
        xr[k] = x4[xb + c];
        pr[k] = r4[c];
        qr[k] = rw4[c];
        nr[k] = norm ? nw4[c] : vec4(1.0);
        if (zero && c0 + tid + k * WG_SIZE < c1) z4[c] = vec4(0.0);
    }
    [[unroll]] for (uint k = 0; k < X_ITERS; ++k) {
        const bool ok = c0 + tid + k * WG_SIZE < c1;
        const vec4 r = ok ? pr[k] : vec4(0.0), x = ok ? xr[k] : vec4(0.0), p = r * qr[k];
        sums += vec4(dot(r, r), dot(x, x), dot(x, p), dot(p, p));
        xr[k] = x * nr[k];
        pr[k] = p * nr[k];
        mx = max(mx, vmax_abs(xr[k]));
        mp = max(mp, vmax_abs(pr[k]));
    }
    sums = subgroupAdd(sums);
    mx = subgroupMax(mx);
    mp = subgroupMax(mp);
    if (subgroupElect()) {
        resid_red[gl_SubgroupID] = sums;
        red_f[gl_SubgroupID] = mp;
        red_u[gl_SubgroupID] = floatBitsToUint(mx);
    }
    barrier();
    sums = vec4(0.0);
    mp = 0.0;
    uint mxu = 0u;
    for (uint i = 0; i < gl_NumSubgroups; ++i) {
        sums += resid_red[i];
        mp = max(mp, red_f[i]);
        mxu = max(mxu, red_u[i]);
    }
    const float n = float(NCOLS), a = inversesqrt(sums.x / n + EPS);
    const float ss = max(sums.y + a * (2.0 * sums.z + a * sums.w), 0.0);
    const float inv = norm ? inversesqrt(ss / n + EPS) : 1.0;
    int e;
    frexp((uintBitsToFloat(mxu) + a * mp) * inv, e);
    const float down = inv * exp2(float(-e));
    [[unroll]] for (uint k = 0; k < X_ITERS; ++k) {
        const uint c = c0 + tid + k * WG_SIZE;
        if (c >= c1) break;
        // (x' itself only where it is written out: x and p read again, from L1.)
        if (zero) xo4[xb + c] = x4[xb + c] + a * (r4[c] * rw4[c]);
        stage_vec4(c - c0, (xr[k] + a * pr[k]) * down);
    }
    barrier();
    stage_xsum(c0, c1);
    return exp2(float(e));
}
#endif

// Column vec4 c of x (SILU_IN: of SiLU(gate) * up; EMBED_C: of the token's embedding, which
// workgroup 0 also writes to x; RESID: of x + rmsnorm(r) * rw, which workgroup 0 writes out).
vec4 load_x(uint xb, uint c) {
#if defined(RESID)
    const vec4 xr = x4[xb + c] + r4[c] * g_resid_inv * rw4[c];
    if (resid_out()) xo4[xb + c] = xr;
    return xr;
#else
    if (EMBED_C != 0u) {
        vec4 v = embed_vec4(c);
        if (linear_workgroup() == 0u) xo4[xb + c] = v;
        return v;
    }
    vec4 v = x4[xb + c];
    if (SILU_IN == 0u) return v;
    return ACT(v) * x4[xb + c + NCOLS / 4u];
#endif
}

// x' of columns [4 c0, 4 c1) into xs from slot 0 (F16 pairs, scaled by 2^-e); returns 2^e, the
// factor of the row sums. c0 is a multiple of 8 (a block); the norm needs all of x (c0 = 0, c1 =
// ncols / 4).
float stage_x(uint c0, uint c1) {
    if ((DIAG & 2u) != 0u) return 1.0;
#if defined(RESID)
    // (Heads finished by a count per head held more registers with it, and their QKV ran 5%
    // slower on the H200: 17.95 -> 18.83 us a call.)
#if defined(HEADS)
    if (XREG && HEADS_C != 0u) return stage_x_resid(c0, c1);
#else
    if (XREG) return stage_x_resid(c0, c1);
#endif
    g_resid_inv = resid_inv();
#endif
    uint tid = gl_LocalInvocationID.x;
    uint xb = X_OFF / 4u;
    bool norm = HAS_NORM;
    float ss = 0.0, mx = 0.0;
    // XREG: a thread's loads issued together (in the loop each waits for the one before; 7B
    // Q4_0 decoded about 1.5% faster on the H200 without that wait).
    vec4 xr[X_ITERS], nr[X_ITERS];
    if (XREG) {
        [[unroll]] for (uint k = 0; k < X_ITERS; ++k) {
            uint c = min(c0 + tid + k * WG_SIZE, c1 - 1u);
            xr[k] = load_x(xb, c);
            nr[k] = norm && (DIAG & 8u) == 0u ? nw4[c] : vec4(1.0);
        }
        [[unroll]] for (uint k = 0; k < X_ITERS; ++k) {
            if (c0 + tid + k * WG_SIZE >= c1) xr[k] = vec4(0.0);
            ss += dot(xr[k], xr[k]);
            mx = max(mx, vmax_abs(xr[k] * nr[k]));
        }
    } else {
        for (uint c = c0 + tid; c < c1; c += WG_SIZE) {
            vec4 v = load_x(xb, c);
            ss += dot(v, v);
            mx = max(mx, vmax_abs(norm ? v * nw4[c] : v));
        }
    }
    // Sum and maximum in one exchange (common.glsl's arrays; a non-negative float orders as
    // its bits do).
    ss = subgroupAdd(ss);
    mx = subgroupMax(mx);
    if (subgroupElect()) {
        red_f[gl_SubgroupID] = ss;
        red_u[gl_SubgroupID] = floatBitsToUint(mx);
    }
    barrier();
    ss = 0.0;
    uint mxu = 0u;
    for (uint i = 0; i < gl_NumSubgroups; ++i) {
        ss += red_f[i];
        mxu = max(mxu, red_u[i]);
    }
    float inv = norm ? inversesqrt(ss / float(NCOLS) + EPS) : 1.0;
    int e;
    frexp(uintBitsToFloat(mxu) * inv, e);  // = f * 2^e with f in [0.5, 1); e = 0 for 0
    float down = inv * exp2(float(-e));
    if (XREG) {
        [[unroll]] for (uint k = 0; k < X_ITERS; ++k) {
            uint c = c0 + tid + k * WG_SIZE;
            if (c >= c1) break;
            stage_vec4(c - c0, xr[k] * down * nr[k]);
        }
    } else {
        for (uint c = c0 + tid; c < c1; c += WG_SIZE) {
            vec4 v = load_x(xb, c) * down;
            if (norm) v *= nw4[c];
            stage_vec4(c - c0, v);
        }
    }
    barrier();
    stage_xsum(c0, c1);
    return exp2(float(e));
}

#include "include/rope_pair.glsl"

#if defined(HEADS)
#include "include/fused_heads.glsl"
#else
#define HEADS_PAIRS false
#endif

// Thread tid's results of a group: its row r (STORE, ADD; GU: row r of matrix sm), its gate and
// up rows r (SILU), or its RoPE pair r, r + 1 (QKV); ok: the row exists.
void write_rows(uint mode, uint tid, uint sm, bool ok, uint r, float tot[2]) {
    uint half_rows = ROWS / 2u;
    if (!ok) return;
#if defined(HEADS)
    if (mode == MODE_HEADS) {
        if (HEADS_PAIRS) {
            heads_write_pair(sm, tid, r, tot);
            return;
        }
        // q, k: as they are into y and binding 21; v: plus its bias into the cache
        if (sm == 0u) {
            yc[Y_OFF + r] = tot[0];
        } else if (sm == 1u) {
            kr[pc.k_off + r] = tot[0];
        } else {
            const float b = (pc.flags & 1u) != 0u ? bv[r] : 0.0;
            vc[heads_cache_row() * KV_DIM + r] = float16_t(tot[0] + b);
        }
        return;
    }
#endif
    if (mode == MODE_STORE || mode == MODE_ADD || mode == MODE_GU) {
        uint o = Y_OFF + r + (mode == MODE_GU && sm == 1u ? ROWS0 : 0u);
#if defined(ATOMIC)
        if (mode == MODE_ADD && KSPLIT > 1u) {
            atomicAdd(y[o], tot[0]);
            return;
        }
#endif
        if (mode == MODE_ADD) y[o] += tot[0];
        else y[o] = tot[0];
    } else if (mode == MODE_SILU) {
        if (tid >= half_rows) return;
        float g = tot[0];
        y[Y_OFF + r] = ACT(g) * tot[1];
    } else {
        if (tid >= half_rows) return;
        float v0 = tot[0], v1 = tot[1];
        if (sm < 2u) rope_pair(r % HEAD_DIM, step_pos0, v0, v1);
        if (sm == 0u) {
            y[Y_OFF + r] = v0;
            y[Y_OFF + r + 1u] = v1;
        } else {
            uint o = step_pos0 * KV_DIM + r;
            if (sm == 1u) {
                kc[o] = float16_t(v0);
                kc[o + 1u] = float16_t(v1);
            } else {
                vc[o] = float16_t(v0);
                vc[o + 1u] = float16_t(v1);
            }
        }
    }
}

// Rows of all the matrices (QKV: [Wq; Wk; Wv]; GU: [gate; up]; SILU: gate's).
uint mode_rows(uint mode) {
    return mode == MODE_QKV || mode == MODE_HEADS ? ROWS0 + 2u * ROWS1 : mode == MODE_GU ? 2u * ROWS0 : ROWS0;
}

// The rows of group grp: per slot its row within its matrix, the row's first block, whether it
// exists; returns the matrix (QKV: 0 = Wq, 1 = Wk, 2 = Wv; GU: 0 = gate, 1 = up).
uint group_rows(uint mode, uint grp, out uint srow[ROWS], out uint sbase[ROWS],
                out bool sok[ROWS]) {
    const uint half_rows = ROWS / 2u;
    const uint n_rows = mode_rows(mode);
    uint sm = 0u;
    for (uint s = 0; s < ROWS; ++s) {
        uint r;
        if (mode == MODE_SILU) {
            r = grp * half_rows + (s < half_rows ? s : s - half_rows);
            sok[s] = r < ROWS0;
        } else {
            r = grp * ROWS + s;
            sok[s] = r < n_rows;
            if ((mode == MODE_QKV || mode == MODE_HEADS || mode == MODE_GU) && r >= ROWS0) {
                // A group's rows lie in one matrix (ops.cpp checks).
                r -= ROWS0;
                sm = 1u;
                if ((mode == MODE_QKV || mode == MODE_HEADS) && r >= ROWS1) {
                    r -= ROWS1;
                    sm = 2u;
                }
            }
#if defined(HEADS)
            if (mode == MODE_HEADS && HEADS_PAIRS && sm < 2u && sok[s]) r = heads_pair_row(r);
#endif
        }
        if (!sok[s]) r = 0u;
        srow[s] = r;
        sbase[s] = r * STRIDE;
    }
    return sm;
}

// Which sums thread (or lane) t writes: row t (STORE, ADD), gate and up row t (SILU), or the
// RoPE pair 2t, 2t + 1 (QKV, HEADS_PAIRS); slot k of the two, clamped to the group.
uint wanted_slot(uint mode, uint t, uint k) {
    const bool pairs = mode == MODE_QKV || (mode == MODE_HEADS && HEADS_PAIRS);
    uint s = pairs ? 2u * t + k : mode == MODE_SILU ? t + k * (ROWS / 2u) : t;
    return min(s, ROWS - 1u);
}

// Subgroups owning their rows: no barrier after x is staged; each subgroup sums its rows with
// subgroupAdd and its first lanes write them. With pc.ksplit > 1 (ATOMIC, ADD mode), workgroup
// w takes column part w % ksplit of every row (ksplit divides the workgroups: ops.cpp), stages
// only that part of x and adds its sums atomically.
void main_subgroups(uint mode, uint nblk, uint n_groups) {
    const uint lane = gl_SubgroupInvocationID, sgs = gl_SubgroupSize;
    const uint half_rows = ROWS / 2u;
    const uint ksplit = KSPLIT, part_blk = (nblk + ksplit - 1u) / ksplit;
    const uint wg = linear_workgroup(), part = wg % ksplit;
    const uint kb0 = part * part_blk, kb1 = min(nblk, kb0 + part_blk);
    const uint n_sg = NWG / ksplit * gl_NumSubgroups;
    const uint first = wg / ksplit * gl_NumSubgroups + gl_SubgroupID;
    // (Touching the first step's weights before the staging, so that they wait in L2, ran 4-12%
    // slower on the H200.)
    tl_mark(0u);
    const float up = stage_x(kb0 * 8u, kb1 * 8u);
    tl_mark(1u);
    uint n_done = 0u;
    for (uint grp = ROW_FIRST / ROWS + first; grp < n_groups; grp += n_sg) {
        uint srow[ROWS], sbase[ROWS];
        bool sok[ROWS];
        uint sm = group_rows(mode, grp, srow, sbase, sok);
        float acc[ROWS];
        for (uint s = 0; s < ROWS; ++s) acc[s] = 0.0;
        SLOT_REGS
        if (mode == MODE_SILU) {
            WARP_LOOP(0, 1, half_rows)
        } else if (sm == 0u) {
            WARP_LOOP(0, 0, ROWS)
        } else if (sm == 1u) {
            WARP_LOOP(1, 1, ROWS)
        } else {
#if defined(V_Q6_K)
            SLOT_REGS_V  // (in this scope: the V rows' registers)
            WARP_LOOP_WITH(LOADQ_V, DOTQ_V, FOLDQ_V, 2, 2, ROWS)
#else
            WARP_LOOP(2, 2, ROWS)
#endif
        }
        float tot[2] = {0.0, 0.0};
        uint w0 = wanted_slot(mode, lane, 0u), w1 = wanted_slot(mode, lane, 1u);
        [[unroll]] for (uint s = 0; s < ROWS; ++s) {
            float v = subgroupAdd(acc[s]) * up;
            if (s == w0) tot[0] = v;
            if (s == w1) tot[1] = v;
        }
        if (lane < ROWS) write_rows(mode, lane, sm, sok[w0], srow[w0], tot);
        tl_mark(2u + min(n_done++, 4u));
    }
#if defined(HEADS)
    if (mode == MODE_HEADS && !HEADS_PAIRS)
        count_heads(ROW_FIRST / ROWS + first, n_sg, n_groups, lane, sgs);
#endif
    tl_mark(7u);
}

void main() {
    const uint tid = gl_LocalInvocationID.x, mode = MODE_CONST < 8u ? MODE_CONST : pc.mode;
    const uint nblk = NCOLS / 32u;  // ncols is a multiple of 32, x_off of 4 (ops.cpp checks)
    const uint half_rows = ROWS / 2u;
    const uint n_rows = ROW_END != 0u ? ROW_END : mode_rows(mode);
    const uint n_groups = mode == MODE_SILU ? (ROWS0 + half_rows - 1u) / half_rows
                                            : (n_rows + ROWS - 1u) / ROWS;
    // x' is staged once and serves every group of rows this workgroup takes: the workgroups
    // are few (ops.cpp), so x crosses from L2 a few hundred times, not once per ROWS rows.
    if (WARP_UNROLL > 0u) {
        main_subgroups(mode, nblk, n_groups);
        return;
    }
    const float up = stage_x(0u, NCOLS / 4u);
    const uint n_wg = gl_NumWorkGroups.x * gl_NumWorkGroups.y;
    for (uint grp = ROW_FIRST / ROWS + linear_workgroup(); grp < n_groups; grp += n_wg) {
        uint srow[ROWS], sbase[ROWS];
        bool sok[ROWS];
        uint sm = group_rows(mode, grp, srow, sbase, sok);

        float acc[ROWS];
        for (uint s = 0; s < ROWS; ++s) acc[s] = 0.0;
        if (mode == MODE_SILU) {
            BLOCK_LOOP(0, 1, half_rows)
        } else if (sm == 0u) {
            BLOCK_LOOP(0, 0, ROWS)
        } else if (sm == 1u) {
            BLOCK_LOOP(1, 1, ROWS)
        } else {
            BLOCK_LOOP(2, 2, ROWS)
        }

        uint sg = gl_SubgroupID;
        for (uint s = 0; s < ROWS; ++s) {
            float v = subgroupAdd(acc[s]);
            if (subgroupElect()) partial[s * 32u + sg] = v;
        }
        barrier();
        if (tid < ROWS) {
            float tot[2];
            for (uint k = 0; k < 2u; ++k) {
                uint s = wanted_slot(mode, tid, k);
                float t = 0.0;
                for (uint i = 0; i < gl_NumSubgroups; ++i) t += partial[s * 32u + i];
                tot[k] = t * up;
            }
            uint own = wanted_slot(mode, tid, 0u);
            write_rows(mode, tid, sm, sok[own], srow[own], tot);
        }
        barrier();  // partial is rewritten by the next group
    }
}
