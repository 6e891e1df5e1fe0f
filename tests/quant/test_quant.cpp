// Dequantizers are checked against an independent decoder written here from the block layouts
// (element by element, reading bit fields by absolute bit position), not against the library.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "quant/quant.h"

using namespace ember;

namespace {

// Bits [pos, pos + n) of a little-endian byte string.
uint32_t bits(const uint8_t* p, int pos, int n) {
    uint32_t v = 0;
    for (int i = 0; i < n; ++i) v |= uint32_t((p[(pos + i) / 8] >> ((pos + i) % 8)) & 1) << i;
    return v;
}

double half_at(const uint8_t* p, int byte) {
    uint32_t h = bits(p, 8 * byte, 16);
    int sign = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? std::ldexp(double(m), -24) : std::ldexp(1.0 + m / 1024.0, e - 15);
    if (e == 31) v = m ? NAN : INFINITY;
    return sign ? -v : v;
}

// Element i of one block, decoded from the documented layout.
double ref_element(GgmlType t, const uint8_t* b, int i) {
    switch (t) {
        case GgmlType::Q4_0:  // d | 16 bytes: element i<16 low nibble of byte i, else high of i-16
            return half_at(b, 0) * (double(bits(b, 16 + 8 * (i % 16) + 4 * (i / 16), 4)) - 8);
        case GgmlType::Q4_1:
            return half_at(b, 0) * bits(b, 32 + 8 * (i % 16) + 4 * (i / 16), 4) + half_at(b, 2);
        case GgmlType::Q5_0: {  // d | qh (32 bits, bit i = 5th bit of element i) | qs
            uint32_t q = bits(b, 48 + 8 * (i % 16) + 4 * (i / 16), 4) | (bits(b, 16 + i, 1) << 4);
            return half_at(b, 0) * (double(q) - 16);
        }
        case GgmlType::Q5_1: {
            uint32_t q = bits(b, 64 + 8 * (i % 16) + 4 * (i / 16), 4) | (bits(b, 32 + i, 1) << 4);
            return half_at(b, 0) * q + half_at(b, 2);
        }
        case GgmlType::Q8_0:
            return half_at(b, 0) * double(int8_t(b[2 + i]));
        case GgmlType::Q4_K:
        case GgmlType::Q5_K: {
            // d | dmin | 12 scale bytes | (Q5_K: 32 qh bytes) | 128 qs bytes. Sub-block j = i/32
            // uses nibble (j odd: high) of qs[32*(j/2) + i%32]; its 6-bit scale/min: j<4 in
            // bytes j / j+4; j>=4 low 4 bits in byte j+4's nibbles, top 2 in bits 6-7 of j-4 / j.
            int j = i / 32, l = i % 32;
            const uint8_t* sc = b + 4;
            uint32_t s, m;
            if (j < 4) {
                s = bits(sc, 8 * j, 6);
                m = bits(sc, 8 * (j + 4), 6);
            } else {
                s = bits(sc, 8 * (j + 4), 4) | (bits(sc, 8 * (j - 4) + 6, 2) << 4);
                m = bits(sc, 8 * (j + 4) + 4, 4) | (bits(sc, 8 * j + 6, 2) << 4);
            }
            bool k5 = t == GgmlType::Q5_K;
            int qs_byte = (k5 ? 48 : 16) + 32 * (j / 2) + l;
            uint32_t q = bits(b, 8 * qs_byte + 4 * (j % 2), 4);
            if (k5) q |= bits(b, 8 * (16 + l) + j, 1) << 4;
            return half_at(b, 0) * s * q - half_at(b, 2) * m;
        }
        case GgmlType::Q6_K: {
            // ql[128] | qh[64] | int8 scales[16] | d. Half n = i/128; within it k = (i%128)/32
            // picks ql's first/second 32 bytes (k&1) and low/high nibble (k>=2), qh bits 2k.
            int n = i / 128, k = (i % 128) / 32, l = i % 32;
            uint32_t lo = bits(b, 8 * (64 * n + l + 32 * (k & 1)) + 4 * (k / 2), 4);
            uint32_t hi = bits(b, 8 * (128 + 32 * n + l) + 2 * k, 2);
            int scale = int8_t(b[192 + 8 * n + 2 * k + l / 16]);
            return half_at(b, 208) * scale * (double(lo | (hi << 4)) - 32);
        }
        default:
            ADD_FAILURE() << "no reference for type";
            return 0;
    }
}

const GgmlType kQuantTypes[] = {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1,
                                GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};
const GgmlType kAllTypes[] = {GgmlType::F32,  GgmlType::F16,  GgmlType::BF16, GgmlType::Q4_0,
                              GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0,
                              GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};

// Byte offsets of the fp16 fields of each block type.
std::vector<int> half_fields(GgmlType t) {
    switch (t) {
        case GgmlType::Q4_1:
        case GgmlType::Q5_1:
        case GgmlType::Q4_K:
        case GgmlType::Q5_K:
            return {0, 2};
        case GgmlType::Q6_K:
            return {208};
        default:
            return {0};
    }
}

void check_against_reference(GgmlType t, const std::vector<uint8_t>& data, int64_t n) {
    const TypeTraits tt = *type_traits(t);
    std::vector<float> out(n);
    dequantize_row(t, data.data(), out.data(), n);
    for (int64_t e = 0; e < n; ++e) {
        const uint8_t* block = data.data() + e / tt.block_elems * tt.block_bytes;
        double ref = ref_element(t, block, int(e % tt.block_elems));
        ASSERT_NEAR(out[e], ref, 1e-5 * std::fabs(ref) + 1e-30) << tt.name << " element " << e;
    }
}

}  // namespace

