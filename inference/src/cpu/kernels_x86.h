// x86 matmul kernels, compiled once per ISA: kernels_avx2.cpp and kernels_avx512.cpp include
// this after `#pragma GCC target(...)`, with EMBER_X86_VNNI (0/1), EMBER_X86_ROWS (rows per
// prefill tile) and EMBER_X86_NS (the namespace) defined. Everything here has internal
// linkage and uses no std:: templates: an inline function shared between the ISA files could
// be linked from the wrong file and fault on an older CPU.
//
// Scheme: weights are unpacked per 32-element sub-block to bytes (unsigned quants with a
// per-block "min" term, or signed quants), dotted with int8 activations into 8 int32 lanes,
// converted and scaled by (weight scale * activation scale) into float lane accumulators.
// Min terms (x = d*q - min) are applied once per group of 8 sub-blocks as a vector product of
// the group's mins with the activation block sums. A tile is R rows x T tokens, so every
// unpacked weight sub-block is reused T times and every activation block R times.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "cpu/kernels.h"

namespace ember::cpu::EMBER_X86_NS {
namespace {

inline int64_t min64(int64_t a, int64_t b) {
    return a < b ? a : b;
}

inline __m256i load32(const void* p) {
    return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}
inline __m128i load16(const void* p) {
    return _mm_loadu_si128(static_cast<const __m128i*>(p));
}

// Sums of 4 adjacent u8*s8 products in 8 int32 lanes: lanes 0-3 cover bytes 0-15.
inline __m256i dot_u8s8(__m256i u, __m256i s) {
#if EMBER_X86_VNNI
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
#else
    // maddubs saturates at 16 bits; |u| <= 128 and |s| <= 127 keep pairs below 32767.
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
#endif
}
// Signed weights: move the sign onto the activations so the weights become unsigned.
inline __m256i dot_s8s8(__m256i w, __m256i a) {
    return dot_u8s8(_mm256_sign_epi8(w, w), _mm256_sign_epi8(a, w));
}

inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// 16 bytes of nibbles -> 32 bytes: low nibbles are elements 0-15, high ones 16-31.
inline __m256i nibbles_split(const uint8_t* p) {
    const __m128i v = load16(p), m = _mm_set1_epi8(0x0F);
    return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), m), _mm_and_si128(v, m));
}
#if EMBER_X86_VNNI
// Two blocks' 16 nibble bytes -> [a low, a high, b low, b high] nibbles in one vector.
inline __m512i nibbles_split2(const uint8_t* a, const uint8_t* b) {
    __m256i ab = _mm256_inserti128_si256(_mm256_castsi128_si256(load16(a)), load16(b), 1);
    __m512i v = _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 1, 0, 1, 2, 3, 2, 3),
                                         _mm512_castsi256_si512(ab));
    v = _mm512_mask_srli_epi16(v, 0xFF00FF00u, v, 4);  // words of 128-bit lanes 1 and 3
    return _mm512_and_si512(v, _mm512_set1_epi8(0x0F));
}
// 32 nibble bytes -> [low nibbles, high nibbles].
inline __m512i nibbles_both(const uint8_t* p) {
    __m512i v = _mm512_broadcast_i64x4(load32(p));
    v = _mm512_mask_srli_epi16(v, 0xFFFF0000u, v, 4);
    return _mm512_and_si512(v, _mm512_set1_epi8(0x0F));
}
#endif
// 32 bytes of nibbles -> the low (hi == false) or high nibbles.
inline __m256i nibbles(const uint8_t* p, bool hi) {
    __m256i v = load32(p);
    if (hi) v = _mm256_srli_epi16(v, 4);
    return _mm256_and_si256(v, _mm256_set1_epi8(0x0F));
}
// Bit i of `bits` -> byte i = 0x10 if set, else 0.
inline __m256i bits_to_0x10(uint32_t bits) {
    const __m256i shuf = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2,
                                          2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_set1_epi64x(0x8040201008040201ll);
    __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32(int(bits)), shuf);
    v = _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
    return _mm256_and_si256(v, _mm256_set1_epi8(0x10));
}

