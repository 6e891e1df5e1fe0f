// The K-quant integer kernels (kquant_rows: Q4_K, Q5_K, Q6_K against per-256 activations):
// the SIMD activation quantization against the scalar one bit for bit, and every type, row
// count (odd ones and the tile remainders) and token count (the tile's and its tails) against
// a double reference that rounds the activations the same way.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "cpu/kernels.h"
#include "cpu/matmul.h"
#include "quant/quant.h"

using namespace ember;
using namespace ember::cpu;

namespace {

std::vector<float> random_x(int64_t n, uint64_t seed) {
    std::mt19937 rng{uint32_t(seed)};
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(n);
    // A few channels 20x larger, as real hidden states have.
    for (int64_t i = 0; i < n; ++i) x[i] = normal(rng) * (i % 101 == 7 ? 20.0f : 1.0f);
    return x;
}

class KQuantIsa : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        std::string got = select_isa(GetParam().c_str());
        if (got.rfind(GetParam(), 0) != 0) GTEST_SKIP() << "CPU lacks " << GetParam();
        if (!active_kernels().kquant_rows) GTEST_SKIP() << got << " has no K-quant kernels";
    }
    void TearDown() override { select_isa(nullptr); }
};

TEST_P(KQuantIsa, ActivationsMatchScalar) {
    const KernelSet& k = active_kernels();
    if (!k.quantize_act_k) GTEST_SKIP() << "scalar quantization only";
    const int64_t cols = 1024;
    std::vector<float> x = random_x(cols, 5);
    for (int i = 256; i < 512; ++i) x[i] = 0;               // a zero block: scale 0
    for (int i = 512; i < 768; ++i) x[i] = i % 2 ? 3 : -3;  // every quant at +-127
    x[800] = 1e30f;                                         // all but one round to 0
    std::vector<int8_t> q0(cols), q1(cols);
    std::vector<float> d0(cols / 256), d1(cols / 256);
    std::vector<int16_t> s0(cols / 16), s1(cols / 16);
    quantize_act_k(x.data(), cols, q0.data(), d0.data(), s0.data());
    k.quantize_act_k(x.data(), cols, q1.data(), d1.data(), s1.data());
    EXPECT_EQ(q0, q1);
    EXPECT_EQ(d0, d1);
    EXPECT_EQ(s0, s1);
    for (int64_t g = 0; g < cols / 16; ++g) {
        int sum = 0;
        for (int i = 0; i < 16; ++i) sum += q0[16 * g + i];
        ASSERT_EQ(s0[g], sum) << "16-element group " << g;
    }
    EXPECT_EQ(q0[513], 127);
    EXPECT_EQ(q0[512], -127);
}

// y against sum_c w_c * d * round(x_c / d) in double, d = max|x| / 127 per 256 elements.
void check(ThreadPool& pool, GgmlType t, int64_t rows, int64_t cols, int n_tokens) {
    SCOPED_TRACE(std::string(type_name(t)) + " " + std::to_string(rows) + "x" +
                 std::to_string(cols) + " tokens=" + std::to_string(n_tokens) +
                 " threads=" + std::to_string(pool.size()));
    const uint64_t rb = row_bytes(*type_traits(t), uint64_t(cols));
    std::vector<uint8_t> data(rb * rows);
    for (int64_t r = 0; r < rows; ++r)
        fill_random(t, data.data() + r * rb, cols, uint64_t(rows * 7 + r), 1.0f);
    const WeightView w{t, rows, cols, data.data(), rb};
    std::vector<float> x = random_x(cols * n_tokens, uint64_t(cols + n_tokens));
    std::vector<float> y(size_t(rows) * n_tokens, NAN);
    MatmulScratch scratch;
    matmul(pool, w, x.data(), n_tokens, y.data(), scratch);

    std::vector<double> xq(x.size());
    for (size_t b = 0; b < x.size(); b += 256) {
        float amax = 0;
        for (int i = 0; i < 256; ++i) amax = std::max(amax, std::fabs(x[b + i]));
        const float d = amax / 127, id = d > 0 ? 1 / d : 0;
        for (int i = 0; i < 256; ++i) xq[b + i] = double(d) * std::nearbyint(x[b + i] * id);
    }
    std::vector<float> wr(cols);
    double err = 0, mag = 0;
    for (int64_t r = 0; r < rows; ++r) {
        get_row(w, r, wr.data());
        for (int tok = 0; tok < n_tokens; ++tok) {
            double ref = 0, abs_sum = 0;
            for (int64_t c = 0; c < cols; ++c) {
                ref += double(wr[c]) * xq[size_t(tok) * cols + c];
                abs_sum += std::fabs(double(wr[c]) * xq[size_t(tok) * cols + c]);
            }
            const double e = std::fabs(double(y[size_t(tok) * rows + r]) - ref);
            // Integer sums are exact; float32 adds a few ulps of the magnitude per super-block.
            ASSERT_LE(e, 1e-5 * abs_sum) << "row " << r << " token " << tok << ": y "
                                         << y[size_t(tok) * rows + r] << " ref " << ref;
            err += e * e;
            mag += ref * ref;
        }
    }
    EXPECT_LT(err, 1e-10 * mag);
}

TEST_P(KQuantIsa, EveryTypeAgainstReference) {
    ThreadPool pool1(1), pool2(2);
    for (GgmlType t : {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K})
        for (int64_t cols : {256, 2816})  // 1 and 11 super-blocks
            for (int64_t rows : {1, 3, 5, 6, 37})
                for (int nt : {1, 2, 3, 4, 5, 7, 9}) {
                    check(pool2, t, rows, cols, nt);
                    if (rows == 37 && nt <= 2) check(pool1, t, rows, cols, nt);
                }
}

INSTANTIATE_TEST_SUITE_P(Isa, KQuantIsa, ::testing::Values("avx2", "avx512"));

// A row stride larger than the row (a view into a wider tensor) is honoured.
TEST(KQuant, RowStride) {
    ThreadPool pool(2);
    const int64_t rows = 5, cols = 512;
    const uint64_t rb = row_bytes(*type_traits(GgmlType::Q4_K), uint64_t(cols));
    std::vector<uint8_t> dense(rb * rows), wide(2 * rb * rows);
    for (int64_t r = 0; r < rows; ++r) {
        fill_random(GgmlType::Q4_K, dense.data() + r * rb, cols, uint64_t(r), 1.0f);
        std::copy_n(dense.data() + r * rb, rb, wide.data() + 2 * r * rb);
    }
    std::vector<float> x = random_x(cols * 3, 9), y0(rows * 3), y1(rows * 3);
    MatmulScratch s;
    matmul(pool, {GgmlType::Q4_K, rows, cols, dense.data(), rb}, x.data(), 3, y0.data(), s);
    matmul(pool, {GgmlType::Q4_K, rows, cols, wide.data(), 2 * rb}, x.data(), 3, y1.data(), s);
    EXPECT_EQ(y0, y1);
}

}  // namespace
