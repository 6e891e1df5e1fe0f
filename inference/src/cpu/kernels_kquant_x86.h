// Q4_K / Q5_K / Q6_K against per-256 quantized activations (ActQ8K in kernels.h). Included by
// kernels_avx2.cpp and kernels_avx512.cpp inside their target pragmas: both decode on 256-bit
// vectors; AVX-512 prompts take ktile512, two sub-blocks per instruction.
//
// The per-32 kernels of kernels_x86.h convert every 32-element dot to float and scale it by
// (weight scale * activation scale). With one activation scale per 256 elements, a K-quant
// super-block's sub-block scales are small integers, so the whole super-block stays in int32:
// vpmaddubsw forms pairs of weight * activation bytes, vpmaddwd multiplies them by the
// sub-block's integer scale (instead of by ones) and sums pairs, and one conversion plus one
// fma per super-block, row and token finishes it. That halves the instructions per weight byte
// and is what makes decode fast on 2 cores, where it is bound by instructions, not bandwidth.
//
// Offsets: Q4_K/Q5_K are d * sc * q - dmin * m, so dmin * m_j * sum(a of sub-block j) is
// subtracted in float per super-block (from the activations' 16-element sums). Q6_K is
// d * sc * (q - 32) with q read unsigned: 32 * sum(sc_i * sum(a of half i)) starts the int32
// accumulator negative. Ranges: a byte pair is at most 2 * 63 * 127 < 32767 (no saturation),
// and a super-block's int32 sum at most 256 * 63 * 127 * 127.
#pragma once

#include "cpu/kernels_x86.h"  // same EMBER_X86_* macros

// Tile shapes: decode rows, prefill rows x tokens (16 ymm registers). Decode walks one row at
// a time: its weights are one sequential stream from memory, and software prefetch runs
// kDecodePrefetch bytes ahead of it. Measured on an AVX2 EPYC (one thread, 4096 x 4096 matrices
// streamed from DRAM), 4 rows at a time read Q4_K at 8.5 GB/s and Q6_K at 6 GB/s, one row with
// the prefetch at 16.5 (the speed of the same matrix in cache); 2 rows were slower than 4.
#ifndef EMBER_KR1
#define EMBER_KR1 1
#endif
#ifndef EMBER_KR
#define EMBER_KR 2
#define EMBER_KT 4
#endif

namespace ember::cpu::EMBER_X86_NS {
namespace {

#ifndef EMBER_KPF
#define EMBER_KPF 2048
#endif
constexpr int kDecodePrefetch = EMBER_KPF;  // bytes; 1024 gave 15 GB/s, 2048-3072 16.5

// Word w of every 16-bit lane in both 128-bit halves of v (v holds 8 words, twice).
inline __m256i splat_word(__m256i v, int w) {
    return _mm256_shuffle_epi8(v, _mm256_set1_epi16(short(((2 * w + 1) << 8) | (2 * w))));
}

template <class B>
struct KDecK4 {
    static constexpr bool kMinTerm = true;
    static constexpr int kBlockBytes = sizeof(B);
    const B* b;
    __m256i sc;    // the 8 six-bit scales as int16, in both halves
    __m128i mins;  // the 8 six-bit mins as int16
    float d, dmin;
    void header(const uint8_t* p) {
        b = reinterpret_cast<const B*>(p);
        alignas(8) uint8_t s[8], m[8];
        k4_scales(b->scales, s, m);
        sc = _mm256_broadcastsi128_si256(
            _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(s))));
        mins = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(m)));
        d = _cvtsh_ss(b->d);
        dmin = _cvtsh_ss(b->dmin);
    }
    // Sub-block j's scale in every lane.
    __m256i scale(int j) const { return splat_word(sc, j); }
#if EMBER_X86_VNNI
    // Sub-block 2p's scale in the low 256 bits, 2p + 1's in the high ones.
    __m512i scale2(int p) const {
        const __m512i s = _mm512_broadcast_i32x4(_mm256_castsi256_si128(sc));
        const __m512i ctl =
            _mm512_inserti64x4(_mm512_set1_epi16(short(((4 * p + 1) << 8) | (4 * p))),
                               _mm256_set1_epi16(short(((4 * p + 3) << 8) | (4 * p + 2))), 1);
        return _mm512_shuffle_epi8(s, ctl);
    }
#endif
};