// fp16 fields of up to 8 consecutive blocks (zeros past n) as floats.
template <class B, class Get>
inline __m256 block_halfs(const B* b, int n, Get get) {
    if (n == 8) {  // the common case, kept in registers
        return _mm256_cvtph_ps(_mm_setr_epi16(short(get(b[0])), short(get(b[1])), short(get(b[2])),
                                              short(get(b[3])), short(get(b[4])), short(get(b[5])),
                                              short(get(b[6])), short(get(b[7]))));
    }
    alignas(16) uint16_t h[8] = {};
    for (int j = 0; j < n; ++j) h[j] = get(b[j]);
    return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(h)));
}

// ---- weight decoders: header() reads a group (8 sub-blocks of 32), unpack(j)/scale(j) give
// sub-block j's quants and per-lane scale; mins holds the group's per-sub-block min terms ----

struct DecQ4_0 {
    static constexpr bool kSigned = false, kMins = true;
    static constexpr int kScaleLanes = 8, kOffset = 0;
    static constexpr int kGroupBytes = 8 * sizeof(BlockQ4_0);
    const BlockQ4_0* b;
    alignas(32) float ds[8];
    __m256 mins;
    void header(const uint8_t* p, int n) {
        b = reinterpret_cast<const BlockQ4_0*>(p);
        __m256 d = block_halfs(b, n, [](const BlockQ4_0& x) { return x.d; });
        _mm256_store_ps(ds, d);
        mins = _mm256_mul_ps(d, _mm256_set1_ps(8));  // x = d*q - 8d
    }
    __m256 scale(int j) const { return _mm256_broadcast_ss(&ds[j]); }
    __m256i unpack(int j) const { return nibbles_split(b[j].qs); }
#if EMBER_X86_VNNI
    __m512i unpack2(int j) const {
        return nibbles_split2(b[j].qs, b[j + 1].qs);
    }
#endif
};

struct DecQ4_1 {
    static constexpr bool kSigned = false, kMins = true;
    static constexpr int kScaleLanes = 8, kOffset = 0;
    static constexpr int kGroupBytes = 8 * sizeof(BlockQ4_1);
    const BlockQ4_1* b;
    alignas(32) float ds[8];
    __m256 mins;
    void header(const uint8_t* p, int n) {
        b = reinterpret_cast<const BlockQ4_1*>(p);
        _mm256_store_ps(ds, block_halfs(b, n, [](const BlockQ4_1& x) { return x.d; }));
        __m256 m = block_halfs(b, n, [](const BlockQ4_1& x) { return x.m; });
        mins = _mm256_sub_ps(_mm256_setzero_ps(), m);  // x = d*q + m
    }
    __m256 scale(int j) const { return _mm256_broadcast_ss(&ds[j]); }
    __m256i unpack(int j) const { return nibbles_split(b[j].qs); }
#if EMBER_X86_VNNI
    __m512i unpack2(int j) const {
        return nibbles_split2(b[j].qs, b[j + 1].qs);
    }
#endif
};

struct DecQ5_0 {
    static constexpr bool kSigned = false, kMins = true;
    static constexpr int kScaleLanes = 8, kOffset = 0;
    static constexpr int kGroupBytes = 8 * sizeof(BlockQ5_0);
    const BlockQ5_0* b;
    alignas(32) float ds[8];
    __m256 mins;
    void header(const uint8_t* p, int n) {
        b = reinterpret_cast<const BlockQ5_0*>(p);
        __m256 d = block_halfs(b, n, [](const BlockQ5_0& x) { return x.d; });
        _mm256_store_ps(ds, d);
        mins = _mm256_mul_ps(d, _mm256_set1_ps(16));  // x = d*q - 16d
    }
    __m256 scale(int j) const { return _mm256_broadcast_ss(&ds[j]); }
    __m256i unpack(int j) const {
        uint32_t qh;
        std::memcpy(&qh, b[j].qh, 4);
        return _mm256_or_si256(nibbles_split(b[j].qs), bits_to_0x10(qh));
    }
};

