// matmul for every weight type, shape and ISA level against dequantize_row + double dots.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cpu/kernels.h"
#include "cpu/matmul.h"
#include "quant/quant.h"

using namespace ember;
using namespace ember::cpu;

namespace {

const GgmlType kTypes[] = {GgmlType::F32,  GgmlType::F16,  GgmlType::BF16, GgmlType::Q4_0,
                           GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0,
                           GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};

bool is_float(GgmlType t) {
    return t == GgmlType::F32 || t == GgmlType::F16 || t == GgmlType::BF16;
}

struct Matrix {
    GgmlType type;
    int64_t rows, cols;
    std::vector<uint8_t> data;
    WeightView view() const {
        return {type, rows, cols, data.data(), row_bytes(*type_traits(type), uint64_t(cols))};
    }
};

Matrix random_matrix(GgmlType t, int64_t rows, int64_t cols, uint64_t seed) {
    Matrix m{t, rows, cols, {}};
    const TypeTraits tt = *type_traits(t);
    m.data.resize(row_bytes(tt, uint64_t(cols)) * rows);
    for (int64_t r = 0; r < rows; ++r)
        fill_random(t, m.data.data() + r * row_bytes(tt, uint64_t(cols)), cols, seed + r, 1.0f);
    return m;
}

std::vector<float> random_x(int64_t n, uint64_t seed) {
    std::mt19937 rng{uint32_t(seed)};
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> x(n);
    for (auto& v : x) v = u(rng);
    return x;
}

// The Q8 activation rounding the quantized kernels use, computed here independently: one
// scale per `block` elements (32, or 256 for K-quants where the set has kquant_rows).
std::vector<double> q8_round_trip(const float* x, int64_t n, int block = 32) {
    std::vector<double> out(n);
    for (int64_t b = 0; b < n / block; ++b) {
        float amax = 0;
        for (int i = 0; i < block; ++i) amax = std::max(amax, std::fabs(x[b * block + i]));
        float d = amax / 127;
        float id = d > 0 ? 1 / d : 0;
        for (int i = 0; i < block; ++i)
            out[b * block + i] = double(d) * std::nearbyint(x[b * block + i] * id);
    }
    return out;
}

int act_block(GgmlType t) {
    const bool k = t == GgmlType::Q4_K || t == GgmlType::Q5_K || t == GgmlType::Q6_K;
    return k && active_kernels().kquant_rows ? 256 : 32;
}

double nmse(const std::vector<float>& y, const std::vector<double>& ref) {
    double e = 0, s = 0;
    for (size_t i = 0; i < y.size(); ++i) {
        e += (y[i] - ref[i]) * (y[i] - ref[i]);
        s += ref[i] * ref[i];
    }
    return e / s;
}

// Runs matmul and checks it against (a) exact double products with the float activations
// and (b) for quantized SIMD paths, double products with Q8-rounded activations, which the
// kernels should match up to float accumulation.
void check(ThreadPool& pool, GgmlType t, int64_t rows, int64_t cols, int n_tokens,
           const std::string& isa) {
    SCOPED_TRACE(std::string(type_name(t)) + " " + std::to_string(rows) + "x" +
                 std::to_string(cols) + " tokens=" + std::to_string(n_tokens) + " isa=" + isa +
                 " threads=" + std::to_string(pool.size()));
    Matrix m = random_matrix(t, rows, cols, 1000 * rows + cols);
    std::vector<float> x = random_x(cols * n_tokens, rows + 7 * cols + n_tokens);
    std::vector<float> y(rows * n_tokens, NAN);
    MatmulScratch scratch;
    matmul(pool, m.view(), x.data(), n_tokens, y.data(), scratch);

    std::vector<double> ref(y.size()), ref_q8(y.size());
    std::vector<float> wrow(cols);
    for (int64_t r = 0; r < rows; ++r) {
        get_row(m.view(), r, wrow.data());
        for (int tok = 0; tok < n_tokens; ++tok) {
            const float* xt = x.data() + tok * cols;
            std::vector<double> xq =
                is_float(t) ? std::vector<double>() : q8_round_trip(xt, cols, act_block(t));
            double s = 0, sq = 0;
            for (int64_t c = 0; c < cols; ++c) {
                s += double(wrow[c]) * xt[c];
                if (!xq.empty()) sq += double(wrow[c]) * xq[c];
            }
            ref[tok * rows + r] = s;
            ref_q8[tok * rows + r] = sq;
        }
    }
    // The portable path dequantizes to floats, so it is as exact as the float types.
    const bool q8 = !is_float(t) && isa != "portable";
    double tol = t == GgmlType::F32 ? 1e-10 : !q8 ? 1e-6 : 1e-4;
    // Activation rounding error relative to a single dot product can be large when that dot
    // happens to be small; with few outputs only the Q8-rounded reference is meaningful.
    if (!q8 || y.size() >= 16) EXPECT_LT(nmse(y, ref), tol);
    if (q8) EXPECT_LT(nmse(y, ref_q8), 1e-10);
}

class MatmulIsa : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        std::string got = select_isa(GetParam().c_str());
        if (got.rfind(GetParam(), 0) != 0) GTEST_SKIP() << "CPU lacks " << GetParam();
        ASSERT_STREQ(isa_name(), got.c_str());
    }
    void TearDown() override { select_isa(nullptr); }
};

