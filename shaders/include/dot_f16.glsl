// F16 dot products of one block of a quantized type (or K-quant sub-block) with 32 activations
// held as F16 pairs (4 uvec4, in the order in which the quants unpack: pair_word says where each
// vec4 of activations goes), for shaders with GL_EXT_shader_explicit_arithmetic_types_float16
// and one TYPE_*. The activations must be scaled so that a block's 32 products stay well inside
// F16's range.

const uint MAGIC = 0x64006400u;  // two F16 1024.0: a value below 1024 ORed in is exact

// Dot product of a block's quants with the block's x pairs xv, in units of its scale.
// Q4_0 uint k holds bytes 4k..4k+3: elements 4k..4k+3 (low nibbles), 16+4k.. (high nibbles).
// Masking 0x000F000F picks bytes 0 and 2 of it: elements (4k, 4k+2); the includer stages x's
// matching pairs in the same order (pair_word).
#if !defined(TYPE_Q8_0)
// (Q4_1's, Q5_x's and the K-quants' nibbles keep this order on the device: weights.cpp.)
float block_dot(uvec4 q, uvec4 xv[4]) {
    f16vec2 s = f16vec2(0.0);
    [[unroll]] for (uint k = 0; k < 4u; ++k) {
        uint u = q[k];
        f16vec2 a = unpackFloat2x16((u & 0x000F000Fu) | MAGIC) - f16vec2(1032.0);
        f16vec2 b = fma(unpackFloat2x16((u & 0x00F000F0u) | MAGIC), f16vec2(0.0625), f16vec2(-72.0));
        u >>= 8;
        f16vec2 c = unpackFloat2x16((u & 0x000F000Fu) | MAGIC) - f16vec2(1032.0);
        f16vec2 d = fma(unpackFloat2x16((u & 0x00F000F0u) | MAGIC), f16vec2(0.0625), f16vec2(-72.0));
        s = fma(a, unpackFloat2x16(xv[k].x), s);
        s = fma(b, unpackFloat2x16(xv[k].y), s);
        s = fma(c, unpackFloat2x16(xv[k].z), s);
        s = fma(d, unpackFloat2x16(xv[k].w), s);
    }
    return float(s.x) + float(s.y);
}
// x's vec4 c of a block (elements 4c..4c+3) -> the pair word of (x, z); (y, w) follow PAIR_STEP
// words later, in the same uvec4.
uint pair_word(uint c) { return c < 4u ? 4u * c : 4u * (c - 4u) + 1u; }
#define PAIR_STEP 2u
#if defined(TYPE_Q6_K) || defined(V_Q6_K)
// A Q6_K sub-block: nibbles q, high bit pairs h (weights.cpp's layout: for nibble word k, bits
// 4-7 (k even) or 0-3 (k odd) of each byte of h[k / 2]), int8 scales of elements 0-15 and
// 16-31 in the low 16 bits of sw, F16 d. Each pair of 6-bit values ORed into 1024 is exact.
float k6_dot(uvec4 q, uvec2 h, uint sw, float16_t d, uvec4 xv[4]) {
    f16vec2 lo = f16vec2(0.0), hi = f16vec2(0.0);
    [[unroll]] for (uint k = 0; k < 4u; ++k) {
        uint u = q[k], g = h[k >> 1u];
        uint hl = (k & 1u) == 0u ? g : g << 4, hh = (k & 1u) == 0u ? g >> 2 : g << 2;
        uint l6 = (u & 0x0F0F0F0Fu) | (hl & 0x30303030u);
        uint h6 = ((u >> 4) & 0x0F0F0F0Fu) | (hh & 0x30303030u);
        f16vec2 a = unpackFloat2x16((l6 & 0x003F003Fu) | MAGIC) - f16vec2(1056.0);
        f16vec2 b = unpackFloat2x16((h6 & 0x003F003Fu) | MAGIC) - f16vec2(1056.0);
        f16vec2 c = unpackFloat2x16(((l6 >> 8) & 0x003F003Fu) | MAGIC) - f16vec2(1056.0);
        f16vec2 e = unpackFloat2x16(((h6 >> 8) & 0x003F003Fu) | MAGIC) - f16vec2(1056.0);
        lo = fma(a, unpackFloat2x16(xv[k].x), lo);
        hi = fma(b, unpackFloat2x16(xv[k].y), hi);
        lo = fma(c, unpackFloat2x16(xv[k].z), lo);
        hi = fma(e, unpackFloat2x16(xv[k].w), hi);
    }
    // The two int8 scales as an F16 pair (each + 128 ORed into 1024 is exact), times d: one
    // packed subtract and multiply instead of two integer-to-float conversions.
    const uint t = sw ^ 0x8080u;
    const vec2 f = vec2((unpackFloat2x16((t & 0xFFu) | ((t & 0xFF00u) << 8) | MAGIC) -
                         f16vec2(1152.0)) * d);
    return f.x * (float(lo.x) + float(lo.y)) + f.y * (float(hi.x) + float(hi.y));
}
#endif
#if defined(TYPE_Q4_K) || defined(TYPE_Q5_K) || defined(TYPE_Q4_1) || defined(TYPE_Q5_1)
// Types with a min term: their dot products also take the block's sum of x.
#define HAS_XSUM 1
// Sum of a block's 32 activations (for the mins).
float block_xsum(uvec4 xv[4]) {
    float t = 0.0;
    [[unroll]] for (uint k = 0; k < 4u; ++k) {
        f16vec2 p = (unpackFloat2x16(xv[k].x) + unpackFloat2x16(xv[k].z)) +
                    (unpackFloat2x16(xv[k].y) + unpackFloat2x16(xv[k].w));
        t += float(p.x) + float(p.y);
    }
    return t;
}
#endif
#if defined(TYPE_Q4_1)
// A Q4_1 block: nibbles q, F16 d and m in dm; block_dot counts q - 8, the 8 returns with xsum.
float q41_dot(uvec4 q, uint dm, uvec4 xv[4], float xsum) {
    vec2 f = unpackHalf2x16(dm);
    return f.x * block_dot(q, xv) + (8.0 * f.x + f.y) * xsum;
}
#endif
#if defined(TYPE_Q5_0) || defined(TYPE_Q5_1) || defined(TYPE_Q5_K)
// s += the products of 32 5-bit quants (nibbles q, a word of high bits qh as weights.cpp's
// q5_high_bit places them) with xv, counting q - 16: shifted for nibble word k, qh's bits land
// above the nibbles that each mask picks. (A macro: as a function, 7B Q5_K decoded about 1%
// slower on the H200.)
#define Q5_SUM(s, q, qh, xv)                                                                      \
    [[unroll]] for (uint k = 0; k < 4u; ++k) {                                                   \
        uint u = q[k], h = k == 0u ? qh << 4 : k == 1u ? qh << 2 : k == 2u ? qh >> 4 : qh >> 6; \
        f16vec2 a = unpackFloat2x16((u & 0x000F000Fu) | (h & 0x00100010u) | MAGIC) - f16vec2(1040.0); \
        f16vec2 b = fma(unpackFloat2x16((u & 0x00F000F0u) | (h & 0x01000100u) | MAGIC),     \
                        f16vec2(0.0625), f16vec2(-80.0));                                        \
        u >>= 8;                                                                                 \
        h >>= 1;                                                                                 \
        f16vec2 c = unpackFloat2x16((u & 0x000F000Fu) | (h & 0x00100010u) | MAGIC) - f16vec2(1040.0); \
        f16vec2 d = fma(unpackFloat2x16((u & 0x00F000F0u) | (h & 0x01000100u) | MAGIC),     \
                        f16vec2(0.0625), f16vec2(-80.0));                                        \
        s = fma(a, unpackFloat2x16(xv[k].x), s);                                                 \
        s = fma(b, unpackFloat2x16(xv[k].y), s);                                                 \
        s = fma(c, unpackFloat2x16(xv[k].z), s);                                                 \
        s = fma(d, unpackFloat2x16(xv[k].w), s);                                                 \
    }