struct DecQ5_1 {
    static constexpr bool kSigned = false, kMins = true;
    static constexpr int kScaleLanes = 8, kOffset = 0;
    static constexpr int kGroupBytes = 8 * sizeof(BlockQ5_1);
    const BlockQ5_1* b;
    alignas(32) float ds[8];
    __m256 mins;
    void header(const uint8_t* p, int n) {
        b = reinterpret_cast<const BlockQ5_1*>(p);
        _mm256_store_ps(ds, block_halfs(b, n, [](const BlockQ5_1& x) { return x.d; }));
        __m256 m = block_halfs(b, n, [](const BlockQ5_1& x) { return x.m; });
        mins = _mm256_sub_ps(_mm256_setzero_ps(), m);
    }
    __m256 scale(int j) const { return _mm256_broadcast_ss(&ds[j]); }
    __m256i unpack(int j) const {
        uint32_t qh;
        std::memcpy(&qh, b[j].qh, 4);
        return _mm256_or_si256(nibbles_split(b[j].qs), bits_to_0x10(qh));
    }
};

struct DecQ8_0 {
    static constexpr bool kSigned = true, kMins = false;
    static constexpr int kScaleLanes = 8, kOffset = 128;  // unpack_u(j) - kOffset = unpack(j)
    static constexpr int kGroupBytes = 8 * sizeof(BlockQ8_0);
    const BlockQ8_0* b;
    alignas(32) float ds[8];
    __m256 mins;
    void header(const uint8_t* p, int n) {
        b = reinterpret_cast<const BlockQ8_0*>(p);
        _mm256_store_ps(ds, block_halfs(b, n, [](const BlockQ8_0& x) { return x.d; }));
    }
    __m256 scale(int j) const { return _mm256_broadcast_ss(&ds[j]); }
    __m256i unpack(int j) const { return load32(b[j].qs); }
    __m256i unpack_u(int j) const {
        return _mm256_xor_si256(load32(b[j].qs), _mm256_set1_epi8(char(0x80)));
    }
};

// Q4_K/Q5_K's 12 scale bytes -> 8 six-bit scales (sc) and mins (m), as bytes.
inline void k4_scales(const uint8_t* q, uint8_t* sc, uint8_t* m) {
    uint32_t a, b, c;
    std::memcpy(&a, q, 4);
    std::memcpy(&b, q + 4, 4);
    std::memcpy(&c, q + 8, 4);
    // Sub-blocks 0-3 keep their 6 bits in a (scales) and b (mins); sub-blocks 4-7 have their
    // low 4 bits in c's nibbles and their top 2 bits in the top bits of a and b.
    uint32_t s_lo = a & 0x3F3F3F3Fu, m_lo = b & 0x3F3F3F3Fu;
    uint32_t s_hi = (c & 0x0F0F0F0Fu) | (((a >> 6) & 0x03030303u) << 4);
    uint32_t m_hi = ((c >> 4) & 0x0F0F0F0Fu) | (((b >> 6) & 0x03030303u) << 4);
    std::memcpy(sc, &s_lo, 4);
    std::memcpy(sc + 4, &s_hi, 4);
    std::memcpy(m, &m_lo, 4);
    std::memcpy(m + 4, &m_hi, 4);
}

