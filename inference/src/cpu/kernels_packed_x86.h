// Kernels for Packed Q4_0/Q8_0 weights (layout in pack.cpp, activations as ActPacked in
// kernels.h), for AVX-512 VNNI and, below, for AVX2. Included by kernels_avx512.cpp and
// kernels_avx2.cpp inside their target pragmas.
//
// Per group of 16 blocks, each 64-byte load of a row's quants holds 4 bytes of every block
// and the matching activation vector likewise, so vpdpbusd accumulates block k's integer dot
// product in int32 lane k: 8 of them finish the group, which is then converted once and
// scaled per lane: acc += w_scale * (a_scale * dot - offset * a_scale * sum(a)), the last
// term removing the unsigned offset the weights are read with (q + 8 for Q4_0, the sign bit
// flipped, i.e. q + 128, for Q8_0). A tile is R rows x T tokens: each weight vector is reused
// T times and each activation vector R times.
#pragma once

#include "cpu/kernels_x86.h"  // needs the same EMBER_X86_* macros

namespace ember::cpu::EMBER_X86_NS {
namespace {

// What one tile of R rows x T tokens reads: each row's quants and scales, each token's packed
// activations, their scales and offset terms (both ISAs' ptile below).
template <int R, int T>
struct TileInputs {
    const uint8_t* q[R];
    const uint16_t* sc[R];
    const int8_t* aq[T];
    const float* adx[T];
    const float* aso[T];
    TileInputs(const WeightView& w, int64_t r0, const ActPacked& a, int t0) {
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            q[r] = packed_qs(w, r0 + r);
            sc[r] = packed_scales(w, r0 + r);
        }
#pragma GCC unroll 8
        for (int t = 0; t < T; ++t) {
            aq[t] = a.qs(t0 + t);
            adx[t] = a.dx(t0 + t);
            aso[t] = a.soff(t0 + t);
        }
    }
    // The rows' quants (quant_bytes per block) and the tokens' activations of the group of
    // blocks starting at b0.
    void group(int64_t b0, int quant_bytes, const uint8_t* (&qg)[R], const int8_t* (&ag)[T]) const {
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) qg[r] = q[r] + b0 * quant_bytes;
#pragma GCC unroll 8
        for (int t = 0; t < T; ++t) ag[t] = aq[t] + b0 * 32;
    }
};

#if EMBER_X86_VNNI
inline __m512i load_quants(const uint8_t* p, int n) {
    return n == 16 ? _mm512_loadu_si512(p) : _mm512_maskz_loadu_epi8((~0ull) >> (64 - 4 * n), p);
}

struct PackQ4_0 {
    static constexpr int kQuantBytes = 16;  // per block
    // The group's integer dots: n blocks at q[r] against 16 (zero padded) at aq[t].
    template <int R, int T>
    static void dots(const uint8_t* const* q, int n, int64_t pf, const int8_t* const* aq,
                     __m512i (&id)[R][T]) {
        const __m512i mask = _mm512_set1_epi8(0x0F);
#pragma GCC unroll 8
        for (int j = 0; j < 4; ++j) {
            __m512i lo[R], hi[R];  // elements 4j.. and 16+4j.. of every block
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                const uint8_t* p = q[r] + 4 * n * j;
                _mm_prefetch(reinterpret_cast<const char*>(p + pf), _MM_HINT_T0);
                const __m512i v = load_quants(p, n);
                lo[r] = _mm512_and_si512(v, mask);
                hi[r] = _mm512_and_si512(_mm512_srli_epi16(v, 4), mask);
            }
#pragma GCC unroll 8
            for (int t = 0; t < T; ++t) {
                const __m512i al = _mm512_load_si512(aq[t] + 64 * j);
                const __m512i ah = _mm512_load_si512(aq[t] + 64 * (j + 4));
#pragma GCC unroll 8
                for (int r = 0; r < R; ++r) {
                    id[r][t] = _mm512_dpbusd_epi32(id[r][t], lo[r], al);
                    id[r][t] = _mm512_dpbusd_epi32(id[r][t], hi[r], ah);
                }
            }
        }
    }
};