struct KDecQ4_K : KDecK4<BlockQ4_K> {
    __m256i quants(int j) const { return nibbles(b->qs + 32 * (j / 2), j & 1); }
#if EMBER_X86_VNNI
    // Sub-blocks 2p and 2p + 1: the low and the high nibbles of the same 32 bytes.
    __m512i quants2(int p) const {
        return nibbles_both(b->qs + 32 * p);
    }
#endif
};

struct KDecQ5_K : KDecK4<BlockQ5_K> {
    __m256i quants(int j) const {
        const __m256i lo = nibbles(b->qs + 32 * (j / 2), j & 1);
        __m256i h = _mm256_srli_epi16(load32(b->qh), j);
        h = _mm256_slli_epi16(_mm256_and_si256(h, _mm256_set1_epi8(1)), 4);
        return _mm256_or_si256(lo, h);
    }
#if EMBER_X86_VNNI
    __m512i quants2(int p) const {
        const __m512i lo = nibbles_both(b->qs + 32 * p);
        const __m512i cnt = _mm512_inserti64x4(_mm512_set1_epi16(short(2 * p)),
                                               _mm256_set1_epi16(short(2 * p + 1)), 1);
        __m512i h = _mm512_srlv_epi16(_mm512_broadcast_i64x4(load32(b->qh)), cnt);
        h = _mm512_slli_epi16(_mm512_and_si512(h, _mm512_set1_epi8(1)), 4);
        return _mm512_or_si512(lo, h);
    }
#endif
};

struct KDecQ6_K {
    static constexpr bool kMinTerm = false;
    static constexpr int kBlockBytes = sizeof(BlockQ6_K);
    const BlockQ6_K* b;
    __m256i scb;  // the 16 signed scale bytes, in both halves
    float d;
    void header(const uint8_t* p) {
        b = reinterpret_cast<const BlockQ6_K*>(p);
        scb = _mm256_broadcastsi128_si256(load16(b->scales));
        d = _cvtsh_ss(b->d);
    }
    // Lanes 0-7 (elements 0-15 of sub-block j) get scale 2j, lanes 8-15 scale 2j + 1: the
    // byte goes to the top of the word and an arithmetic shift sign-extends it.
    __m256i scale(int j) const {
        const __m256i ctl = _mm256_set_m128i(_mm_set1_epi16(short(((2 * j + 1) << 8) | 0x80)),
                                             _mm_set1_epi16(short(((2 * j) << 8) | 0x80)));
        return _mm256_srai_epi16(_mm256_shuffle_epi8(scb, ctl), 8);
    }
    // Sub-block j = 4n + k: low bits from ql's (k & 1 ? second : first) 32 bytes of half n,
    // (k >= 2 ? high : low) nibbles; top 2 bits from qh's bits 2k of half n. Unsigned, 0..63.
    __m256i quants(int j) const {
        const int n = j / 4, k = j % 4;
        const __m256i lo = nibbles(b->ql + 64 * n + 32 * (k & 1), k >= 2);
        __m256i h = _mm256_srli_epi16(load32(b->qh + 32 * n), 2 * k);
        h = _mm256_slli_epi16(_mm256_and_si256(h, _mm256_set1_epi8(3)), 4);
        return _mm256_or_si256(lo, h);
    }
#if EMBER_X86_VNNI
    // Sub-blocks 2p and 2p + 1 = 4n + k, 4n + k + 1 (k = 0 or 2): the 64 ql bytes of half n
    // (low nibbles for k = 0, high for k = 2), qh's bits 2k and 2k + 2.
    __m512i quants2(int p) const {
        const int n = p / 2, k = 2 * (p % 2);
        __m512i lo = _mm512_loadu_si512(b->ql + 64 * n);
        if (k) lo = _mm512_srli_epi16(lo, 4);
        lo = _mm512_and_si512(lo, _mm512_set1_epi8(0x0F));
        const __m512i cnt = _mm512_inserti64x4(_mm512_set1_epi16(short(2 * k)),
                                               _mm256_set1_epi16(short(2 * k + 2)), 1);
        __m512i h = _mm512_srlv_epi16(_mm512_broadcast_i64x4(load32(b->qh + 32 * n)), cnt);
        h = _mm512_slli_epi16(_mm512_and_si512(h, _mm512_set1_epi8(3)), 4);
        return _mm512_or_si512(lo, h);
    }
    // 128-bit lane i of sub-blocks 2p, 2p + 1 gets scale 4p + i (sign-extended as in scale()).
    __m512i scale2(int p) const {
        const __m512i s = _mm512_broadcast_i32x4(_mm256_castsi256_si128(scb));
        __m512i ctl = _mm512_castsi128_si512(_mm_set1_epi16(short(((4 * p) << 8) | 0x80)));
        ctl = _mm512_inserti32x4(ctl, _mm_set1_epi16(short(((4 * p + 1) << 8) | 0x80)), 1);
        ctl = _mm512_inserti32x4(ctl, _mm_set1_epi16(short(((4 * p + 2) << 8) | 0x80)), 2);
        ctl = _mm512_inserti32x4(ctl, _mm_set1_epi16(short(((4 * p + 3) << 8) | 0x80)), 3);
        return _mm512_srai_epi16(_mm512_shuffle_epi8(s, ctl), 8);
    }
#endif
    // -32 * sum_i sc_i * (sum of the activations' 16-element half i), in 8 int32 lanes.
    __m256i start(const int16_t* bsums) const {
        const __m256i sc16 = _mm256_cvtepi8_epi16(load16(b->scales));
        const __m256i p = _mm256_madd_epi16(sc16, load32(bsums));
        return _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(p, 5));
    }
};

