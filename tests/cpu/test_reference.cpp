// Every ISA level's matmul, on every weight type and both layouts, against a float64
// reference: the dequantized weights times the float activations, summed in double.
//
// The SIMD kernels for quantized weights round the activations to 8 bits per block of 32
// (256 for K-quants where the set has kquant_rows; scale d = max|x| / 127, round to nearest), so
// they may differ from the reference by the rounding error e_c of each activation, |e_c| <= d/2.
// For output y = sum_c w_c x_c that gives
//   per output:  |y - ref| <= sum_c |w_c| d(c) / 2 + F                      (a hard bound)
//   in total:    sum (y - ref)^2 <= 2 * sum_c w_c^2 d(c)^2 / 12 + sum F^2   (twice the
//                variance of uniform rounding errors, summed over all outputs)
// where F bounds float32 accumulation: (cols / 8 + 64) ulps of sum_c |w_c x_c| (8-lane
// sums of cols / 8 terms, then the lane sum and per-block scale products), with the block's
// largest |w| standing in for |w| where kernels apply a block minimum separately. Paths that
// compute in float (portable, float weights) get F alone. A kernel that saturates, drops
// bits or rounds the activations worse than to nearest breaks one of these bounds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
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

// How the activations look. Llm: Gaussian with a few outlier channels 25x larger, as hidden
// states of real models have. Extreme: every element at its block's maximum magnitude, so
// every 8-bit activation is +-127: token 0 all positive, the others random signs. With
// Extreme, quantized weights are set to their extreme quants (see extreme_weights), so
// the integer sums reach their largest values and any 16-bit saturation shows.
enum class Acts { Llm, Extreme };

std::vector<float> make_acts(Acts kind, int64_t cols, int n_tokens, uint64_t seed) {
    std::mt19937 rng{uint32_t(seed)};
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(size_t(cols) * n_tokens);
    for (int t = 0; t < n_tokens; ++t)
        for (int64_t c = 0; c < cols; ++c) {
            float& v = x[size_t(t) * cols + c];
            if (kind == Acts::Llm)
                v = normal(rng) * (c % 97 == 13 ? 25.0f : 1.0f);
            else
                v = t == 0 || (rng() & 1) ? 0.75f : -0.75f;
        }
    return x;
}

// Q8_0 rows of all 127 (even rows) or all -128 (odd rows): |w| * |a| pairs of 127 * 127 and
// 128 * 127; Q4_0 rows of all 15 nibbles (read unsigned: 15 * 127 per element); K-quants at
// their largest quants and scales.
void extreme_weights(GgmlType t, std::vector<uint8_t>& data, int64_t rows, uint64_t rb) {
    for (int64_t r = 0; r < rows; ++r) {
        uint8_t* row = data.data() + r * rb;
        if (t == GgmlType::Q8_0) {
            for (uint64_t b = 0; b < rb / sizeof(BlockQ8_0); ++b)
                std::memset(row + b * sizeof(BlockQ8_0) + 2, r % 2 ? 0x80 : 0x7F, 32);
        } else if (t == GgmlType::Q4_0) {
            for (uint64_t b = 0; b < rb / sizeof(BlockQ4_0); ++b)
                std::memset(row + b * sizeof(BlockQ4_0) + 2, 0xFF, 16);
        } else if (t == GgmlType::Q4_K || t == GgmlType::Q5_K) {
            // Every scale and min 63, every quant 15 (31): the largest integer super-block sums.
            const uint64_t bb = t == GgmlType::Q4_K ? sizeof(BlockQ4_K) : sizeof(BlockQ5_K);
            for (uint64_t b = 0; b < rb / bb; ++b) std::memset(row + b * bb + 4, 0xFF, bb - 4);
        } else if (t == GgmlType::Q6_K) {
            // Quants 63 (31 after the offset), odd rows' scales -128, even rows' 127.
            for (uint64_t b = 0; b < rb / sizeof(BlockQ6_K); ++b) {
                uint8_t* blk = row + b * sizeof(BlockQ6_K);
                std::memset(blk, 0xFF, 192);
                std::memset(blk + 192, r % 2 ? 0x80 : 0x7F, 16);
            }
        }
    }
}