struct PackQ8_0 {
    static constexpr int kQuantBytes = 32;
    template <int R, int T>
    static void dots(const uint8_t* const* q, int n, int64_t pf, const int8_t* const* aq,
                     __m512i (&id)[R][T]) {
        // Padding lanes become 0x80 after the flip; their activations are zero.
        const __m512i flip = _mm512_set1_epi8(char(0x80));
#pragma GCC unroll 8
        for (int j = 0; j < 8; ++j) {
            __m512i wq[R];
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                const uint8_t* p = q[r] + 4 * n * j;
                _mm_prefetch(reinterpret_cast<const char*>(p + pf), _MM_HINT_T0);
                wq[r] = _mm512_xor_si512(load_quants(p, n), flip);
            }
#pragma GCC unroll 8
            for (int t = 0; t < T; ++t) {
                const __m512i a = _mm512_load_si512(aq[t] + 64 * j);
#pragma GCC unroll 8
                for (int r = 0; r < R; ++r) id[r][t] = _mm512_dpbusd_epi32(id[r][t], wq[r], a);
            }
        }
    }
};

template <class P, int R, int T>
void ptile(const WeightView& w, int64_t r0, const ActPacked& a, int t0, float* y) {
    const int64_t nb = w.cols / 32;
    const TileInputs<R, T> in(w, r0, a, t0);
    __m512 acc[R][T];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
        for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
    for (int64_t b0 = 0; b0 < nb; b0 += 16) {
        const int n = int(min64(16, nb - b0));
        const uint8_t* qg[R];
        const int8_t* ag[T];
        in.group(b0, P::kQuantBytes, qg, ag);
        __m512i id[R][T];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
            for (int t = 0; t < T; ++t) id[r][t] = _mm512_setzero_si512();
        // Prefetch the rows of the next tile, which the rows of this one are followed by.
        const int64_t pf = R * nb * P::kQuantBytes;
        if (n == 16)
            P::template dots<R, T>(qg, 16, pf, ag, id);  // constant n: plain loads
        else
            P::template dots<R, T>(qg, n, pf, ag, id);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            const __m256i h =
                n == 16 ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in.sc[r] + b0))
                        : _mm256_maskz_loadu_epi16(__mmask16((1u << n) - 1), in.sc[r] + b0);
            const __m512 dw = _mm512_cvtph_ps(h);
#pragma GCC unroll 8
            for (int t = 0; t < T; ++t) {
                const __m512 v =
                    _mm512_fmsub_ps(_mm512_cvtepi32_ps(id[r][t]), _mm512_load_ps(in.adx[t] + b0),
                                    _mm512_load_ps(in.aso[t] + b0));
                acc[r][t] = _mm512_fmadd_ps(v, dw, acc[r][t]);
            }
        }
    }
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t)
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) y[(t0 + t) * w.rows + r0 + r] = _mm512_reduce_add_ps(acc[r][t]);
}

#else
// AVX2 has no vpdpbusd: a 64-byte unit is taken as two 32-byte halves (blocks 0-7 and 8-15 of
// the group), and vpmaddubsw + vpmaddwd form each block's dot in its int32 lane. Q4_0 reads
// the nibbles unsigned (offset 8, as above) and sums the 4 units' byte pairs in 16 bits first
// (8 pairs of at most 15 * 128 each stay below 32767). Q8_0 uses the sign trick instead of an
// offset (|w| against a * sign(w): pairs of at most 128 * 127 * 2 stay below 32767), so its
// activations are packed with offset 0 (KernelSet::packed_q8_offset).

// The half h of unit bytes at p of a group of n blocks (n < 16: only its blocks, rest zero).
inline __m256i load_half(const uint8_t* p, int n, int h) {
    const int nh = n - 8 * h;
    if (nh >= 8) return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32 * h));
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(nh), lane);
    return _mm256_maskload_epi32(reinterpret_cast<const int*>(p + 32 * h), m);
}

