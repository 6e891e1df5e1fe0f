// A weight matrix in one GGUF type bound at W_BINDING, and the dequantization of one 32-element
// chunk of a row. The includer defines W_BINDING and one TYPE_* macro.
//
// Rows are addressed by `row_base`, the index of the row's first unit: an element for the
// float types, a uvec4 for Q4_0 and Q8_0 (q_rows.glsl), a block for the other quantized ones
// (the host's row stride is in the same unit). Columns past ncols (only possible for the float
// types, whose rows need not be a multiple of 32) read as zero.

#if defined(TYPE_Q5_0) || defined(TYPE_Q5_1) || defined(TYPE_Q5_K)
// Where a 32-element block's (or Q5_K sub-block's) word of high bits keeps element e's
// (weights.cpp's q5_high_bit).
uint q5_high_bit(uint e) {
    uint k = (e % 16u) / 4u, i = e % 4u;
    uint at = 4u + (i & 1u) + 16u * (i >> 1) + 4u * (e / 16u);
    return k < 2u ? at - 4u + 2u * k : at + 2u * k;
}
#endif

#if defined(TYPE_F32) || defined(TYPE_F16) || defined(TYPE_BF16)
#if defined(TYPE_F32)
layout(binding = W_BINDING) readonly buffer WBuf { float wdata[]; };
float w_elem(uint i) { return wdata[i]; }
#elif defined(TYPE_F16)
layout(binding = W_BINDING) readonly buffer WBuf { float16_t wdata[]; };
float w_elem(uint i) { return float(wdata[i]); }
#else
layout(binding = W_BINDING) readonly buffer WBuf { uint16_t wdata[]; };
float w_elem(uint i) { return uintBitsToFloat(uint(wdata[i]) << 16); }
#endif
void dequant_chunk(uint row_base, uint chunk, uint ncols, out float v[32]) {
    uint c0 = chunk * 32;
    for (uint i = 0; i < 32; ++i) v[i] = (c0 + i < ncols) ? w_elem(row_base + c0 + i) : 0.0;
}

#elif defined(TYPE_Q8_0) || defined(TYPE_Q4_0)
// Q8_0 and Q4_0 come in rows of quants, then scales (q_rows.glsl); row_base is the row's first
// uvec4.
#include "q_rows.glsl"
layout(binding = W_BINDING) readonly buffer WBuf { uvec4 wq[]; };
layout(binding = W_BINDING) readonly buffer WBufD { float16_t wd[]; };
void dequant_chunk(uint row_base, uint chunk, uint ncols, out float v[32]) {
    float d = float(wd[QR_SCALE(row_base, chunk, ncols / 32u)]);
    uint qi = QR_QUANTS(row_base, chunk);
#if defined(TYPE_Q8_0)
    uvec4 q0 = wq[qi], q1 = wq[qi + 1];
    for (uint k = 0; k < 16; ++k) {
        v[k] = float(bitfieldExtract(int(q0[k >> 2]), int(8 * (k & 3)), 8)) * d;
        v[k + 16] = float(bitfieldExtract(int(q1[k >> 2]), int(8 * (k & 3)), 8)) * d;
    }
#else
    uvec4 q = wq[qi];
    for (uint k = 0; k < 16; ++k) {
        uint b = (q[k >> 2] >> (8 * (k & 3))) & 255u;
        v[k] = (float(b & 15u) - 8.0) * d;
        v[k + 16] = (float(b >> 4) - 8.0) * d;
    }
#endif
}

#elif defined(TYPE_Q4_1) || defined(TYPE_Q5_0) || defined(TYPE_Q5_1)
// Regrouped at upload in groups of 8 blocks (weights.cpp, group_words.glsl); the nibbles in
// Q4_0's order, Q5_x's high bits of element e at q5_high_bit(e).
layout(binding = W_BINDING) readonly buffer WBuf { uvec4 wq[]; };
layout(binding = W_BINDING) readonly buffer WBufW { uint ww[]; };
#include "group_words.glsl"
void dequant_chunk(uint row_base, uint chunk, uint ncols, out float v[32]) {
    uint ib = row_base + chunk;
    uvec4 q = wq[G_NIBBLES(ib)];
#if defined(TYPE_Q5_0)
    float d = unpackHalf2x16(ww[G_D_HALF(ib) / 2u])[ib & 1u], m = -16.0 * d;
#else
    vec2 dm = unpackHalf2x16(ww[G_DM(ib)]);
    float d = dm.x, m = dm.y;
#endif
#if !defined(TYPE_Q4_1)
    uint qh = ww[G_HIGH(ib)];
#endif
    for (uint k = 0; k < 4; ++k) {
        for (uint i = 0; i < 4; ++i) {
            uint e = 4 * k + i, b = q[k] >> (8 * i);
            uint lo = b & 15u, hi = (b >> 4) & 15u;
#if !defined(TYPE_Q4_1)
            lo |= ((qh >> q5_high_bit(e)) & 1u) << 4;
            hi |= ((qh >> q5_high_bit(e + 16u)) & 1u) << 4;
#endif
            v[e] = float(lo) * d + m;
            v[e + 16] = float(hi) * d + m;
        }
    }
}