inline __m256 u8x8_to_ps(const uint8_t* p) {
    return _mm256_cvtepi32_ps(
        _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}

template <class B>
struct DecK4Base {
    static constexpr bool kSigned = false, kMins = true;
    static constexpr int kScaleLanes = 8, kOffset = 0;
    static constexpr int kGroupBytes = sizeof(B);
    const B* b;
    alignas(32) float ds[8];
    __m256 mins;
    void header(const uint8_t* p, int) {
        b = reinterpret_cast<const B*>(p);
        alignas(8) uint8_t sc[8], m[8];
        k4_scales(b->scales, sc, m);
        _mm256_store_ps(ds, _mm256_mul_ps(u8x8_to_ps(sc), _mm256_set1_ps(_cvtsh_ss(b->d))));
        mins = _mm256_mul_ps(u8x8_to_ps(m), _mm256_set1_ps(_cvtsh_ss(b->dmin)));
    }
    __m256 scale(int j) const { return _mm256_broadcast_ss(&ds[j]); }
};

struct DecQ4_K : DecK4Base<BlockQ4_K> {
    __m256i unpack(int j) const { return nibbles(b->qs + 32 * (j / 2), j & 1); }
#if EMBER_X86_VNNI
    __m512i unpack2(int j) const {
        return nibbles_both(b->qs + 32 * (j / 2));
    }  // j even
#endif
};

struct DecQ5_K : DecK4Base<BlockQ5_K> {
    __m256i unpack(int j) const {
        __m256i lo = nibbles(b->qs + 32 * (j / 2), j & 1);
        __m256i h = _mm256_srl_epi16(load32(b->qh), _mm_cvtsi32_si128(j));
        h = _mm256_slli_epi16(_mm256_and_si256(h, _mm256_set1_epi8(1)), 4);
        return _mm256_or_si256(lo, h);
    }
};

struct DecQ6_K {
    static constexpr bool kSigned = true, kMins = false;
    static constexpr int kScaleLanes = 4, kOffset = 32;
    static constexpr int kGroupBytes = sizeof(BlockQ6_K);
    const BlockQ6_K* b;
    alignas(32) float ds[16];  // d * scale of each 16-element half
    __m256 mins;
    void header(const uint8_t* p, int) {
        b = reinterpret_cast<const BlockQ6_K*>(p);
        const __m256 d = _mm256_set1_ps(_cvtsh_ss(b->d));
        const __m128i s = load16(b->scales);
        _mm256_store_ps(ds, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(s))));
        _mm256_store_ps(
            ds + 8,
            _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(s, 8)))));
    }
    // Lanes 0-3 hold bytes 0-15 (first half), lanes 4-7 the second half.
    __m256 scale(int j) const {
        return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_broadcast_ss(&ds[2 * j])),
                                    _mm_broadcast_ss(&ds[2 * j + 1]), 1);
    }
    // Sub-block j = 4n + k: low bits from ql's (k & 1 ? second : first) 32 bytes of half n,
    // (k >= 2 ? high : low) nibbles; top 2 bits from qh's bits 2k of half n.
    __m256i unpack_u(int j) const {
        const int n = j / 4, k = j % 4;
        __m256i lo = nibbles(b->ql + 64 * n + 32 * (k & 1), k >= 2);
        __m256i h = _mm256_srl_epi16(load32(b->qh + 32 * n), _mm_cvtsi32_si128(2 * k));
        h = _mm256_slli_epi16(_mm256_and_si256(h, _mm256_set1_epi8(3)), 4);
        return _mm256_or_si256(lo, h);
    }
    __m256i unpack(int j) const { return _mm256_sub_epi8(unpack_u(j), _mm256_set1_epi8(32)); }
};

// ---- quantized tiles ----

template <class D, int R, int T>
void qtile(const WeightView& w, int64_t r0, const ActQ8& a, int t0, float* y) {
    const int64_t nb = w.cols / 32;
    const int64_t ng = (nb + 7) / 8;
    __m256 acc[R][T];
    for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
    const int8_t* aq[T];
    const float* ad[T];
    const float* as[T];
    for (int t = 0; t < T; ++t) {
        aq[t] = a.qs(t0 + t);
        ad[t] = a.d(t0 + t);
        as[t] = a.s(t0 + t);
    }
    D dec[R];
    for (int64_t g = 0; g < ng; ++g) {
        const int nsub = int(min64(8, nb - 8 * g));
        for (int r = 0; r < R; ++r)
            dec[r].header(w.data + (r0 + r) * w.row_stride + g * D::kGroupBytes, nsub);
        for (int j = 0; j < nsub; ++j) {
            const int64_t blk = 8 * g + j;
            __m256i wq[R];
            __m256 ws[R];
            for (int r = 0; r < R; ++r) {
                wq[r] = dec[r].unpack(j);
                ws[r] = dec[r].scale(j);
            }
            for (int t = 0; t < T; ++t) {
                const __m256i av = load32(aq[t] + blk * 32);
                const __m256 da = _mm256_broadcast_ss(ad[t] + blk);
                for (int r = 0; r < R; ++r) {
                    __m256i id = D::kSigned ? dot_s8s8(wq[r], av) : dot_u8s8(wq[r], av);
                    acc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(id), _mm256_mul_ps(ws[r], da),
                                                acc[r][t]);
                }
            }
        }
        if constexpr (D::kMins) {
            for (int t = 0; t < T; ++t) {
                const __m256 sv = _mm256_loadu_ps(as[t] + 8 * g);
                for (int r = 0; r < R; ++r)
                    acc[r][t] = _mm256_fnmadd_ps(dec[r].mins, sv, acc[r][t]);
            }
        }
    }
    for (int t = 0; t < T; ++t)
        for (int r = 0; r < R; ++r) y[(t0 + t) * w.rows + r0 + r] = hsum(acc[r][t]);
}