TEST(Fp16, KnownValues) {
    EXPECT_EQ(fp32_to_fp16(1.0f), 0x3C00);
    EXPECT_EQ(fp32_to_fp16(-2.0f), 0xC000);
    EXPECT_EQ(fp32_to_fp16(0.0f), 0x0000);
    EXPECT_EQ(fp32_to_fp16(-0.0f), 0x8000);
    EXPECT_EQ(fp32_to_fp16(65504.0f), 0x7BFF);  // largest finite
    EXPECT_EQ(fp32_to_fp16(65519.0f), 0x7BFF);  // below the halfway point
    EXPECT_EQ(fp32_to_fp16(65520.0f), 0x7C00);  // halfway to 2^16 rounds to inf
    EXPECT_EQ(fp32_to_fp16(1e10f), 0x7C00);
    EXPECT_EQ(fp32_to_fp16(-INFINITY), 0xFC00);
    EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
    EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
    EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -25)), 0x0000);  // tie -> even (0)
    EXPECT_EQ(fp32_to_fp16(std::ldexp(3.0f, -25)), 0x0002);  // tie -> even (2)
    EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -26)), 0x0000);
    EXPECT_EQ(fp32_to_fp16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);      // tie -> even
    EXPECT_EQ(fp32_to_fp16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);  // tie -> even
    EXPECT_EQ(fp32_to_fp16(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3C01);
    // The largest subnormal rounding up into the smallest normal.
    EXPECT_EQ(fp32_to_fp16(std::ldexp(1023.5f, -24)), 0x0400);
    uint16_t nan = fp32_to_fp16(NAN);
    EXPECT_EQ(nan & 0x7C00, 0x7C00);
    EXPECT_NE(nan & 0x3FF, 0);

    EXPECT_EQ(fp16_to_fp32(0x3C00), 1.0f);
    EXPECT_EQ(fp16_to_fp32(0x0001), std::ldexp(1.0f, -24));
    EXPECT_EQ(fp16_to_fp32(0x83FF), -std::ldexp(1023.0f, -24));
    EXPECT_EQ(fp16_to_fp32(0x7BFF), 65504.0f);
    EXPECT_TRUE(std::isinf(fp16_to_fp32(0x7C00)));
    EXPECT_TRUE(std::isnan(fp16_to_fp32(0x7E00)));
    EXPECT_TRUE(std::signbit(fp16_to_fp32(0x8000)));
}

TEST(Fp16, AllHalvesRoundTripAndMatchLdexp) {
    for (uint32_t h = 0; h < 65536; ++h) {
        float f = fp16_to_fp32(uint16_t(h));
        double ref = half_at(reinterpret_cast<const uint8_t*>(&h), 0);
        if (std::isnan(ref)) {
            EXPECT_TRUE(std::isnan(f)) << h;
            continue;
        }
        ASSERT_EQ(double(f), ref) << h;
        ASSERT_EQ(fp32_to_fp16(f), h) << h;
    }
}

// Exhaustive-ish: nearest-even against a double computation of the two neighbouring halves.
TEST(Fp16, RandomFloatsRoundToNearestEven) {
    std::mt19937 rng(1);
    for (int i = 0; i < 200000; ++i) {
        uint32_t u = rng();
        float f;
        std::memcpy(&f, &u, 4);
        if (std::isnan(f)) continue;
        uint16_t h = fp32_to_fp16(f);
        double v = std::fabs(double(f));
        if (v >= 65520.0) {
            ASSERT_EQ(h & 0x7FFF, 0x7C00) << f;
            continue;
        }
        double got = std::fabs(double(fp16_to_fp32(h)));
        double ulp =
            v < std::ldexp(1.0, -14) ? std::ldexp(1.0, -24) : std::ldexp(1.0, std::ilogb(v) - 10);
        double err = std::fabs(got - v);
        ASSERT_LE(err, ulp / 2) << f;
        if (err == ulp / 2 && got != 0) ASSERT_EQ(h & 1, 0) << "tie not to even: " << f;
        ASSERT_EQ(bool(h & 0x8000), std::signbit(f));
    }
}