struct PackQ4_0 {
    static constexpr int kQuantBytes = 16;
    template <int R, int T>
    static void dots(const uint8_t* const* q, int n, int h, int64_t pf, const int8_t* const* aq,
                     __m256i (&id)[R][T]) {
        const __m256i mask = _mm256_set1_epi8(0x0F);
        __m256i s16[R][T];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
            for (int t = 0; t < T; ++t) s16[r][t] = _mm256_setzero_si256();
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) {
            __m256i lo[R], hi[R];
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                const uint8_t* p = q[r] + 4 * n * j;
                _mm_prefetch(reinterpret_cast<const char*>(p + 32 * h + pf), _MM_HINT_T0);
                const __m256i v = load_half(p, n, h);
                lo[r] = _mm256_and_si256(v, mask);
                hi[r] = _mm256_and_si256(_mm256_srli_epi16(v, 4), mask);
            }
#pragma GCC unroll 8
            for (int t = 0; t < T; ++t) {
                const __m256i al =
                    _mm256_load_si256(reinterpret_cast<const __m256i*>(aq[t] + 64 * j + 32 * h));
                const __m256i ah = _mm256_load_si256(
                    reinterpret_cast<const __m256i*>(aq[t] + 64 * (j + 4) + 32 * h));
#pragma GCC unroll 8
                for (int r = 0; r < R; ++r)
                    s16[r][t] = _mm256_add_epi16(s16[r][t],
                                                 _mm256_add_epi16(_mm256_maddubs_epi16(lo[r], al),
                                                                  _mm256_maddubs_epi16(hi[r], ah)));
            }
        }
        const __m256i ones = _mm256_set1_epi16(1);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
            for (int t = 0; t < T; ++t) id[r][t] = _mm256_madd_epi16(s16[r][t], ones);
    }
};

struct PackQ8_0 {
    static constexpr int kQuantBytes = 32;
    template <int R, int T>
    static void dots(const uint8_t* const* q, int n, int h, int64_t pf, const int8_t* const* aq,
                     __m256i (&id)[R][T]) {
        const __m256i ones = _mm256_set1_epi16(1);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
            for (int t = 0; t < T; ++t) id[r][t] = _mm256_setzero_si256();
#pragma GCC unroll 8
        for (int j = 0; j < 8; ++j) {
            __m256i w[R], aw[R];
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                const uint8_t* p = q[r] + 4 * n * j;
                _mm_prefetch(reinterpret_cast<const char*>(p + 32 * h + pf), _MM_HINT_T0);
                w[r] = load_half(p, n, h);
                aw[r] = _mm256_sign_epi8(w[r], w[r]);  // |w|; -128 reads as 128 unsigned
            }
#pragma GCC unroll 8
            for (int t = 0; t < T; ++t) {
                const __m256i a =
                    _mm256_load_si256(reinterpret_cast<const __m256i*>(aq[t] + 64 * j + 32 * h));
#pragma GCC unroll 8
                for (int r = 0; r < R; ++r) {
                    const __m256i p16 = _mm256_maddubs_epi16(aw[r], _mm256_sign_epi8(a, w[r]));
                    id[r][t] = _mm256_add_epi32(id[r][t], _mm256_madd_epi16(p16, ones));
                }
            }
        }
    }
};