TEST_P(MatmulIsa, AllTypesAndShapes) {
    ThreadPool pool1(1), pool3(3);
    for (GgmlType t : kTypes) {
        const bool k = type_traits(t)->block_elems == 256;
        // Columns: K-quants need multiples of 256; legacy ones get a partial 8-block group;
        // float types a tail that is not a multiple of the vector width.
        std::vector<int64_t> cols =
            k ? std::vector<int64_t>{256, 768} : std::vector<int64_t>{96, 512};
        if (is_float(t)) cols.push_back(100);
        for (int64_t c : cols)
            for (int64_t rows : {1, 37, 130})
                for (int nt : {1, 3, 17}) {
                    check(pool3, t, rows, c, nt, GetParam());
                    if (rows == 37) check(pool1, t, rows, c, nt, GetParam());
                }
    }
}

INSTANTIATE_TEST_SUITE_P(Isa, MatmulIsa, ::testing::Values("portable", "avx2", "avx512"));

TEST(Matmul, IsaSelection) {
    EXPECT_STREQ(select_isa("portable"), "portable");
    EXPECT_STREQ(isa_name(), "portable");
    select_isa(nullptr);
    std::string best = isa_name();
    EXPECT_TRUE(best == "portable" || best == "avx2" || best == "avx512_vnni") << best;
}

TEST(Matmul, GetRowMatchesDequantize) {
    for (GgmlType t : kTypes) {
        Matrix m = random_matrix(t, 5, 256, 9);
        std::vector<float> a(256), b(256);
        get_row(m.view(), 3, a.data());
        dequantize_row(t, m.data.data() + 3 * m.view().row_stride, b.data(), 256);
        EXPECT_EQ(a, b) << type_name(t);
    }
}

// Weight rows with padding between them (row_stride larger than a row).
TEST(Matmul, RowStride) {
    ThreadPool pool(2);
    for (GgmlType t : {GgmlType::Q4_0, GgmlType::F16, GgmlType::Q6_K}) {
        Matrix m = random_matrix(t, 20, 256, 3);
        const size_t rb = m.view().row_stride, stride = rb + 64;
        std::vector<uint8_t> padded(stride * 20, 0xFF);
        for (int r = 0; r < 20; ++r) std::memcpy(&padded[r * stride], &m.data[r * rb], rb);
        WeightView pv = m.view();
        pv.data = padded.data();
        pv.row_stride = stride;
        std::vector<float> x = random_x(256 * 2, 5), y1(40), y2(40);
        MatmulScratch s;
        matmul(pool, m.view(), x.data(), 2, y1.data(), s);
        matmul(pool, pv, x.data(), 2, y2.data(), s);
        EXPECT_EQ(y1, y2) << type_name(t);
    }
}

