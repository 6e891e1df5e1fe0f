// Integer dot products (VK_KHR_shader_integer_dot_product through GL_EXT_spirv_intrinsics:
// glslang 12 has no GL_EXT_integer_dot_product), and a weight chunk of 32 elements as int8
// lanes for them. Included after weights.glsl, whose buffers it reads.
//
// idot_chunk(row_base, chunk, ncols, lo, hi, s, m): element e of the chunk is
// s[e / 16] * q_e + m, with q_e the e % 16-th int8 lane of lo (e < 16) or hi (e >= 16), four
// lanes a word, lowest byte first. Offsets that are a whole number of steps (Q4_0's -8, Q5_0's
// -16, Q6_K's -32) are taken off the lanes, so that only the types with a real minimum (Q4_1,
// Q5_1, Q4_K, Q5_K) need the sum of the activations (m != 0).
#ifndef IDOT_WEIGHTS_GLSL
#define IDOT_WEIGHTS_GLSL
#extension GL_EXT_spirv_intrinsics : require

// OpSDot (4450) of two words of 4 signed 8-bit lanes (PackedVectorFormat4x8Bit = 0), under
// DotProductInput4x8BitPacked (6018) and DotProduct (6019).
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018],
                  id = 4450) int sdot4x8(int a, int b, spirv_literal int fmt);
int sdot4(int a, int b) { return sdot4x8(a, b, 0); }
int sdot16(ivec4 a, ivec4 b) {
    return sdot4(a.x, b.x) + sdot4(a.y, b.y) + sdot4(a.z, b.z) + sdot4(a.w, b.w);
}

// Each lane of v (0..127) less n, as a signed byte: no lane borrows from the next.
ivec4 lanes_minus(uvec4 v, uint n) {
    return ivec4(((v | 0x80808080u) - n * 0x01010101u) ^ 0x80808080u);
}
const uint kLow4 = 0x0F0F0F0Fu;

#if defined(TYPE_Q5_0) || defined(TYPE_Q5_1) || defined(TYPE_Q5_K)
// Bit 4 of each lane of elements e0..e0+3, from the word of high bits (q5_high_bit).
uint q5_lanes(uint qh, uint e0) {
    uint r = 0u;
    for (uint i = 0u; i < 4u; ++i) r |= ((qh >> q5_high_bit(e0 + i)) & 1u) << (8u * i + 4u);
    return r;
}
uvec4 q5_high(uint qh, uint e0) {
    return uvec4(q5_lanes(qh, e0), q5_lanes(qh, e0 + 4u), q5_lanes(qh, e0 + 8u),
                 q5_lanes(qh, e0 + 12u));
}
#endif

void idot_chunk(uint row_base, uint chunk, uint ncols, out ivec4 lo, out ivec4 hi, out vec2 s,
                out float m) {
    m = 0.0;
#if defined(TYPE_Q8_0) || defined(TYPE_Q4_0)
    s = vec2(float(wd[QR_SCALE(row_base, chunk, ncols / 32u)]));
    uint qi = QR_QUANTS(row_base, chunk);
#if defined(TYPE_Q8_0)
    lo = ivec4(wq[qi]);
    hi = ivec4(wq[qi + 1u]);
#else
    uvec4 q = wq[qi];
    lo = lanes_minus(q & kLow4, 8u);
    hi = lanes_minus((q >> 4u) & kLow4, 8u);
#endif

#elif defined(TYPE_Q4_1) || defined(TYPE_Q5_0) || defined(TYPE_Q5_1)
    uint ib = row_base + chunk;
    uvec4 q = wq[G_NIBBLES(ib)];
    uvec4 l = q & kLow4, h = (q >> 4u) & kLow4;
#if !defined(TYPE_Q4_1)
    uint qh = ww[G_HIGH(ib)];
    l |= q5_high(qh, 0u);
    h |= q5_high(qh, 16u);
#endif
#if defined(TYPE_Q5_0)
    s = vec2(unpackHalf2x16(ww[G_D_HALF(ib) / 2u])[ib & 1u]);
    lo = lanes_minus(l, 16u);
    hi = lanes_minus(h, 16u);
#else
    vec2 dm = unpackHalf2x16(ww[G_DM(ib)]);
    s = vec2(dm.x);
    m = dm.y;
    lo = ivec4(l);
    hi = ivec4(h);
#endif

#elif defined(TYPE_Q4_K) || defined(TYPE_Q5_K)
    uint b = (row_base + chunk / 8u) * K_WORDS, c = chunk % 8u;
    vec2 dm = unpackHalf2x16(wk[b + 32u]);
    uint sc, mn;
    scale_min_q4k(uvec3(wk[b + 33u], wk[b + 34u], wk[b + 35u]), c, sc, mn);
    s = vec2(dm.x * float(sc));
    m = -dm.y * float(mn);
    uvec4 q = uvec4(wk[b + 4u * c], wk[b + 4u * c + 1u], wk[b + 4u * c + 2u], wk[b + 4u * c + 3u]);
    uvec4 l = q & kLow4, h = (q >> 4u) & kLow4;
#if defined(TYPE_Q5_K)
    uint qh = wk[b + 36u + c];
    l |= q5_high(qh, 0u);
    h |= q5_high(qh, 16u);
#endif
    lo = ivec4(l);
    hi = ivec4(h);

#elif defined(TYPE_Q6_K)
    uint sb = row_base + chunk / 8u, c = chunk % 8u, grp = sb >> 3, sj = sb & 7u;
    uint b = grp * 420u + sj * 52u;
    float d = unpackHalf2x16(wk[grp * 420u + 416u + sj / 2u])[sj & 1u];
    uint sw = wk[b + 48u + c / 2u] >> (16u * (c & 1u));
    s = vec2(d * float(int(sw << 24) >> 24), d * float(int(sw << 16) >> 24));
    uvec4 q = uvec4(wk[b + 4u * c], wk[b + 4u * c + 1u], wk[b + 4u * c + 2u], wk[b + 4u * c + 3u]);
    // Words k = 0, 1 take their high bit pairs from bits 4-7 of each byte of the first word of
    // high bits, k = 2, 3 from the second; k even from bits 4-5 (low) and 6-7 (high), k odd
    // from bits 0-1 and 2-3.
    uint h0 = wk[b + 32u + 2u * c], h1 = wk[b + 33u + 2u * c];
    uvec4 hw = uvec4(h0 >> 4u, h0, h1 >> 4u, h1);
    lo = lanes_minus((q & kLow4) | ((hw & 0x03030303u) << 4u), 32u);
    hi = lanes_minus(((q >> 4u) & kLow4) | (((hw >> 2u) & 0x03030303u) << 4u), 32u);
#else
#error "no integer dot product reader for this weight type"
#endif
}
#endif
