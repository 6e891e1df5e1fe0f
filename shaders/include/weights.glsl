// A weight matrix in one GGUF type bound at W_BINDING, and the dequantization of one 32-element
// chunk of a row. The includer defines W_BINDING and one TYPE_* macro.
//
// Rows are addressed by `row_base`, the index of the row's first unit: an element for the
// float types, a block for the quantized ones. Columns past ncols (only possible for the float
// types, whose rows need not be a multiple of 32) read as zero.

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
// Q8_0 and Q4_0 come regrouped at upload (inference/src/vulkan/weights.cpp): each group of 8
// blocks holds their quants (Q8_0: 32 bytes, Q4_0: 16 bytes each) and then their 8 F16 scales.
layout(binding = W_BINDING) readonly buffer WBuf { uvec4 wq[]; };
layout(binding = W_BINDING) readonly buffer WBufD { float16_t wd[]; };
#if defined(TYPE_Q8_0)
#define QUANT_VEC4 2u
#else
#define QUANT_VEC4 1u
#endif
// uvec4 index of block ib's quants, and F16 index of its scale.
uint block_quants(uint ib) { return (ib >> 3) * (8u * QUANT_VEC4 + 1u) + (ib & 7u) * QUANT_VEC4; }
uint block_scale(uint ib) { return (ib >> 3) * (8u * QUANT_VEC4 + 1u) * 8u + 64u * QUANT_VEC4 + (ib & 7u); }
void dequant_chunk(uint row_base, uint chunk, uint ncols, out float v[32]) {
    uint ib = row_base + chunk;
    float d = float(wd[block_scale(ib)]);
    uint qi = block_quants(ib);
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

#elif defined(TYPE_Q4_1)
struct BlockQ4_1 { float16_t d; float16_t m; uint8_t qs[16]; };
layout(binding = W_BINDING) readonly buffer WBuf { BlockQ4_1 wb[]; };
void dequant_chunk(uint row_base, uint chunk, uint ncols, out float v[32]) {
    uint ib = row_base + chunk;
    float d = float(wb[ib].d), m = float(wb[ib].m);
    for (uint j = 0; j < 16; ++j) {
        uint q = uint(wb[ib].qs[j]);
        v[j] = float(q & 15u) * d + m;
        v[j + 16] = float(q >> 4) * d + m;
    }
}

#elif defined(TYPE_Q5_0) || defined(TYPE_Q5_1)
#if defined(TYPE_Q5_0)
struct BlockQ5 { float16_t d; uint8_t qh[4]; uint8_t qs[16]; };
#else
struct BlockQ5 { float16_t d; float16_t m; uint8_t qh[4]; uint8_t qs[16]; };
#endif
layout(binding = W_BINDING) readonly buffer WBuf { BlockQ5 wb[]; };
void dequant_chunk(uint row_base, uint chunk, uint ncols, out float v[32]) {
    uint ib = row_base + chunk;
    float d = float(wb[ib].d);
    uint qh = uint(wb[ib].qh[0]) | (uint(wb[ib].qh[1]) << 8) | (uint(wb[ib].qh[2]) << 16) |
              (uint(wb[ib].qh[3]) << 24);
#if defined(TYPE_Q5_0)
    float m = -16.0 * d;
#else
    float m = float(wb[ib].m);
#endif
    for (uint j = 0; j < 16; ++j) {
        uint q = uint(wb[ib].qs[j]);
        uint h0 = ((qh >> j) & 1u) << 4;
        uint h1 = ((qh >> (j + 16)) & 1u) << 4;
        v[j] = float((q & 15u) | h0) * d + m;
        v[j + 16] = float((q >> 4) | h1) * d + m;
    }
}

#elif defined(TYPE_Q4_K) || defined(TYPE_Q5_K)
// ggml's block: F16 d and dmin, 12 bytes of 6-bit scales and mins, (Q5_K: 32 bytes of high
// bits,) 128 bytes of nibbles; 144 (176) bytes, so blocks stay 4-byte aligned and are read a
// word at a time.
#if defined(TYPE_Q4_K)
#define K_WORDS 36u
#define K_QS 4u  // word of the nibbles
#else
#define K_WORDS 44u
#define K_QS 12u
#define K_QH 4u  // word of the high bits
#endif
layout(binding = W_BINDING) readonly buffer WBuf { uint wk[]; };
// The 6-bit scale and min of sub-block j (0..7) from the 12 scale bytes s (ggml's
// get_scale_min_k4).
uint k_byte(uvec3 s, uint j) { return (s[j >> 2] >> (8u * (j & 3u))) & 255u; }
void scale_min_k4(uvec3 s, uint j, out uint sc, out uint mn) {
    if (j < 4) {
        sc = k_byte(s, j) & 63u;
        mn = k_byte(s, j + 4) & 63u;
    } else {
        sc = (k_byte(s, j + 4) & 15u) | ((k_byte(s, j - 4) >> 6) << 4);
        mn = (k_byte(s, j + 4) >> 4) | ((k_byte(s, j) >> 6) << 4);
    }
}
void dequant_chunk(uint row_base, uint chunk, uint ncols, out float v[32]) {
    uint b = (row_base + chunk / 8) * K_WORDS;
    uint c = chunk % 8;
    vec2 dm = unpackHalf2x16(wk[b]);
    uint sc, mn;
    scale_min_k4(uvec3(wk[b + 1], wk[b + 2], wk[b + 3]), c, sc, mn);
    float d = dm.x * float(sc), m = dm.y * float(mn);
    // Sub-blocks 2i and 2i + 1 share 32 bytes of nibbles (low, high).
    uint q0 = b + K_QS + 8u * (c / 2), shift = 4 * (c % 2);
    for (uint k = 0; k < 8; ++k) {
        uint qw = wk[q0 + k] >> shift;
#if defined(TYPE_Q5_K)
        uint hw = wk[b + K_QH + k] >> c;
#endif
        for (uint i = 0; i < 4; ++i) {
            uint q = (qw >> (8 * i)) & 15u;
#if defined(TYPE_Q5_K)
            q |= ((hw >> (8 * i)) & 1u) << 4;
#endif
            v[4 * k + i] = d * float(q) - m;
        }
    }
}

#elif defined(TYPE_Q6_K)
// ggml's block: 128 bytes of low nibbles, 64 of high bit pairs, 16 int8 scales, F16 d; 210
// bytes, so blocks are only 2-byte aligned and are read 16 bits at a time.
layout(binding = W_BINDING) readonly buffer WBuf { uint16_t w6[]; };
void dequant_chunk(uint row_base, uint chunk, uint ncols, out float v[32]) {
    uint b = (row_base + chunk / 8) * 105u;
    uint c = chunk % 8;
    uint h = c / 4, k = c % 4;
    float d = unpackHalf2x16(uint(w6[b + 104u])).x;
    // The chunk's two scales (elements 0-15, 16-31) are bytes 8h + 2k and 8h + 2k + 1.
    uint sw = uint(w6[b + 96u + 4u * h + k]);
    float s0 = d * float(int(sw << 24) >> 24), s1 = d * float(int(sw << 16) >> 24);
    uint ql0 = 32u * h + 16u * (k & 1u), qh0 = 64u + 16u * h;
    uint lshift = 4 * (k >> 1), hshift = 2 * k;
    for (uint j = 0; j < 16; ++j) {
        uint lo = uint(w6[b + ql0 + j]) >> lshift, hi = uint(w6[b + qh0 + j]) >> hshift;
        for (uint i = 0; i < 2; ++i) {
            uint l = 2 * j + i;
            uint q = ((lo >> (8 * i)) & 15u) | (((hi >> (8 * i)) & 3u) << 4);
            v[l] = (l < 16 ? s0 : s1) * (float(q) - 32.0);
        }
    }
}
#else
#error "no weight type defined"
#endif