inline float hsum128(__m128 s) {
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// Tokens t0 .. t0 + T - 1 of the activations: quants, per-super-block scales, 16-element sums.
template <int T>
struct KActs {
    const int8_t* q[T];
    const float* d[T];
    const int16_t* bsums[T];
    [[gnu::always_inline]] KActs(const ActQ8K& a, int t0) {
#pragma GCC unroll 8
        for (int t = 0; t < T; ++t) {
            q[t] = a.qs(t0 + t);
            d[t] = a.d(t0 + t);
            bsums[t] = a.bsums(t0 + t);
        }
    }
};

// Super-block s of R rows from `row`: each row's header into dec; a decode step (T == 1) also
// asks for the bytes kDecodePrefetch ahead, as its weights stream from memory once.
template <class D, int R, int T>
[[gnu::always_inline]] inline void k_headers(const WeightView& w, const uint8_t* row, int64_t s,
                                             D (&dec)[R]) {
    if constexpr (T == 1) {
        const uint8_t* ahead = row + s * D::kBlockBytes + kDecodePrefetch;
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
            for (int o = 0; o < D::kBlockBytes; o += 64)
                _mm_prefetch(reinterpret_cast<const char*>(ahead + r * w.row_stride + o),
                             _MM_HINT_T0);
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) dec[r].header(row + r * w.row_stride + s * D::kBlockBytes);
}

// The 8 sub-blocks' activation sums of a super-block (from its 16 half sums), for the min
// terms; zero where D has none.
template <class D>
[[gnu::always_inline]] inline __m128i k_sub_block_sums(const int16_t* bsums) {
    if constexpr (D::kMinTerm) return _mm_hadd_epi16(load16(bsums), load16(bsums + 8));
    return _mm_setzero_si128();
}

// R rows x T tokens over every super-block of the rows.
template <class D, int R, int T>
void ktile(const WeightView& w, int64_t r0, const ActQ8K& a, int t0, float* y) {
    const int64_t nsb = w.cols / 256;
    __m256 acc[R][T];
    __m128 accm[R][T];  // the min terms, subtracted at the end
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
        for (int t = 0; t < T; ++t) {
            acc[r][t] = _mm256_setzero_ps();
            accm[r][t] = _mm_setzero_ps();
        }
    const KActs<T> act(a, t0);
    const uint8_t* row = w.data + r0 * w.row_stride;
    D dec[R];
    for (int64_t s = 0; s < nsb; ++s) {
        k_headers<D, R, T>(w, row, s, dec);
        __m256i sumi[R][T];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
            for (int t = 0; t < T; ++t) {
                if constexpr (D::kMinTerm)
                    sumi[r][t] = _mm256_setzero_si256();
                else
                    sumi[r][t] = dec[r].start(act.bsums[t] + 16 * s);
            }
#pragma GCC unroll 8
        for (int j = 0; j < 8; ++j) {
            __m256i wq[R], ws[R];
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                wq[r] = dec[r].quants(j);
                ws[r] = dec[r].scale(j);
            }
#pragma GCC unroll 8
            for (int t = 0; t < T; ++t) {
                const __m256i av = load32(act.q[t] + 256 * s + 32 * j);
#pragma GCC unroll 8
                for (int r = 0; r < R; ++r)
                    sumi[r][t] = _mm256_add_epi32(
                        sumi[r][t], _mm256_madd_epi16(ws[r], _mm256_maddubs_epi16(wq[r], av)));
            }
        }
#pragma GCC unroll 8
        for (int t = 0; t < T; ++t) {
            const float da = act.d[t][s];
            const __m128i bs32 = k_sub_block_sums<D>(act.bsums[t] + 16 * s);
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                acc[r][t] = _mm256_fmadd_ps(_mm256_set1_ps(dec[r].d * da),
                                            _mm256_cvtepi32_ps(sumi[r][t]), acc[r][t]);
                if constexpr (D::kMinTerm)
                    accm[r][t] = _mm_fmadd_ps(_mm_set1_ps(dec[r].dmin * da),
                                              _mm_cvtepi32_ps(_mm_madd_epi16(dec[r].mins, bs32)),
                                              accm[r][t]);
            }
        }
    }
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t)
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r)
            y[(t0 + t) * w.rows + r0 + r] = hsum(acc[r][t]) - hsum128(accm[r][t]);
}