#if EMBER_X86_VNNI
// The same computation on 512-bit vectors: two sub-blocks per instruction. Signed weights
// are fed to vpdpbusd as unsigned (q + offset) with -offset * sum(a) preloaded into the
// accumulator, since AVX-512 has no byte sign instruction.
inline __m512 lanes_scale(const float* p, int lanes) {
    if (lanes == 8) {  // [p0 x8, p1 x8]
        const __m512i idx = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
        __m128 v = _mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double*>(p)));
        return _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(v));
    }
    const __m512i idx = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    return _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(_mm_loadu_ps(p)));
}

template <class D>
inline __m512i unpack_pair(const D& d, int j, bool has_second) {
    if constexpr (requires { d.unpack2(j); }) {
        if (has_second) return d.unpack2(j);
    }
    __m256i lo, hi = _mm256_setzero_si256();
    if constexpr (D::kSigned) {
        lo = d.unpack_u(j);
        if (has_second) hi = d.unpack_u(j + 1);
    } else {
        lo = d.unpack(j);
        if (has_second) hi = d.unpack(j + 1);
    }
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

constexpr int kPrefetchBytes = 1024;

template <class D, int R, int T>
void qtile512(const WeightView& w, int64_t r0, const ActQ8& a, int t0, float* y) {
    const int64_t nb = w.cols / 32;
    const int64_t ng = (nb + 7) / 8;
    __m512 acc[R][T];
    for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
    const int8_t* aq[T];
    const float* ad[T];
    const float* as[T];
    for (int t = 0; t < T; ++t) {
        aq[t] = a.qs(t0 + t);
        ad[t] = a.d(t0 + t);
        as[t] = a.s(t0 + t);
    }
    const int scale_step = D::kScaleLanes == 8 ? 1 : 2;
    D dec[R];
    for (int64_t g = 0; g < ng; ++g) {
        const int nsub = int(min64(8, nb - 8 * g));
        for (int r = 0; r < R; ++r) {
            const uint8_t* p = w.data + (r0 + r) * w.row_stride + g * D::kGroupBytes;
            // R rows stream at once; help the prefetchers keep that many streams ahead.
            for (int o = 0; o < D::kGroupBytes; o += 64)
                _mm_prefetch(reinterpret_cast<const char*>(p + kPrefetchBytes + o), _MM_HINT_T0);
            dec[r].header(p, nsub);
        }
        for (int j = 0; j < nsub; j += 2) {
            const int64_t blk = 8 * g + j;
            __m512i wq[R];
            __m512 ws[R];
            for (int r = 0; r < R; ++r) {
                wq[r] = unpack_pair(dec[r], j, j + 1 < nsub);
                ws[r] = lanes_scale(dec[r].ds + scale_step * j, D::kScaleLanes);
            }
            for (int t = 0; t < T; ++t) {
                // A missing second sub-block reads padding: its activation scale is 0.
                const __m512i av = _mm512_loadu_si512(aq[t] + blk * 32);
                const __m512 da = lanes_scale(ad[t] + blk, 8);
                __m512i init = _mm512_setzero_si512();
                if constexpr (D::kSigned)
                    init = _mm512_sub_epi32(
                        init, _mm512_dpbusd_epi32(init, _mm512_set1_epi8(char(D::kOffset)), av));
                for (int r = 0; r < R; ++r) {
                    __m512i id = _mm512_dpbusd_epi32(init, wq[r], av);
                    acc[r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(id), _mm512_mul_ps(ws[r], da),
                                                acc[r][t]);
                }
            }
        }
        if constexpr (D::kMins) {
            for (int t = 0; t < T; ++t) {
                const __m512 sv = _mm512_zextps256_ps512(_mm256_loadu_ps(as[t] + 8 * g));
                for (int r = 0; r < R; ++r)
                    acc[r][t] =
                        _mm512_fnmadd_ps(_mm512_zextps256_ps512(dec[r].mins), sv, acc[r][t]);
            }
        }
    }
    for (int t = 0; t < T; ++t)
        for (int r = 0; r < R; ++r) y[(t0 + t) * w.rows + r0 + r] = _mm512_reduce_add_ps(acc[r][t]);
}
#define EMBER_QTILE qtile512
#else
#define EMBER_QTILE qtile
#endif

template <class D, int R, int T>
void qrows_tokens(const WeightView& w, int64_t r0, int64_t r1, const ActQ8& a, int t0, float* y) {
    int64_t r = r0;
    for (; r + R <= r1; r += R) EMBER_QTILE<D, R, T>(w, r, a, t0, y);
    for (; r < r1; ++r) EMBER_QTILE<D, 1, T>(w, r, a, t0, y);
}

template <class D>
void qrows(const WeightView& w, int64_t r0, int64_t r1, const ActQ8& a, int n_tokens, float* y) {
    if (n_tokens == 1) return qrows_tokens<D, 4, 1>(w, r0, r1, a, 0, y);
    constexpr int R = EMBER_X86_ROWS, T = 4;
    int t = 0;
    for (; t + T <= n_tokens; t += T) qrows_tokens<D, R, T>(w, r0, r1, a, t, y);
    switch (n_tokens - t) {
        case 3:
            return qrows_tokens<D, R, 3>(w, r0, r1, a, t, y);
        case 2:
            return qrows_tokens<D, R, 2>(w, r0, r1, a, t, y);
        case 1:
            return qrows_tokens<D, R, 1>(w, r0, r1, a, t, y);
        default:
            return;
    }
}

void quant_rows(const WeightView& w, int64_t r0, int64_t r1, const ActQ8& a, int n_tokens,
                float* y) {
    switch (w.type) {
        case GgmlType::Q4_0:
            return qrows<DecQ4_0>(w, r0, r1, a, n_tokens, y);
        case GgmlType::Q4_1:
            return qrows<DecQ4_1>(w, r0, r1, a, n_tokens, y);
        case GgmlType::Q5_0:
            return qrows<DecQ5_0>(w, r0, r1, a, n_tokens, y);
        case GgmlType::Q5_1:
            return qrows<DecQ5_1>(w, r0, r1, a, n_tokens, y);
        case GgmlType::Q8_0:
            return qrows<DecQ8_0>(w, r0, r1, a, n_tokens, y);
        case GgmlType::Q4_K:
            return qrows<DecQ4_K>(w, r0, r1, a, n_tokens, y);
        case GgmlType::Q5_K:
            return qrows<DecQ5_K>(w, r0, r1, a, n_tokens, y);
        case GgmlType::Q6_K:
            return qrows<DecQ6_K>(w, r0, r1, a, n_tokens, y);
        default:
            return;  // matmul only routes supported quantized types here
    }
}

// ---- float weights ----

struct LoadF32 {
    static __m256 load8(const uint8_t* row, int64_t c) {
        return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + c);
    }
    static float load1(const uint8_t* row, int64_t c) {
        float v;
        std::memcpy(&v, row + 4 * c, 4);
        return v;
    }
};
struct LoadF16 {
    static __m256 load8(const uint8_t* row, int64_t c) {
        return _mm256_cvtph_ps(load16(row + 2 * c));
    }
    static float load1(const uint8_t* row, int64_t c) {
        uint16_t h;
        std::memcpy(&h, row + 2 * c, 2);
        return _cvtsh_ss(h);
    }
};
struct LoadBF16 {
    static __m256 load8(const uint8_t* row, int64_t c) {
        __m256i v = _mm256_cvtepu16_epi32(load16(row + 2 * c));
        return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
    }
    static float load1(const uint8_t* row, int64_t c) {
        uint16_t h;
        std::memcpy(&h, row + 2 * c, 2);
        uint32_t u = uint32_t(h) << 16;
        float v;
        std::memcpy(&v, &u, 4);
        return v;
    }
};

