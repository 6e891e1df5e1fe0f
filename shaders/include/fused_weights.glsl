// Weight loads and F16 dot products of the fused decode kernels (matvec_fused_h.comp and the
// output projection in attention.comp), over the layouts of weights.cpp. The includer defines
// one TYPE_* of Q4_0, Q8_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K or Q6_K and STEP_LOADS (load slots a
// thread holds), and includes dot_f16.glsl first. Blocks are numbered in 32 elements (K-quant
// sub-blocks, 8 to a superblock).
//
// FUSED_WEIGHTS(N) declares the matrix at binding N; SLOT_REGS the registers of STEP_LOADS
// slots; LOADQ(N, rb, c, i) loads block c of the row at rb (the row's first block, or for Q4_0
// and Q8_0 its first uvec4: q_rows.glsl, with FUSED_ROW_BLOCKS blocks a row, which the
// includer defines) of binding N into slot i; DOTQ(i, j) is slot i's dot
// product with the block's x pairs xv (j: the block's index in its superblock, K-quants only;
// the types with a min term, HAS_XSUM, also read xsum, set by XSUM(xv)); FOLDQ(i) consumes
// slot i without arithmetic, for timing-only variants whose loads must stay.
#ifndef DIAG_SCALE
#define DIAG_SCALE(v) (v)  // matvec_fused_h.comp's timing-only DIAG replaces the scales
#endif
#if defined(TYPE_Q6_K) || defined(V_Q6_K)
// Q6_K: groups of 8 superblocks of 13 uvec4 (8 sub-blocks' nibbles, 8 sub-blocks' high bits as
// uvec2, 16 scales), then 8 F16 d's: 105 uvec4.
#define K6_WEIGHTS(N)                                               \
    layout(binding = N) readonly buffer W##N { uvec4 wq##N[]; };     \
    layout(binding = N) readonly buffer W##N##D { float16_t wd##N[]; }; \
    layout(binding = N) readonly buffer W##N##H { uvec2 wh##N[]; };  \
    layout(binding = N) readonly buffer W##N##S { uint ws##N[]; };
#define K6_BASE(ib) ((ib >> 6) * 105u + ((ib >> 3) & 7u) * 13u)
#define K6_SLOT_REGS uvec4 qa[STEP_LOADS]; uvec2 kh[STEP_LOADS]; uint ksw[STEP_LOADS]; \
    float16_t dd[STEP_LOADS];
#define K6_LOADQ_IB(N, ib, i) qa[i] = wq##N[K6_BASE(ib) + (ib & 7u)]; \
    kh[i] = wh##N[(K6_BASE(ib) + 8u) * 2u + (ib & 7u)]; \
    ksw[i] = ws##N[(K6_BASE(ib) + 12u) * 4u + ((ib & 7u) >> 1)]; \
    dd[i] = wd##N[(ib >> 6) * 840u + 832u + ((ib >> 3) & 7u)]
#define K6_DOTQ(i, j) k6_dot(qa[i], kh[i], ksw[i] >> (16u * (j & 1u)), dd[i], xv)
#define K6_FOLDQ(i) (uintBitsToFloat((qa[i].x ^ qa[i].w ^ kh[i].x ^ ksw[i]) & 0x007FFFFFu) + float(dd[i]))
#endif
#if defined(TYPE_Q4_0) || defined(TYPE_Q8_0)
#include "q_rows.glsl"
#define FUSED_WEIGHTS(N)                                        \
    layout(binding = N) readonly buffer W##N { uvec4 wq##N[]; }; \
    layout(binding = N) readonly buffer W##N##D { float16_t wd##N[]; };