#if EMBER_X86_VNNI
// ktile on 512-bit vectors: two sub-blocks per instruction (AVX-512BW's vpmaddubsw/vpmaddwd).
template <class D, int R, int T>
void ktile512(const WeightView& w, int64_t r0, const ActQ8K& a, int t0, float* y) {
    const int64_t nsb = w.cols / 256;
    __m512 acc[R][T];
    __m128 accm[R][T];  // the min terms, subtracted at the end
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
        for (int t = 0; t < T; ++t) {
            acc[r][t] = _mm512_setzero_ps();
            accm[r][t] = _mm_setzero_ps();
        }
    const KActs<T> act(a, t0);
    const uint8_t* row = w.data + r0 * w.row_stride;
    D dec[R];
    for (int64_t s = 0; s < nsb; ++s) {
        k_headers<D, R, T>(w, row, s, dec);
        __m512i sumi[R][T];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
            for (int t = 0; t < T; ++t) {
                if constexpr (D::kMinTerm)
                    sumi[r][t] = _mm512_setzero_si512();
                else
                    sumi[r][t] = _mm512_zextsi256_si512(dec[r].start(act.bsums[t] + 16 * s));
            }
#pragma GCC unroll 4
        for (int p = 0; p < 4; ++p) {
            __m512i wq[R], ws[R];
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                wq[r] = dec[r].quants2(p);
                ws[r] = dec[r].scale2(p);
            }
#pragma GCC unroll 8
            for (int t = 0; t < T; ++t) {
                const __m512i av = _mm512_loadu_si512(act.q[t] + 256 * s + 64 * p);
#pragma GCC unroll 8
                for (int r = 0; r < R; ++r)
                    sumi[r][t] = _mm512_add_epi32(
                        sumi[r][t], _mm512_madd_epi16(ws[r], _mm512_maddubs_epi16(wq[r], av)));
            }
        }
#pragma GCC unroll 8
        for (int t = 0; t < T; ++t) {
            const float da = act.d[t][s];
            const __m128i bs32 = k_sub_block_sums<D>(act.bsums[t] + 16 * s);
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                acc[r][t] = _mm512_fmadd_ps(_mm512_set1_ps(dec[r].d * da),
                                            _mm512_cvtepi32_ps(sumi[r][t]), acc[r][t]);
                if constexpr (D::kMinTerm)
                    accm[r][t] = _mm_fmadd_ps(_mm_set1_ps(dec[r].dmin * da),
                                              _mm_cvtepi32_ps(_mm_madd_epi16(dec[r].mins, bs32)),
                                              accm[r][t]);
            }
        }
    }
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t)
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r)
            y[(t0 + t) * w.rows + r0 + r] = _mm512_reduce_add_ps(acc[r][t]) - hsum128(accm[r][t]);
}

template <class D, int R, int T>
void krows_tokens512(const WeightView& w, int64_t r0, int64_t r1, const ActQ8K& a, int t0,
                     float* y) {
    int64_t r = r0;
    for (; r + R <= r1; r += R) ktile512<D, R, T>(w, r, a, t0, y);
    for (; r < r1; ++r) ktile512<D, 1, T>(w, r, a, t0, y);
}
#endif

