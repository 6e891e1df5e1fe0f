// The Packed weight layout: repacking preserves every value, and matmul on packed weights
// (SIMD kernels and the float fallback) matches the same weights in the GGUF layout.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "cpu/kernels.h"
#include "cpu/matmul.h"
#include "cpu/ops.h"
#include "quant/quant.h"

using namespace ember;
using namespace ember::cpu;

namespace {

struct Packed {
    std::vector<uint8_t> src;
    uint8_t* dst = nullptr;
    WeightView ggml, packed;
    ~Packed() { std::free(dst); }
};

void make(Packed& p, ThreadPool& pool, GgmlType t, int64_t rows, int64_t cols, uint64_t seed) {
    const uint64_t rb = row_bytes(*type_traits(t), uint64_t(cols));
    p.src.resize(rb * rows);
    for (int64_t r = 0; r < rows; ++r) fill_random(t, p.src.data() + r * rb, cols, seed + r, 1.0f);
    p.ggml = {t, rows, cols, p.src.data(), rb};
    p.dst = static_cast<uint8_t*>(std::aligned_alloc(64, (rb * rows + 63) / 64 * 64));
    p.packed = pack_weight(pool, p.ggml, p.dst);
}

std::vector<float> random_x(int64_t n, uint64_t seed) {
    std::mt19937 rng{uint32_t(seed)};
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> x(n);
    for (auto& v : x) v = u(rng);
    return x;
}

class PackedIsa : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        std::string got = select_isa(GetParam().c_str());
        if (got.rfind(GetParam(), 0) != 0) GTEST_SKIP() << "CPU lacks " << GetParam();
    }
    void TearDown() override { select_isa(nullptr); }
};

TEST_P(PackedIsa, MatchesGgmlLayout) {
    ThreadPool pool(3);
    for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q8_0}) {
        // 3 blocks (one partial chunk), 16 (one group), 25 (partial group and chunk), 64.
        for (int64_t cols : {96, 512, 800, 2048})
            for (int64_t rows : {1, 7, 130}) {
                Packed p;
                make(p, pool, t, rows, cols, uint64_t(rows * 131 + cols));
                std::vector<float> a(cols), b(cols);
                for (int64_t r = 0; r < rows; ++r) {
                    get_row(p.ggml, r, a.data());
                    get_row(p.packed, r, b.data());
                    ASSERT_EQ(a, b) << type_name(t) << " row " << r << " cols " << cols;
                }
                for (int nt : {1, 2, 5, 17}) {
                    SCOPED_TRACE(std::string(type_name(t)) + " " + std::to_string(rows) + "x" +
                                 std::to_string(cols) + " tokens=" + std::to_string(nt));
                    std::vector<float> x = random_x(cols * nt, uint64_t(cols + nt));
                    std::vector<float> y0(rows * nt, NAN), y1(rows * nt, NAN);
                    MatmulScratch s;
                    matmul(pool, p.ggml, x.data(), nt, y0.data(), s);
                    matmul(pool, p.packed, x.data(), nt, y1.data(), s);
                    // Both quantize the activations the same way (or neither does): the integer
                    // dots are exact, only the float summation order differs.
                    const double tol = 1e-10;
                    double e = 0, n = 0;
                    for (size_t i = 0; i < y0.size(); ++i) {
                        e += (double(y0[i]) - y1[i]) * (double(y0[i]) - y1[i]);
                        n += double(y0[i]) * y0[i];
                    }
                    EXPECT_LT(e / n, tol);
                }
            }
    }
}

INSTANTIATE_TEST_SUITE_P(Isa, PackedIsa, ::testing::Values("portable", "avx2", "avx512"));

TEST(Packed, ShouldPackOnlySupportedTypes) {
    WeightView w{GgmlType::Q4_K, 4, 256, nullptr, 144};
    EXPECT_FALSE(should_pack(w));
    w = {GgmlType::Q4_0, 4, 256, nullptr, 8 * 18, WeightLayout::Packed};
    EXPECT_FALSE(should_pack(w));
    w.layout = WeightLayout::Ggml;
    EXPECT_EQ(should_pack(w), active_kernels().packed_rows != nullptr);
}

TEST(FloatHelpers, MatchScalarAtEveryIsa) {
    std::vector<float> a = random_x(77, 1), b = random_x(77, 2), y = random_x(77, 3);
    for (const char* isa : {"portable", "avx2", "avx512"}) {
        select_isa(isa);
        const KernelSet& k = active_kernels();
        double ref = 0;
        for (int i = 0; i < 77; ++i) ref += double(a[i]) * b[i];
        EXPECT_NEAR(k.dot(a.data(), b.data(), 77), ref, 1e-5) << isa;
        std::vector<float> y2 = y;
        k.axpy(0.5f, a.data(), y2.data(), 77);
        for (int i = 0; i < 77; ++i) EXPECT_NEAR(y2[i], y[i] + 0.5f * a[i], 1e-6) << isa;
        std::vector<float> g(77), out(77);
        for (int i = 0; i < 77; ++i) g[i] = (i - 38) * 2.5f;  // -95 .. 95: the clamps too
        k.silu_mul(g.data(), b.data(), out.data(), 77);
        for (int i = 0; i < 77; ++i) {
            const double s = double(g[i]) / (1.0 + std::exp(-double(g[i]))) * b[i];
            EXPECT_NEAR(out[i], s, 1e-6 * std::max(1.0, std::fabs(s))) << isa << " g=" << g[i];
        }
        // GELU's tanh form (Gemma): the set's own where it has one, else the scalar one; over
        // the same clamps and over the gate's usual range.
        for (int i = 0; i < 77; ++i) g[i] = i < 38 ? (i - 19) * 5.0f : (i - 57) * 0.17f;
        gelu_tanh_mul(g.data(), b.data(), out.data(), 77);
        for (int i = 0; i < 77; ++i) {
            const double x = g[i];
            const double s =
                0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
            EXPECT_NEAR(out[i], s * b[i], 1e-6 * std::max(1.0, std::fabs(s * b[i])))
                << isa << " g=" << g[i];
        }
        // Gemma 2's soft-caps (scores at 50, logits at 30): about 1e-7 of the cap apart, the
        // far ends at +-cap.
        for (const float cap : {50.0f, 30.0f}) {
            for (int i = 0; i < 77; ++i) g[i] = i < 38 ? (i - 19) * 40.0f : (i - 57) * 1.3f;
            std::vector<float> x = g;
            k.softcap(x.data(), 77, cap);
            for (int i = 0; i < 77; ++i)
                EXPECT_NEAR(x[i], cap * std::tanh(double(g[i]) / cap), 1e-6 * cap)
                    << isa << " x=" << g[i];
        }
    }
    select_isa(nullptr);
}

}  // namespace