struct Weights {
    GgmlType type;
    int64_t rows, cols;
    uint64_t rb;
    std::vector<uint8_t> ggml;  // GGUF layout
    uint8_t* packed = nullptr;  // Packed layout (Q4_0, Q8_0), 64-byte aligned
    std::vector<double> deq;    // rows x cols, the dequantized values
    std::vector<double> bmax;   // rows x cols / 32, the largest |w| of each block
    Weights() = default;
    Weights(const Weights&) = delete;
    Weights& operator=(const Weights&) = delete;
    ~Weights() { std::free(packed); }
    WeightView view(WeightLayout layout) const {
        if (layout == WeightLayout::Packed)
            return {type, rows, cols, packed, rb, WeightLayout::Packed};
        return {type, rows, cols, ggml.data(), rb, WeightLayout::Ggml};
    }
};

void make_weights(Weights& w, ThreadPool& pool, GgmlType t, int64_t rows, int64_t cols, Acts kind,
                  uint64_t seed) {
    w.type = t;
    w.rows = rows;
    w.cols = cols;
    w.rb = row_bytes(*type_traits(t), uint64_t(cols));
    w.ggml.resize(w.rb * rows);
    for (int64_t r = 0; r < rows; ++r)
        fill_random(t, w.ggml.data() + r * w.rb, cols, seed + r, 1.0f / std::sqrt(float(cols)));
    if (kind == Acts::Extreme) extreme_weights(t, w.ggml, rows, w.rb);
    std::vector<float> row(cols);
    w.deq.resize(size_t(rows) * cols);
    w.bmax.assign(size_t(rows) * (cols / 32), 0.0);
    for (int64_t r = 0; r < rows; ++r) {
        dequantize_row(t, w.ggml.data() + r * w.rb, row.data(), cols);
        for (int64_t c = 0; c < cols; ++c) {
            w.deq[r * cols + c] = row[c];
            double& m = w.bmax[r * (cols / 32) + c / 32];
            m = std::max(m, std::fabs(double(row[c])));
        }
    }
    if (t == GgmlType::Q4_0 || t == GgmlType::Q8_0) {
        w.packed = static_cast<uint8_t*>(std::aligned_alloc(64, (w.rb * rows + 63) / 64 * 64));
        pack_weight(pool, w.view(WeightLayout::Ggml), w.packed);
    }
}

// Whether the active kernels round the activations to 8 bits for this weight.
bool quantizes_activations(const WeightView& w) {
    if (is_float(w.type)) return false;
    const KernelSet& k = active_kernels();
    return w.layout == WeightLayout::Packed ? k.packed_rows != nullptr : k.quant_rows != nullptr;
}

struct Outcome {
    double err2 = 0, bound2 = 0;  // summed squared error and its allowed value
    double worst = 0;             // the largest |error| / per-output bound
    std::string worst_at;
};