#define D_INDEX(rb, c) QR_SCALE(rb, c, FUSED_ROW_BLOCKS)
#else
#define LOADQ(N, rb, c, i) LOADQ_IB(N, (rb) + (c), i)
#endif
#if defined(TYPE_Q4_0)
#define SLOT_REGS uvec4 qa[STEP_LOADS]; float16_t dd[STEP_LOADS];
#define LOADQ(N, rb, c, i) qa[i] = wq##N[QR_QUANTS(rb, c)]; dd[i] = DIAG_SCALE(wd##N[D_INDEX(rb, c)])
#define DOTQ(i, j) (block_dot(qa[i], xv) * float(dd[i]))
#define FOLDQ(i) (uintBitsToFloat((qa[i].x ^ qa[i].y ^ qa[i].z ^ qa[i].w) & 0x007FFFFFu) + float(dd[i]))
#elif defined(TYPE_Q8_0)
#define SLOT_REGS uvec4 qa[STEP_LOADS]; uvec4 qb[STEP_LOADS]; float16_t dd[STEP_LOADS];
#define LOADQ(N, rb, c, i) qa[i] = wq##N[QR_QUANTS(rb, c)]; qb[i] = wq##N[QR_QUANTS(rb, c) + 1u]; \
    dd[i] = DIAG_SCALE(wd##N[D_INDEX(rb, c)])
#define DOTQ(i, j) (block_dot(qa[i], qb[i], xv) * float(dd[i]))
#define FOLDQ(i) (uintBitsToFloat((qa[i].x ^ qa[i].y ^ qb[i].z ^ qb[i].w) & 0x007FFFFFu) + float(dd[i]))
#elif defined(TYPE_Q4_1) || defined(TYPE_Q5_0) || defined(TYPE_Q5_1)
// Groups of 8 blocks (group_words.glsl).
#include "group_words.glsl"
#define FUSED_WEIGHTS(N)                                            \
    layout(binding = N) readonly buffer W##N { uvec4 wq##N[]; };     \
    layout(binding = N) readonly buffer W##N##W { uint ww##N[]; };   \
    layout(binding = N) readonly buffer W##N##D { float16_t wd##N[]; };
#if defined(TYPE_Q4_1)
#define SLOT_REGS uvec4 qa[STEP_LOADS]; uint kd[STEP_LOADS];
#define LOADQ_IB(N, ib, i) qa[i] = wq##N[G_NIBBLES(ib)]; kd[i] = ww##N[G_DM(ib)]
#define DOTQ(i, j) q41_dot(qa[i], kd[i], xv, xsum)
#define FOLDQ(i) uintBitsToFloat((qa[i].x ^ qa[i].w ^ kd[i]) & 0x007FFFFFu)
#elif defined(TYPE_Q5_0)
#define SLOT_REGS uvec4 qa[STEP_LOADS]; uint kq[STEP_LOADS]; float16_t dd[STEP_LOADS];
#define LOADQ_IB(N, ib, i) qa[i] = wq##N[G_NIBBLES(ib)]; kq[i] = ww##N[G_HIGH(ib)]; \
    dd[i] = DIAG_SCALE(wd##N[G_D_HALF(ib)])
#define DOTQ(i, j) q50_dot(qa[i], kq[i], dd[i], xv)
#define FOLDQ(i) (uintBitsToFloat((qa[i].x ^ qa[i].w ^ kq[i]) & 0x007FFFFFu) + float(dd[i]))
#else
#define SLOT_REGS uvec4 qa[STEP_LOADS]; uint kq[STEP_LOADS]; uint kd[STEP_LOADS];
#define LOADQ_IB(N, ib, i) qa[i] = wq##N[G_NIBBLES(ib)]; kq[i] = ww##N[G_HIGH(ib)]; \
    kd[i] = ww##N[G_DM(ib)]
#define DOTQ(i, j) q51_dot(qa[i], kq[i], kd[i], xv, xsum)
#define FOLDQ(i) uintBitsToFloat((qa[i].x ^ qa[i].w ^ kq[i] ^ kd[i]) & 0x007FFFFFu)
#endif
#elif defined(TYPE_Q4_K)
// Superblocks of 9 uvec4: 8 sub-blocks' nibbles, then d, dmin and the scale bytes.
#define FUSED_WEIGHTS(N) layout(binding = N) readonly buffer W##N { uvec4 wq##N[]; };
#define SLOT_REGS uvec4 qa[STEP_LOADS]; uvec4 km[STEP_LOADS];
#define LOADQ_IB(N, ib, i) qa[i] = wq##N[(ib >> 3) * 9u + (ib & 7u)]; km[i] = wq##N[(ib >> 3) * 9u + 8u]
#define DOTQ(i, j) k4_dot(qa[i], km[i], j, xv, xsum)
#define FOLDQ(i) uintBitsToFloat((qa[i].x ^ qa[i].w ^ km[i].x ^ km[i].w) & 0x007FFFFFu)
#elif defined(TYPE_Q5_K)
// Superblocks of 11 uvec4: Q4_K's 9, then a uint of high bits per sub-block.
#define FUSED_WEIGHTS(N)                                        \
    layout(binding = N) readonly buffer W##N { uvec4 wq##N[]; }; \
    layout(binding = N) readonly buffer W##N##U { uint wu##N[]; };
#define SLOT_REGS uvec4 qa[STEP_LOADS]; uvec4 km[STEP_LOADS]; uint kq[STEP_LOADS];
#define LOADQ_IB(N, ib, i) qa[i] = wq##N[(ib >> 3) * 11u + (ib & 7u)]; \
    km[i] = wq##N[(ib >> 3) * 11u + 8u]; kq[i] = wu##N[(ib >> 3) * 44u + 36u + (ib & 7u)]
#define DOTQ(i, j) k5_dot(qa[i], kq[i], km[i], j, xv, xsum)
#define FOLDQ(i) uintBitsToFloat((qa[i].x ^ qa[i].w ^ km[i].x ^ kq[i]) & 0x007FFFFFu)
#elif defined(TYPE_Q6_K)
#define FUSED_WEIGHTS(N) K6_WEIGHTS(N)
#define SLOT_REGS K6_SLOT_REGS
#define LOADQ_IB(N, ib, i) K6_LOADQ_IB(N, ib, i)
#define DOTQ(i, j) K6_DOTQ(i, j)
#define FOLDQ(i) K6_FOLDQ(i)
#else
#error "fused_weights.glsl is for Q4_0, Q8_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K and Q6_K"
#endif
// V_Q6_K: binding 2 holds Q6_K rows beside the includer's type (Q/K/V whose V is Q6_K, as
// Q4_K_M files give half the layers): *_V macros, whose registers the includer declares in the V
// rows' own scope.
#if defined(V_Q6_K)
#define FUSED_WEIGHTS_V(N) K6_WEIGHTS(N)
#define SLOT_REGS_V K6_SLOT_REGS
#define LOADQ_V(N, rb, c, i) K6_LOADQ_IB(N, (rb) + (c), i)
#define DOTQ_V(i, j) K6_DOTQ(i, j)
#define FOLDQ_V(i) K6_FOLDQ(i)
#endif
#if !defined(XSUM)  // (matvec_fused_h.comp reads the sums it staged)
#if defined(HAS_XSUM)
#define XSUM(xv) const float xsum = block_xsum(xv)
#else
#define XSUM(xv)
#endif
#endif