template <class L, int R, int T>
void ftile(const WeightView& w, int64_t r0, const float* x, int t0, float* y) {
    const uint8_t* row[R];
    for (int r = 0; r < R; ++r) row[r] = w.data + (r0 + r) * w.row_stride;
    const float* xt[T];
    for (int t = 0; t < T; ++t) xt[t] = x + (t0 + t) * w.cols;
    __m256 acc[R][T];
    for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
    int64_t c = 0;
    for (; c + 8 <= w.cols; c += 8) {
        __m256 wv[R];
        for (int r = 0; r < R; ++r) wv[r] = L::load8(row[r], c);
        for (int t = 0; t < T; ++t) {
            const __m256 xv = _mm256_loadu_ps(xt[t] + c);
            for (int r = 0; r < R; ++r) acc[r][t] = _mm256_fmadd_ps(wv[r], xv, acc[r][t]);
        }
    }
    for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) {
            float sum = hsum(acc[r][t]);
            for (int64_t k = c; k < w.cols; ++k) sum += L::load1(row[r], k) * xt[t][k];
            y[(t0 + t) * w.rows + r0 + r] = sum;
        }
}

template <class L, int R, int T>
void frows_tokens(const WeightView& w, int64_t r0, int64_t r1, const float* x, int t0, float* y) {
    int64_t r = r0;
    for (; r + R <= r1; r += R) ftile<L, R, T>(w, r, x, t0, y);
    for (; r < r1; ++r) ftile<L, 1, T>(w, r, x, t0, y);
}

