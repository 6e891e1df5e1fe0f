// The CPU's elementwise and attention ops of the model families, against direct float64
// formulas written here from their definitions.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "cpu/ops.h"
#include "cpu/threadpool.h"

namespace ember::cpu {
namespace {

std::vector<float> random_vec(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> d(lo, hi);
    std::vector<float> v(n);
    for (float& x : v) x = d(rng);
    return v;
}

// Pair i of a head: (2i, 2i+1) adjacent, or (i, i + n_rot/2) for NEOX.
void rope_reference(std::vector<double>& x, int n_heads, int head_dim, int pos, const RopeSpec& s) {
    const int half = s.n_rot / 2;
    for (int h = 0; h < n_heads; h++)
        for (int i = 0; i < half; i++) {
            double theta =
                pos * double(s.freq_scale) * std::pow(double(s.freq_base), -2.0 * i / s.n_rot);
            if (s.freq_factors) theta /= s.freq_factors[i];
            const int a = h * head_dim + (s.neox ? i : 2 * i);
            const int b = s.neox ? a + half : a + 1;
            const double xa = x[a], xb = x[b];
            x[a] = xa * std::cos(theta) - xb * std::sin(theta);
            x[b] = xa * std::sin(theta) + xb * std::cos(theta);
        }
}

void expect_rope_matches(const RopeSpec& s, int n_heads, int head_dim, int pos) {
    auto x = random_vec(size_t(n_heads) * head_dim, 7 + pos);
    std::vector<double> want(x.begin(), x.end());
    rope_reference(want, n_heads, head_dim, pos, s);
    rope(x.data(), n_heads, head_dim, pos, s);
    for (size_t i = 0; i < x.size(); i++) EXPECT_NEAR(x[i], want[i], 1e-6) << "element " << i;
}

TEST(Ops, RopeNeoxRotatesHalves) {
    RopeSpec s;
    s.n_rot = 16;
    s.neox = true;
    expect_rope_matches(s, 3, 16, 5);
    // Pair 0 is (x[0], x[8]): with only x[0] set, rope moves part of it into x[8], not x[1].
    std::vector<float> x(16, 0.0f);
    x[0] = 1.0f;
    rope(x.data(), 1, 16, 1, s);
    EXPECT_NEAR(x[0], std::cos(1.0), 1e-6);
    EXPECT_NEAR(x[8], std::sin(1.0), 1e-6);
    EXPECT_EQ(x[1], 0.0f);
}

TEST(Ops, RopeNormRotatesAdjacentPairs) {
    RopeSpec s;
    s.n_rot = 16;
    s.freq_base = 500000.0f;
    expect_rope_matches(s, 2, 16, 9);
}

TEST(Ops, PartialRopeLeavesTheRestOfTheHead) {
    for (bool neox : {false, true}) {
        RopeSpec s;
        s.n_rot = 8;
        s.neox = neox;
        expect_rope_matches(s, 2, 24, 11);
        auto x = random_vec(48, 3);
        const auto before = x;
        rope(x.data(), 2, 24, 11, s);
        for (int h = 0; h < 2; h++)
            for (int d = 8; d < 24; d++) EXPECT_EQ(x[h * 24 + d], before[h * 24 + d]) << d;
    }
}

TEST(Ops, RopeLinearScalingDividesPositions) {
    RopeSpec scaled;
    scaled.n_rot = 32;
    scaled.neox = true;
    scaled.freq_scale = 0.125f;  // factor 8
    RopeSpec plain = scaled;
    plain.freq_scale = 1.0f;
    auto a = random_vec(32, 5), b = a;
    rope(a.data(), 1, 32, 16, scaled);
    rope(b.data(), 1, 32, 2, plain);
    for (int i = 0; i < 32; i++) EXPECT_NEAR(a[i], b[i], 1e-6);
    expect_rope_matches(scaled, 1, 32, 37);
}

TEST(Ops, RopeFrequencyFactorsDivideTheAngles) {
    const std::vector<float> ff = {1.0f, 2.0f, 4.0f, 8.0f};
    RopeSpec s;
    s.n_rot = 8;
    s.freq_factors = ff.data();
    expect_rope_matches(s, 2, 8, 13);
}

TEST(Ops, GeluTanhMul) {
    auto gate = random_vec(257, 1, -6.0f, 6.0f), up = random_vec(257, 2);
    std::vector<float> out(257);
    gelu_tanh_mul(gate.data(), up.data(), out.data(), 257);
    for (size_t i = 0; i < out.size(); i++) {
        const double x = gate[i];
        const double g =
            0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
        EXPECT_NEAR(out[i], g * up[i], 1e-6) << "x = " << x;
    }
    // Known values of the tanh approximation (not erf GELU: 0.841345 at 1).
    const float one = 1.0f, minus = -1.0f, u = 1.0f;
    float r;
    gelu_tanh_mul(&one, &u, &r, 1);
    EXPECT_NEAR(r, 0.8411920, 1e-6);
    gelu_tanh_mul(&minus, &u, &r, 1);
    EXPECT_NEAR(r, -0.1588080, 1e-6);
}

TEST(Ops, SoftcapBoundsValues) {
    std::vector<float> x = {0.0f, 1.0f, -2.0f, 30.0f, -1000.0f};
    softcap(x.data(), int(x.size()), 3.0f);
    const std::vector<float> in = {0.0f, 1.0f, -2.0f, 30.0f, -1000.0f};
    for (size_t i = 0; i < x.size(); i++) EXPECT_NEAR(x[i], 3.0 * std::tanh(in[i] / 3.0), 1e-6);
    EXPECT_LE(x[3], 3.0f);
    EXPECT_GE(x[4], -3.0f);
}

TEST(Ops, ScaleInplace) {
    std::vector<float> x = {1.0f, -2.0f, 0.5f};
    scale_inplace(x.data(), 3, std::sqrt(96.0f));
    EXPECT_EQ(x[1], -2.0f * std::sqrt(96.0f));
}

// Attention written out in float64: score = scale q.k, soft-capped, masked causally and by
// the window; softmax; weighted sum of v.
std::vector<double> attention_reference(const std::vector<float>& q, const std::vector<float>& k,
                                        const std::vector<float>& v, int n_tokens, int pos0,
                                        const AttentionSpec& a) {
    const int QD = a.n_head * a.head_dim, KVD = a.n_head_kv * a.head_dim;
    std::vector<double> out(size_t(n_tokens) * QD, 0.0);
    for (int t = 0; t < n_tokens; t++)
        for (int h = 0; h < a.n_head; h++) {
            const int kvh = h / (a.n_head / a.n_head_kv), i = pos0 + t;
            std::vector<double> s;
            std::vector<int> keys;
            for (int j = 0; j <= i; j++) {
                if (a.window > 0 && !(i - a.window < j)) continue;
                double d = 0.0;
                for (int e = 0; e < a.head_dim; e++)
                    d += double(q[t * QD + h * a.head_dim + e]) * k[j * KVD + kvh * a.head_dim + e];
                d *= a.scale;
                if (a.softcap > 0) d = a.softcap * std::tanh(d / a.softcap);
                s.push_back(d);
                keys.push_back(j);
            }
            double mx = -INFINITY, sum = 0.0;
            for (double x : s) mx = std::max(mx, x);
            for (double& x : s) sum += (x = std::exp(x - mx));
            for (size_t p = 0; p < keys.size(); p++)
                for (int e = 0; e < a.head_dim; e++)
                    out[t * QD + h * a.head_dim + e] +=
                        s[p] / sum * v[keys[p] * KVD + kvh * a.head_dim + e];
        }
    return out;
}

TEST(Ops, AttentionWindowAndSoftcap) {
    ThreadPool pool(2);
    for (int window : {0, 1, 3, 8})
        for (float cap : {0.0f, 3.0f}) {
            SCOPED_TRACE("window " + std::to_string(window) + ", cap " + std::to_string(cap));
            AttentionSpec a;
            a.n_head = 4;
            a.n_head_kv = 2;
            a.head_dim = 16;
            a.scale = 0.3f;  // not 1/sqrt(head_dim): the scale is the caller's
            a.softcap = cap;
            a.window = window;
            const int n_tokens = 5, pos0 = 7, n_ctx = pos0 + n_tokens;
            auto q = random_vec(size_t(n_tokens) * 64, 11, -2, 2);
            auto k = random_vec(size_t(n_ctx) * 32, 12, -2, 2);
            auto v = random_vec(size_t(n_ctx) * 32, 13);
            std::vector<float> out(size_t(n_tokens) * 64), scratch(size_t(pool.size()) * n_ctx);
            attention(pool, q.data(), k.data(), v.data(), out.data(), n_tokens, pos0, a,
                      scratch.data());
            const auto want = attention_reference(q, k, v, n_tokens, pos0, a);
            for (size_t i = 0; i < out.size(); i++) EXPECT_NEAR(out[i], want[i], 1e-5) << i;
        }
}

}  // namespace
}  // namespace ember::cpu