template <class P, int R, int T>
void ptile(const WeightView& w, int64_t r0, const ActPacked& a, int t0, float* y) {
    const int64_t nb = w.cols / 32;
    const TileInputs<R, T> in(w, r0, a, t0);
    __m256 acc[R][T];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
        for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
    const int64_t pf = R * nb * P::kQuantBytes;  // the next tile's rows follow this one's
    for (int64_t b0 = 0; b0 < nb; b0 += 16) {
        const int n = int(min64(16, nb - b0));
        const uint8_t* qg[R];
        const int8_t* ag[T];
        in.group(b0, P::kQuantBytes, qg, ag);
        for (int h = 0; h < 2 && 8 * h < n; ++h) {
            __m256i id[R][T];
            if (n == 16)
                P::template dots<R, T>(qg, 16, h, pf, ag, id);  // constant n: plain loads
            else
                P::template dots<R, T>(qg, n, h, pf, ag, id);
            const int64_t bh = b0 + 8 * h;
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                __m128i hs;
                if (n - 8 * h >= 8) {
                    hs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in.sc[r] + bh));
                } else {  // the row's last blocks: no reading past its scales
                    alignas(16) uint16_t tmp[8] = {};
                    std::memcpy(tmp, in.sc[r] + bh, size_t(n - 8 * h) * 2);
                    hs = _mm_load_si128(reinterpret_cast<const __m128i*>(tmp));
                }
                const __m256 dw = _mm256_cvtph_ps(hs);
#pragma GCC unroll 8
                for (int t = 0; t < T; ++t) {
                    const __m256 v = _mm256_fmsub_ps(_mm256_cvtepi32_ps(id[r][t]),
                                                     _mm256_load_ps(in.adx[t] + bh),
                                                     _mm256_load_ps(in.aso[t] + bh));
                    acc[r][t] = _mm256_fmadd_ps(v, dw, acc[r][t]);
                }
            }
        }
    }
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t)
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) y[(t0 + t) * w.rows + r0 + r] = hsum(acc[r][t]);
}

#endif

template <class P, int R, int T>
void prows_tokens(const WeightView& w, int64_t r0, int64_t r1, const ActPacked& a, int t0,
                  float* y) {
    int64_t r = r0;
    for (; r + R <= r1; r += R) ptile<P, R, T>(w, r, a, t0, y);
    for (; r < r1; ++r) ptile<P, 1, T>(w, r, a, t0, y);
}

template <class P>
void prows(const WeightView& w, int64_t r0, int64_t r1, const ActPacked& a, int n_tokens,
           float* y) {
    // Decode rows per tile. AVX2 (measured on an EPYC, one thread, matrices streamed from
    // DRAM): one row at a time, a single sequential stream with the next row prefetched, reads
    // Q4_0 at 16.7-19 GB/s and Q8_0 at 18.6, against 15-16 and 14-16 with 4 rows. AVX-512 keeps
    // 4: on an AVX-512 Xeon (2 threads, TinyLlama tg32) 4 rows gave Q4_0 37.2 tok/s and Q8_0
    // 20.2 against 33.8 and 19.9 with one.
#ifndef EMBER_PR1
#if EMBER_X86_VNNI
#define EMBER_PR1 4
#else
#define EMBER_PR1 1
#endif
#endif
    if (n_tokens == 1) return prows_tokens<P, EMBER_PR1, 1>(w, r0, r1, a, 0, y);
#ifndef EMBER_PR
#if EMBER_X86_VNNI
#define EMBER_PR 4  // 32 zmm registers
#define EMBER_PT 4
#else
#define EMBER_PR 2  // 16 ymm registers; 2 x 4 measured ahead of 2 x 2, 4 x 2 and 3 x 2
#define EMBER_PT 4
#endif
#endif
    constexpr int R = EMBER_PR, T = EMBER_PT;
    int t = 0;
    for (; t + T <= n_tokens; t += T) prows_tokens<P, R, T>(w, r0, r1, a, t, y);
    // The remaining 1..T-1 tokens one at a time in pairs as far as possible.
    for (; t + 2 <= n_tokens; t += 2) prows_tokens<P, R, 2>(w, r0, r1, a, t, y);
    if (t < n_tokens) prows_tokens<P, R, 1>(w, r0, r1, a, t, y);
}

void packed_rows(const WeightView& w, int64_t r0, int64_t r1, const ActPacked& a, int n_tokens,
                 float* y) {
    if (w.type == GgmlType::Q4_0) return prows<PackQ4_0>(w, r0, r1, a, n_tokens, y);
    if (w.type == GgmlType::Q8_0) return prows<PackQ8_0>(w, r0, r1, a, n_tokens, y);
}

}  // namespace
}  // namespace ember::cpu::EMBER_X86_NS