template <class L>
void frows(const WeightView& w, int64_t r0, int64_t r1, const float* x, int n_tokens, float* y) {
    if (n_tokens == 1) return frows_tokens<L, 4, 1>(w, r0, r1, x, 0, y);
    constexpr int R = EMBER_X86_ROWS, T = 4;
    int t = 0;
    for (; t + T <= n_tokens; t += T) frows_tokens<L, R, T>(w, r0, r1, x, t, y);
    switch (n_tokens - t) {
        case 3:
            return frows_tokens<L, R, 3>(w, r0, r1, x, t, y);
        case 2:
            return frows_tokens<L, R, 2>(w, r0, r1, x, t, y);
        case 1:
            return frows_tokens<L, R, 1>(w, r0, r1, x, t, y);
        default:
            return;
    }
}

void float_rows(const WeightView& w, int64_t r0, int64_t r1, const float* x, int n_tokens,
                float* y) {
    switch (w.type) {
        case GgmlType::F32:
            return frows<LoadF32>(w, r0, r1, x, n_tokens, y);
        case GgmlType::F16:
            return frows<LoadF16>(w, r0, r1, x, n_tokens, y);
        case GgmlType::BF16:
            return frows<LoadBF16>(w, r0, r1, x, n_tokens, y);
        default:
            return;
    }
}

// ---- float helpers for attention and the FFN ----

float dot(const float* a, const float* b, int n) {
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
    }
    for (; i + 8 <= n; i += 8)
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    float s = hsum(_mm256_add_ps(s0, s1));
    for (; i < n; ++i) s += a[i] * b[i];
    return s;
}

void axpy(float a, const float* x, float* y, int n) {
    const __m256 av = _mm256_set1_ps(a);
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i,
                         _mm256_fmadd_ps(av, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    for (; i < n; ++i) y[i] += a * x[i];
}

// e^x to about 2 ulp (Cephes' expf polynomial after range reduction by ln 2).
inline __m256 exp_ps(__m256 x) {
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.3f));
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500E-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507E-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073E-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894E-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459E-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201E-1f));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    const __m256i e =
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

// x / (1 + e^-u): x sigmoid(u), the gates' shared form (u = x: SiLU).
inline __m256 x_sigmoid(__m256 x, __m256 u) {
    return _mm256_div_ps(
        x, _mm256_add_ps(_mm256_set1_ps(1.0f), exp_ps(_mm256_sub_ps(_mm256_setzero_ps(), u))));
}