template <class D, int R, int T>
void krows_tokens(const WeightView& w, int64_t r0, int64_t r1, const ActQ8K& a, int t0, float* y) {
    int64_t r = r0;
    for (; r + R <= r1; r += R) ktile<D, R, T>(w, r, a, t0, y);
    for (; r < r1; ++r) ktile<D, 1, T>(w, r, a, t0, y);
}

template <class D>
void krows(const WeightView& w, int64_t r0, int64_t r1, const ActQ8K& a, int n_tokens, float* y) {
#if EMBER_X86_VNNI
    // AVX-512 prompts: two sub-blocks per instruction (ktile512); decode stays on 256-bit.
    if (n_tokens > 1) {
        int t = 0;
        for (; t + 4 <= n_tokens; t += 4) krows_tokens512<D, 2, 4>(w, r0, r1, a, t, y);
        for (; t + 2 <= n_tokens; t += 2) krows_tokens512<D, 2, 2>(w, r0, r1, a, t, y);
        if (t < n_tokens) krows_tokens512<D, 2, 1>(w, r0, r1, a, t, y);
        return;
    }
#endif
    if (n_tokens == 1) return krows_tokens<D, EMBER_KR1, 1>(w, r0, r1, a, 0, y);
    constexpr int R = EMBER_KR, T = EMBER_KT;
    int t = 0;
    for (; t + T <= n_tokens; t += T) krows_tokens<D, R, T>(w, r0, r1, a, t, y);
    for (; t + 2 <= n_tokens; t += 2) krows_tokens<D, R, 2>(w, r0, r1, a, t, y);
    if (t < n_tokens) krows_tokens<D, R, 1>(w, r0, r1, a, t, y);
}

// quantize_act_k (matmul.cpp) on AVX2, bit for bit: cvtps rounds to nearest even as
// nearbyint does, and |x * 127 / amax| <= 127 needs no clamp beyond the saturating packs.
void quantize_act_k(const float* x, int64_t cols, int8_t* qs, float* d, int16_t* bsums) {
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    const __m256i ones8 = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);
    for (int64_t b = 0; b < cols / 256; ++b) {
        const float* xb = x + 256 * b;
        __m256 m = _mm256_setzero_ps();
        for (int k = 0; k < 32; ++k)
            m = _mm256_max_ps(m, _mm256_and_ps(_mm256_loadu_ps(xb + 8 * k), abs_mask));
        __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
        m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
        const float scale = _mm_cvtss_f32(m4) / 127;
        const __m256 inv = _mm256_set1_ps(scale > 0 ? 1 / scale : 0);
        for (int i = 0; i < 8; ++i) {  // 32 elements at a time
            __m256i q[4];
            for (int k = 0; k < 4; ++k)
                q[k] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(xb + 32 * i + 8 * k), inv));
            const __m256i p = _mm256_permutevar8x32_epi32(
                _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3])),
                order);
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs + 256 * b + 32 * i), p);
            // Sums of 4 bytes in 8 lanes, then of 16: lanes 0-3 are elements 0-15.
            __m256i s = _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, p), ones16);
            s = _mm256_hadd_epi32(s, s);
            s = _mm256_hadd_epi32(s, s);
            bsums[16 * b + 2 * i] = int16_t(_mm256_cvtsi256_si32(s));
            bsums[16 * b + 2 * i + 1] = int16_t(_mm_cvtsi128_si32(_mm256_extracti128_si256(s, 1)));
        }
        d[b] = scale;
    }
}

void kquant_rows(const WeightView& w, int64_t r0, int64_t r1, const ActQ8K& a, int n_tokens,
                 float* y) {
    switch (w.type) {
        case GgmlType::Q4_K:
            return krows<KDecQ4_K>(w, r0, r1, a, n_tokens, y);
        case GgmlType::Q5_K:
            return krows<KDecQ5_K>(w, r0, r1, a, n_tokens, y);
        case GgmlType::Q6_K:
            return krows<KDecQ6_K>(w, r0, r1, a, n_tokens, y);
        default:
            return;  // matmul only routes K-quants here
    }
}

}  // namespace
}  // namespace ember::cpu::EMBER_X86_NS