#endif
#if defined(TYPE_Q5_0)
// A Q5_0 block: (q - 16) * d.
float q50_dot(uvec4 q, uint qh, float16_t d, uvec4 xv[4]) {
    f16vec2 s = f16vec2(0.0);
    Q5_SUM(s, q, qh, xv)
    return float(d) * (float(s.x) + float(s.y));
}
#elif defined(TYPE_Q5_1)
// A Q5_1 block: q * d + m, F16 d and m in dm; Q5_SUM counts q - 16, the 16 returns with xsum.
float q51_dot(uvec4 q, uint qh, uint dm, uvec4 xv[4], float xsum) {
    f16vec2 s = f16vec2(0.0);
    Q5_SUM(s, q, qh, xv)
    vec2 f = unpackHalf2x16(dm);
    return f.x * (float(s.x) + float(s.y)) + (16.0 * f.x + f.y) * xsum;
}
#endif
#if defined(TYPE_Q4_K) || defined(TYPE_Q5_K)
// d * scale and dmin * min of sub-block j (0..7) of a Q4_K or Q5_K superblock m (F16 d and
// dmin, then the 12 scale bytes as k_scales.glsl reads them), as an F16 pair: the 6-bit scale
// and min ORed into 1024 are exact, and one packed subtract and multiply take the place of two
// integer-to-float conversions and two multiplies. (The products round to F16: 2^-11 of the
// sub-block's scale.)
f16vec2 k4_scales(uvec4 m, uint j) {
    const uint b = (j < 4u ? m.y : m.z) >> (8u * (j & 3u));
    const uint p = (b & 63u) | (((m.w >> (4u * j)) & 15u) << 16) | ((b & 0xC0u) << 14);
    return unpackFloat2x16(m.x) * (unpackFloat2x16(p | MAGIC) - f16vec2(1024.0));
}
// A Q4_K sub-block j of nibbles q against xv with xsum = block_xsum(xv); m: the superblock's
// F16 d and dmin, then its 12 scale bytes. block_dot counts q - 8; the 8 returns with xsum.
float k4_dot(uvec4 q, uvec4 m, uint j, uvec4 xv[4], float xsum) {
    const vec2 f = vec2(k4_scales(m, j));
    return f.x * (block_dot(q, xv) + 8.0 * xsum) - f.y * xsum;
}
#if defined(TYPE_Q5_K)
// The same for Q5_K, whose sub-block adds a word of high bits qh (Q5_SUM).
float k5_dot(uvec4 q, uint qh, uvec4 m, uint j, uvec4 xv[4], float xsum) {
    f16vec2 s = f16vec2(0.0);
    Q5_SUM(s, q, qh, xv)
    const vec2 f = vec2(k4_scales(m, j));
    return f.x * (float(s.x) + float(s.y) + 16.0 * xsum) - f.y * xsum;
}
#endif
#endif
#else
// Q8_0 uint k holds elements 4k..4k+3; with the sign bit flipped a byte is the value + 128.
float block_dot(uvec4 q0, uvec4 q1, uvec4 xv[4]) {
    f16vec2 s = f16vec2(0.0);
    [[unroll]] for (uint k = 0; k < 8u; ++k) {
        uint u = (k < 4u ? q0[k] : q1[k - 4u]) ^ 0x80808080u;
        f16vec2 a = unpackFloat2x16((u & 0x00FF00FFu) | MAGIC) - f16vec2(1152.0);
        f16vec2 b = unpackFloat2x16(((u >> 8) & 0x00FF00FFu) | MAGIC) - f16vec2(1152.0);
        uvec4 xk = xv[k >> 1];
        s = fma(a, unpackFloat2x16((k & 1u) == 0u ? xk.x : xk.z), s);
        s = fma(b, unpackFloat2x16((k & 1u) == 0u ? xk.y : xk.w), s);
    }
    return float(s.x) + float(s.y);
}
uint pair_word(uint c) { return 2u * c; }
#define PAIR_STEP 1u
#endif