// matmul_many (Q/K/V, gate/up in one pass) gives each matrix exactly what matmul alone gives:
// mixed kernel paths (per-32, K-quant, float, packed) sharing one input, decode and prefill,
// and a skipped empty view.
TEST(Matmul, ManyEqualsOneByOne) {
    ThreadPool pool(2);
    const int64_t cols = 512;
    const Matrix q4 = random_matrix(GgmlType::Q4_0, 37, cols, 1);
    const Matrix q6k = random_matrix(GgmlType::Q6_K, 8, cols, 2);
    const Matrix f16 = random_matrix(GgmlType::F16, 21, cols, 3);
    const Matrix q8 = random_matrix(GgmlType::Q8_0, 64, cols, 4);
    const Matrix* mats[] = {&q4, &q6k, &f16, &q8};
    // Q4_0/Q8_0 also in the layout they are packed into where the kernels have one.
    std::vector<std::vector<uint8_t>> packed_bufs;
    std::vector<WeightView> views;
    for (const Matrix* m : mats) {
        WeightView v = m->view();
        if (should_pack(v)) {
            packed_bufs.emplace_back(m->data.size() + 64);
            auto* dst = reinterpret_cast<uint8_t*>(
                (reinterpret_cast<uintptr_t>(packed_bufs.back().data()) + 63) / 64 * 64);
            v = pack_weight(pool, v, dst);
        }
        views.push_back(v);
    }
    const WeightView empty{};
    for (int n : {1, 5}) {
        const std::vector<float> x = random_x(cols * n, 7 + n);
        std::vector<std::vector<float>> one(4), many(4);
        MatmulScratch s;
        for (int i = 0; i < 4; ++i) {
            one[i].assign(size_t(views[i].rows) * n, 0.0f);
            many[i].assign(size_t(views[i].rows) * n, -1.0f);
            matmul(pool, views[i], x.data(), n, one[i].data(), s);
        }
        const MatmulOut outs[] = {{&views[0], many[0].data()},
                                  {&views[1], many[1].data()},
                                  {&empty, nullptr},
                                  {&views[2], many[2].data()}};
        matmul_many(pool, outs, x.data(), n, s);
        const MatmulOut rest[] = {{&views[3], many[3].data()}};
        matmul_many(pool, rest, x.data(), n, s);
        for (int i = 0; i < 4; ++i)
            EXPECT_EQ(one[i], many[i]) << type_name(views[i].type) << " n=" << n;
    }
}

// ---- throughput (not run in CI) ----

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void bench_decode(GgmlType t, int threads) {
    // Enough distinct matrices (>= 640 MB) that they cannot stay in a large last-level cache.
    const int64_t rows = 2048, cols = 5632;
    const double mat_bytes = double(row_bytes(*type_traits(t), cols)) * rows;
    const int n_mats = int(640e6 / mat_bytes) + 1;
    std::vector<Matrix> mats;
    for (int i = 0; i < n_mats; ++i) mats.push_back(random_matrix(t, rows, cols, i));
    std::vector<float> x = random_x(cols * 64, 1), y(rows * 64);
    ThreadPool pool(threads);
    MatmulScratch s;
    for (auto& m : mats) matmul(pool, m.view(), x.data(), 1, y.data(), s);
    int iters = 0;
    auto t0 = std::chrono::steady_clock::now();
    do {
        for (auto& m : mats) matmul(pool, m.view(), x.data(), 1, y.data(), s);
        ++iters;
    } while (seconds_since(t0) < 2.0);
    double sec = seconds_since(t0);
    double bytes = double(mats[0].data.size()) * n_mats * iters;
    // Prefill-shaped: 64 tokens against one matrix.
    int piters = 0;
    auto p0 = std::chrono::steady_clock::now();
    do {
        matmul(pool, mats[piters % n_mats].view(), x.data(), 64, y.data(), s);
        ++piters;
    } while (seconds_since(p0) < 2.0);
    double psec = seconds_since(p0);
    std::printf(
        "%-5s %-12s threads=%d  decode %.2f GB/s (%.1f us/matvec)  prefill64 %.1f GFLOP/s\n",
        std::string(type_name(t)).c_str(), isa_name(), threads, bytes / sec / 1e9,
        sec / (n_mats * iters) * 1e6, 2.0 * rows * cols * 64 * piters / psec / 1e9);
}

TEST(MatmulBench, DISABLED_DecodeThroughput) {
    // Reference: streaming read bandwidth of a 1 GB buffer on 1 and 2 threads.
    std::vector<uint64_t> big(size_t(1) << 27, 1);
    for (int threads : {1, 2}) {
        ThreadPool pool(threads);
        std::atomic<uint64_t> sum{0};
        auto t0 = std::chrono::steady_clock::now();
        for (int k = 0; k < 4; ++k)
            pool.parallel_for(threads, [&](int task, int) {
                size_t n = big.size() / threads;
                uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
                for (size_t i = task * n; i < (task + 1) * n; i += 4) {
                    s0 += big[i];
                    s1 += big[i + 1];
                    s2 += big[i + 2];
                    s3 += big[i + 3];
                }
                sum += s0 + s1 + s2 + s3;
            });
        std::printf("read bandwidth (%d threads): %.2f GB/s [%llu]\n", threads,
                    4.0 * big.size() * 8 / seconds_since(t0) / 1e9, (unsigned long long)sum.load());
    }
    big = {};
    for (GgmlType t :
         {GgmlType::Q4_0, GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::F16})
        for (int threads : {1, 2}) bench_decode(t, threads);
}

}  // namespace
