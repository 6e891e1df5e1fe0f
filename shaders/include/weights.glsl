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
#if defined(TYPE_Q4_K)
struct BlockK { float16_t d; float16_t dmin; uint8_t scales[12]; uint8_t qs[128]; };
#else
struct BlockK { float16_t d; float16_t dmin; uint8_t scales[12]; uint8_t qh[32]; uint8_t qs[128]; };
#endif
layout(binding = W_BINDING) readonly buffer WBuf { BlockK wb[]; };
// The 6-bit scale and min of sub-block j (0..7), packed as ggml's get_scale_min_k4.
void scale_min_k4(uint ib, uint j, out uint sc, out uint mn) {
    if (j < 4) {
        sc = uint(wb[ib].scales[j]) & 63u;
        mn = uint(wb[ib].scales[j + 4]) & 63u;
    } else {
        sc = (uint(wb[ib].scales[j + 4]) & 15u) | ((uint(wb[ib].scales[j - 4]) >> 6) << 4);
        mn = (uint(wb[ib].scales[j + 4]) >> 4) | ((uint(wb[ib].scales[j]) >> 6) << 4);
    }
}
void dequant_chunk(uint row_base, uint chunk, uint ncols, out float v[32]) {
    uint ib = row_base + chunk / 8;
    uint c = chunk % 8;
    uint sc, mn;
    scale_min_k4(ib, c, sc, mn);
    float d = float(wb[ib].d) * float(sc);
    float m = float(wb[ib].dmin) * float(mn);
    uint qoff = 32 * (c / 2);
    uint shift = 4 * (c % 2);
    for (uint l = 0; l < 32; ++l) {
        uint q = (uint(wb[ib].qs[qoff + l]) >> shift) & 15u;
#if defined(TYPE_Q5_K)
        q |= ((uint(wb[ib].qh[l]) >> c) & 1u) << 4;
#endif
        v[l] = d * float(q) - m;
    }
}

#elif defined(TYPE_Q6_K)
struct BlockQ6_K { uint8_t ql[128]; uint8_t qh[64]; int8_t scales[16]; float16_t d; };
layout(binding = W_BINDING) readonly buffer WBuf { BlockQ6_K wb[]; };
void dequant_chunk(uint row_base, uint chunk, uint ncols, out float v[32]) {
    uint ib = row_base + chunk / 8;
    uint c = chunk % 8;
    uint h = c / 4, k = c % 4;
    float d = float(wb[ib].d);
    uint ql0 = 64 * h + 32 * (k & 1u);
    uint lshift = 4 * (k >> 1);
    uint hshift = 2 * k;
    for (uint l = 0; l < 32; ++l) {
        uint q = ((uint(wb[ib].ql[ql0 + l]) >> lshift) & 15u) |
                 (((uint(wb[ib].qh[32 * h + l]) >> hshift) & 3u) << 4);
        float s = float(int(wb[ib].scales[8 * h + l / 16 + 2 * k]));
        v[l] = d * s * (float(q) - 32.0);
    }
}
#else
#error "no weight type defined"
#endif