void silu_mul(const float* gate, const float* up, float* out, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 g = _mm256_loadu_ps(gate + i);
        _mm256_storeu_ps(out + i, _mm256_mul_ps(x_sigmoid(g, g), _mm256_loadu_ps(up + i)));
    }
    for (; i < n; ++i) {
        const float g = gate[i];
        out[i] = g / (1.0f + __builtin_expf(-g)) * up[i];
    }
}

// out[i] = gelu_tanh(gate[i]) * up[i]: 0.5 x (1 + tanh(z)) is x sigmoid(2z), with
// z = sqrt(2/pi) (x + 0.044715 x^3).
void gelu_tanh_mul(const float* gate, const float* up, float* out, int n) {
    constexpr float k2 = 2.0f * 0.7978845608028654f, c = 0.044715f;
    int i = 0;
    const __m256 k2v = _mm256_set1_ps(k2), cv = _mm256_set1_ps(c);
    for (; i + 8 <= n; i += 8) {
        const __m256 x = _mm256_loadu_ps(gate + i);
        const __m256 x3 = _mm256_mul_ps(_mm256_mul_ps(x, x), x);
        const __m256 u = _mm256_mul_ps(k2v, _mm256_fmadd_ps(cv, x3, x));
        _mm256_storeu_ps(out + i, _mm256_mul_ps(x_sigmoid(x, u), _mm256_loadu_ps(up + i)));
    }
    for (; i < n; ++i) {
        const float x = gate[i];
        out[i] = x / (1.0f + __builtin_expf(-k2 * (x + c * x * x * x))) * up[i];
    }
}

// x[i] = cap tanh(x[i] / cap), with tanh(y) = 2 sigmoid(2y) - 1 (the clamp in exp_ps gives
// +-cap far out).
void softcap(float* x, int n, float cap) {
    const __m256 k = _mm256_set1_ps(2.0f / cap), c = _mm256_set1_ps(cap),
                 c2 = _mm256_set1_ps(2.0f * cap), one = _mm256_set1_ps(1.0f);
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 s = x_sigmoid(one, _mm256_mul_ps(k, _mm256_loadu_ps(x + i)));
        _mm256_storeu_ps(x + i, _mm256_fmsub_ps(c2, s, c));
    }
    for (; i < n; ++i) x[i] = cap * __builtin_tanhf(x[i] / cap);
}

// ---- activation quantization (matches quantize_act_scalar bit for bit) ----

void quantize_act(const float* x, int64_t cols, int8_t* qs, float* d, float* s) {
    const int64_t nb = cols / 32;
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (int64_t b = 0; b < nb; ++b) {
        const float* xb = x + 32 * b;
        __m256 v[4];
        for (int k = 0; k < 4; ++k) v[k] = _mm256_loadu_ps(xb + 8 * k);
        __m256 m = _mm256_max_ps(
            _mm256_max_ps(_mm256_and_ps(v[0], abs_mask), _mm256_and_ps(v[1], abs_mask)),
            _mm256_max_ps(_mm256_and_ps(v[2], abs_mask), _mm256_and_ps(v[3], abs_mask)));
        __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
        m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
        const float scale = _mm_cvtss_f32(m4) / 127;
        const __m256 inv = _mm256_set1_ps(scale > 0 ? 1 / scale : 0);
        __m256i q[4];
        for (int k = 0; k < 4; ++k) q[k] = _mm256_cvtps_epi32(_mm256_mul_ps(v[k], inv));
        __m256i sum = _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]));
        __m256i p =
            _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs + 32 * b),
                            _mm256_permutevar8x32_epi32(p, order));
        __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(sum), _mm256_extracti128_si256(sum, 1));
        s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4E));
        s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xB1));
        d[b] = scale;
        s[b] = scale * float(_mm_cvtsi128_si32(s4));
    }
    const int64_t nb_pad = (nb + 7) / 8 * 8;
    for (int64_t b = nb; b < nb_pad; ++b) d[b] = s[b] = 0;
}

}  // namespace
}  // namespace ember::cpu::EMBER_X86_NS