Outcome compare(const Weights& w, WeightLayout layout, const std::vector<float>& x, int n_tokens,
                ThreadPool& pool) {
    const WeightView v = w.view(layout);
    const bool q8 = quantizes_activations(v);
    // Elements per activation scale: K-quants' integer kernels take one per 256 (ActQ8K).
    const bool k_quant =
        w.type == GgmlType::Q4_K || w.type == GgmlType::Q5_K || w.type == GgmlType::Q6_K;
    const int ab = k_quant && active_kernels().kquant_rows ? 256 : 32;
    std::vector<float> y(size_t(w.rows) * n_tokens, NAN);
    MatmulScratch scratch;
    matmul(pool, v, x.data(), n_tokens, y.data(), scratch);

    const int64_t nb = w.cols / 32;
    const double ulp = std::ldexp(1.0, -24), ulps = double(w.cols / 8 + 64);
    Outcome o;
    std::vector<double> half_step(nb);  // d / 2 of each activation block
    for (int t = 0; t < n_tokens; ++t) {
        const float* xt = x.data() + size_t(t) * w.cols;
        for (int64_t b = 0; b < nb; b += ab / 32) {
            float amax = 0;
            for (int i = 0; i < ab; ++i) amax = std::max(amax, std::fabs(xt[32 * b + i]));
            for (int64_t k = b; k < b + ab / 32; ++k)
                half_step[k] = q8 ? double(amax) / 127 / 2 : 0.0;
        }
        for (int64_t r = 0; r < w.rows; ++r) {
            const double* wr = w.deq.data() + r * w.cols;
            const double* bm = w.bmax.data() + r * nb;
            double ref = 0, round_max = 0, round_var = 0, mag = 0;
            for (int64_t c = 0; c < w.cols; ++c) {
                const double h = half_step[c / 32];
                ref += wr[c] * xt[c];
                round_max += std::fabs(wr[c]) * h;
                round_var += wr[c] * wr[c] * h * h / 3;  // (2h)^2 / 12
                mag += (q8 ? 2 * bm[c / 32] : std::fabs(wr[c])) * (std::fabs(xt[c]) + h);
            }
            const double f = ulps * ulp * mag;
            const double err = std::fabs(double(y[size_t(t) * w.rows + r]) - ref);
            o.err2 += err * err;
            o.bound2 += 2 * round_var + f * f;
            const double ratio = err / (round_max + f);
            if (!(ratio <= o.worst)) {  // NaN counts as worst
                o.worst = std::isnan(ratio) ? INFINITY : ratio;
                o.worst_at = "row " + std::to_string(r) + " token " + std::to_string(t) + ": y " +
                             std::to_string(y[size_t(t) * w.rows + r]) + " ref " +
                             std::to_string(ref);
            }
        }
    }
    return o;
}

class ReferenceIsa : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        std::string got = select_isa(GetParam().c_str());
        if (got.rfind(GetParam(), 0) != 0) GTEST_SKIP() << "CPU lacks " << GetParam();
    }
    void TearDown() override { select_isa(nullptr); }
};

TEST_P(ReferenceIsa, EveryTypeWithinActivationRounding) {
    ThreadPool pool(2);
    // 4,096 columns as in 7B models' projections; 2,816 = 11 x 256 leaves partial groups of
    // blocks (8 of 16 in the packed layout). 1 token takes the decode tiles, 6 the prefill
    // tiles and their remainder.
    for (GgmlType t : kTypes)
        for (int64_t cols : {4096, 2816})
            for (Acts kind : {Acts::Llm, Acts::Extreme}) {
                Weights w;
                make_weights(w, pool, t, 128, cols, kind, uint64_t(cols) * 31 + int(t));
                for (WeightLayout layout : {WeightLayout::Ggml, WeightLayout::Packed}) {
                    if (layout == WeightLayout::Packed && !w.packed) continue;
                    for (int nt : {1, 6}) {
                        SCOPED_TRACE(std::string(type_name(t)) + " cols " + std::to_string(cols) +
                                     (kind == Acts::Llm ? " llm" : " extreme") +
                                     (layout == WeightLayout::Packed ? " packed" : " ggml") +
                                     " tokens " + std::to_string(nt) + " isa " + isa_name());
                        std::vector<float> x = make_acts(kind, cols, nt, uint64_t(cols + nt));
                        const Outcome o = compare(w, layout, x, nt, pool);
                        EXPECT_LE(o.worst, 1.0) << o.worst_at;
                        EXPECT_LE(o.err2, o.bound2)
                            << "relative L2 error " << std::sqrt(o.err2 / o.bound2)
                            << " of the allowed";
                    }
                }
            }
}

INSTANTIATE_TEST_SUITE_P(Isa, ReferenceIsa, ::testing::Values("portable", "avx2", "avx512"));

}  // namespace