TEST(Bf16, KnownValuesAndRounding) {
    EXPECT_EQ(fp32_to_bf16(1.0f), 0x3F80);
    EXPECT_EQ(fp32_to_bf16(-2.0f), 0xC000);
    EXPECT_EQ(bf16_to_fp32(0x3F80), 1.0f);
    EXPECT_EQ(fp32_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);      // tie -> even
    EXPECT_EQ(fp32_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);  // tie -> even
    EXPECT_EQ(fp32_to_bf16(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)), 0x3F81);
    EXPECT_EQ(fp32_to_bf16(INFINITY), 0x7F80);
    EXPECT_EQ(fp32_to_bf16(3.4e38f), 0x7F80);  // rounds past the largest finite
    uint16_t nan = fp32_to_bf16(NAN);
    EXPECT_TRUE(std::isnan(bf16_to_fp32(nan)));
    // A NaN whose payload lives only in the low 16 bits must stay NaN.
    uint32_t low_nan = 0x7F800001;
    float f;
    std::memcpy(&f, &low_nan, 4);
    EXPECT_TRUE(std::isnan(bf16_to_fp32(fp32_to_bf16(f))));
    for (uint32_t h = 0; h < 65536; ++h) {
        float v = bf16_to_fp32(uint16_t(h));
        if (!std::isnan(v)) ASSERT_EQ(fp32_to_bf16(v), h);
    }
}

TEST(Dequantize, FillRandomBlocksMatchReference) {
    for (GgmlType t : kQuantTypes) {
        const TypeTraits tt = *type_traits(t);
        const int64_t n = 8 * 256;
        std::vector<uint8_t> data(row_bytes(tt, n));
        fill_random(t, data.data(), n, 42, 1.0f);
        check_against_reference(t, data, n);
    }
}

// Arbitrary bytes exercise every bit pattern of quants and (K-quant) scales; only the fp16
// fields are set to finite values.
TEST(Dequantize, ArbitraryBytesMatchReference) {
    std::mt19937 rng(7);
    for (GgmlType t : kQuantTypes) {
        const TypeTraits tt = *type_traits(t);
        const int64_t n = 16 * 256;
        std::vector<uint8_t> data(row_bytes(tt, n));
        for (auto& b : data) b = uint8_t(rng());
        for (size_t blk = 0; blk < data.size() / tt.block_bytes; ++blk)
            for (int off : half_fields(t)) {
                uint16_t h = fp32_to_fp16(std::ldexp(float(rng() % 1000) - 500, -12));
                std::memcpy(&data[blk * tt.block_bytes + off], &h, 2);
            }
        check_against_reference(t, data, n);
    }
}

TEST(Dequantize, FloatTypes) {
    std::vector<float> src = {1.0f, -0.5f, 3.14159f, 65504.0f, 1e-8f, -0.0f, 123456.0f, 2.5e-3f};
    std::vector<uint16_t> h(src.size());
    std::vector<float> out(src.size());
    quantize_row(GgmlType::F16, src.data(), h.data(), int64_t(src.size()));
    dequantize_row(GgmlType::F16, h.data(), out.data(), int64_t(src.size()));
    for (size_t i = 0; i < src.size(); ++i) EXPECT_EQ(out[i], fp16_to_fp32(fp32_to_fp16(src[i])));
    quantize_row(GgmlType::BF16, src.data(), h.data(), int64_t(src.size()));
    dequantize_row(GgmlType::BF16, h.data(), out.data(), int64_t(src.size()));
    for (size_t i = 0; i < src.size(); ++i)
        EXPECT_NEAR(out[i], src[i], std::fabs(src[i]) * std::ldexp(1.0, -8));
    quantize_row(GgmlType::F32, src.data(), out.data(), int64_t(src.size()));
    EXPECT_EQ(out, src);
}