#elif defined(TYPE_Q4_K) || defined(TYPE_Q5_K) || defined(TYPE_Q6_K)
// Blocks of 256 elements are 4-byte aligned on the device and read a word at a time.
layout(binding = W_BINDING) readonly buffer WBuf { uint wk[]; };
#include "k_scales.glsl"
#if defined(TYPE_Q4_K) || defined(TYPE_Q5_K)
// Rearranged at upload (weights.cpp): 8 sub-blocks of 16 nibble bytes in Q4_0's order (byte b:
// element b low, b + 16 high), then d, dmin and the 12 repacked scale bytes (36 words); Q5_K
// then a word of high bits per sub-block (element e's at q5_high_bit(e); 44 words).
#if defined(TYPE_Q4_K)
#define K_WORDS 36u
#else
#define K_WORDS 44u
#endif
void dequant_chunk(uint row_base, uint chunk, uint ncols, out float v[32]) {
    uint b = (row_base + chunk / 8) * K_WORDS, c = chunk % 8;
    vec2 dm = unpackHalf2x16(wk[b + 32u]);
    uint sc, mn;
    scale_min_q4k(uvec3(wk[b + 33u], wk[b + 34u], wk[b + 35u]), c, sc, mn);
    float d = dm.x * float(sc), m = dm.y * float(mn);
#if defined(TYPE_Q5_K)
    uint qh = wk[b + 36u + c];
#endif
    for (uint k = 0; k < 4; ++k) {
        uint qw = wk[b + 4u * c + k];
        for (uint i = 0; i < 4; ++i) {
            uint e = 4 * k + i, q = qw >> (8 * i);
            uint lo = q & 15u, hi = (q >> 4) & 15u;
#if defined(TYPE_Q5_K)
            lo |= ((qh >> q5_high_bit(e)) & 1u) << 4;
            hi |= ((qh >> q5_high_bit(e + 16u)) & 1u) << 4;
#endif
            v[e] = d * float(lo) - m;
            v[16 + e] = d * float(hi) - m;
        }
    }
}
#else
// Rearranged at upload (weights.cpp): groups of 8 superblocks of 52 words (8 sub-blocks of 16
// nibble bytes in Q4_0's order, 8 sub-blocks of 8 bytes of high bit pairs, 16 int8 scales),
// then the 8 F16 d's; 420 words a group.
void dequant_chunk(uint row_base, uint chunk, uint ncols, out float v[32]) {
    uint sb = row_base + chunk / 8, c = chunk % 8, grp = sb >> 3, sj = sb & 7u;
    uint b = grp * 420u + sj * 52u;
    float d = unpackHalf2x16(wk[grp * 420u + 416u + sj / 2])[sj & 1u];
    uint sw = wk[b + 48u + c / 2] >> (16u * (c & 1u));
    float s0 = d * float(int(sw << 24) >> 24), s1 = d * float(int(sw << 16) >> 24);
    for (uint k = 0; k < 4; ++k) {
        uint qw = wk[b + 4u * c + k], hw = wk[b + 32u + 2u * c + k / 2];
        uint f = (k & 1u) == 0u ? 4u : 0u;
        for (uint i = 0; i < 4; ++i) {
            uint lo = ((qw >> (8 * i)) & 15u) | (((hw >> (8 * i + f)) & 3u) << 4);
            uint hi = ((qw >> (8 * i + 4)) & 15u) | (((hw >> (8 * i + f + 2)) & 3u) << 4);
            v[4 * k + i] = s0 * (float(lo) - 32.0);
            v[16 + 4 * k + i] = s1 * (float(hi) - 32.0);
        }
    }
}
#endif
#else
#error "no weight type defined"
#endif