// Quantize then dequantize Gaussian data: relative RMS error per type, plus the legacy
// types' per-element bound of half a quantization step.
TEST(Quantize, RoundTripError) {
    struct Bound {
        GgmlType t;
        double rel_rms;
    };
    // About 1.2x the errors measured when these quantizers were written.
    const Bound bounds[] = {{GgmlType::F16, 3e-4},    {GgmlType::BF16, 2.5e-3},
                            {GgmlType::Q8_0, 0.0065}, {GgmlType::Q4_0, 0.10},
                            {GgmlType::Q4_1, 0.095},  {GgmlType::Q5_0, 0.05},
                            {GgmlType::Q5_1, 0.045},  {GgmlType::Q4_K, 0.085},
                            {GgmlType::Q5_K, 0.043},  {GgmlType::Q6_K, 0.023}};
    std::mt19937 rng(3);
    std::normal_distribution<float> gauss(0.0f, 1.0f);
    const int64_t n = 64 * 256;
    std::vector<float> x(n), y(n);
    for (auto& v : x) v = gauss(rng);
    for (const Bound& b : bounds) {
        const TypeTraits tt = *type_traits(b.t);
        std::vector<uint8_t> q(row_bytes(tt, n));
        quantize_row(b.t, x.data(), q.data(), n);
        dequantize_row(b.t, q.data(), y.data(), n);
        double se = 0, sx = 0;
        for (int64_t i = 0; i < n; ++i) {
            se += double(y[i] - x[i]) * (y[i] - x[i]);
            sx += double(x[i]) * x[i];
        }
        double rel = std::sqrt(se / sx);
        EXPECT_LT(rel, b.rel_rms) << tt.name;
        EXPECT_GT(rel, 0.0) << tt.name;  // a lossless "quantizer" would mean a broken test
        // Also: independent reference decoding of the produced blocks.
        if (tt.block_elems > 1) check_against_reference(b.t, q, n);
    }
    // Legacy symmetric types: every element within half a step (+ fp16 rounding of d); Q4_0
    // and Q5_0 map the extreme to -2^(b-1), so the opposite extreme may clip by one step.
    for (GgmlType t : {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q5_0}) {
        const double steps = t == GgmlType::Q8_0 ? 0.5 : 1.0;
        const TypeTraits tt = *type_traits(t);
        std::vector<uint8_t> q(row_bytes(tt, n));
        quantize_row(t, x.data(), q.data(), n);
        dequantize_row(t, q.data(), y.data(), n);
        for (int64_t i = 0; i < n; ++i) {
            double d = std::fabs(half_at(q.data() + i / 32 * tt.block_bytes, 0));
            ASSERT_LE(std::fabs(y[i] - x[i]), steps * d + 2e-3 * std::fabs(x[i]) + 1e-6)
                << tt.name << " element " << i;
        }
    }
}

TEST(Quantize, ZerosAndConstants) {
    const int64_t n = 256;
    for (GgmlType t : kAllTypes) {
        const TypeTraits tt = *type_traits(t);
        for (float c : {0.0f, 0.75f, -3.0f}) {
            std::vector<float> x(n, c), y(n);
            std::vector<uint8_t> q(row_bytes(tt, n));
            quantize_row(t, x.data(), q.data(), n);
            dequantize_row(t, q.data(), y.data(), n);
            for (int64_t i = 0; i < n; ++i)
                ASSERT_NEAR(y[i], c, 0.01 * std::fabs(c) + 1e-6) << tt.name << " c=" << c;
        }
    }
}

TEST(FillRandom, DeterministicRangeAndFinite) {
    for (GgmlType t : kAllTypes) {
        const TypeTraits tt = *type_traits(t);
        const int64_t n = 64 * 256;
        std::vector<uint8_t> a(row_bytes(tt, n)), b(a.size()), c(a.size());
        fill_random(t, a.data(), n, 1234, 0.5f);
        fill_random(t, b.data(), n, 1234, 0.5f);
        fill_random(t, c.data(), n, 1235, 0.5f);
        EXPECT_EQ(a, b) << tt.name;
        EXPECT_NE(a, c) << tt.name;
        std::vector<float> y(n);
        dequantize_row(t, a.data(), y.data(), n);
        double sum = 0, sq = 0, amax = 0;
        for (float v : y) {
            ASSERT_TRUE(std::isfinite(v)) << tt.name;
            sum += v;
            sq += double(v) * v;
            amax = std::max(amax, double(std::fabs(v)));
        }
        double mean = sum / n, rms = std::sqrt(sq / n);
        EXPECT_LE(amax, 0.5 * 1.15) << tt.name;            // roughly within [-scale, scale]
        EXPECT_GT(rms, 0.5 * 0.15) << tt.name;             // not degenerate
        EXPECT_LT(std::fabs(mean), 0.2 * rms) << tt.name;  // roughly centred
    }
}

// Not timed in CI: writes ~1 GiB of Q4_0 on one thread and reports the rate.
TEST(FillRandom, DISABLED_Speed) {
    const int64_t n = int64_t(1) << 31;  // 2^31 elements of Q4_0 = 1.2 GB
    const TypeTraits tt = *type_traits(GgmlType::Q4_0);
    std::vector<uint8_t> buf(row_bytes(tt, n));
    auto t0 = std::chrono::steady_clock::now();
    fill_random(GgmlType::Q4_0, buf.data(), n, 1, 1.0f);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("fill_random Q4_0: %.2f GB/s (one thread)\n", double(buf.size()) / s / 1e9);
}
