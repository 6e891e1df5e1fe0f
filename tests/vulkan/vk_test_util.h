// Helpers shared by the Vulkan tests: the test device, host-visible buffers with guard regions,
// one-off recording, NMSE.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "quant/quant.h"
#include "vulkan/context.h"
#include "vulkan/ops.h"

namespace ember::vulkan::test {

// The device the tests use: $EMBER_VULKAN_TEST_DEVICE, else lavapipe ("llvmpipe").
inline std::string test_device() {
    const char* e = std::getenv("EMBER_VULKAN_TEST_DEVICE");
    return e && *e ? e : "llvmpipe";
}

// The ember-cli that tests run: $EMBER_CLI_PATH where set (a test binary carried to a machine
// without its build tree, with an ember-cli beside it), else the build's.
inline std::string cli() {
    const char* e = std::getenv("EMBER_CLI_PATH");
    return e && *e ? e : EMBER_CLI_PATH;
}

// Empty when a Vulkan device exists; otherwise why not (the test then skips).
std::string no_device_reason();

// A context on the test device shared by the op tests (no disk pipeline cache).
Context& shared_context();

#define EMBER_VK_REQUIRE_DEVICE()                                      \
    do {                                                               \
        std::string why = ::ember::vulkan::test::no_device_reason();   \
        if (!why.empty()) GTEST_SKIP() << "no Vulkan device: " << why; \
    } while (0)

// Fails the current test if the validation layer reported errors during it.
class VulkanTest : public ::testing::Test {
protected:
    void SetUp() override;
    void TearDown() override;
    uint64_t m_errors_before = 0;
};

constexpr uint32_t kGuardWords = 64;
constexpr uint32_t kSentinel = 0x7fc0dead;  // a NaN no op produces
// An F16 NaN: fills cache rows that an op must neither write nor read.
constexpr uint16_t kHalfNan = 0x7e00;

// An F16 K/V cache of n_kv rows of row_len values as a decode attention reads it: rows before
// `first` (outside the window) hold NaN, so reading one fails; with ring > 0 the rows are laid
// out as a ring of that many, row p % ring holding the latest position p that maps there (rows
// never written, NaN).
inline void hide_unread_cache_rows(std::vector<uint16_t>& kh, std::vector<uint16_t>& vh,
                                   int row_len, int first, int n_kv, int ring) {
    std::fill_n(kh.begin(), size_t(first) * row_len, kHalfNan);
    std::fill_n(vh.begin(), size_t(first) * row_len, kHalfNan);
    if (ring <= 0) return;
    std::vector<uint16_t> kring(size_t(ring) * row_len, kHalfNan), vring = kring;
    for (int p = std::max(0, n_kv - ring); p < n_kv; ++p) {
        std::copy_n(&kh[size_t(p) * row_len], row_len, &kring[size_t(p % ring) * row_len]);
        std::copy_n(&vh[size_t(p) * row_len], row_len, &vring[size_t(p % ring) * row_len]);
    }
    kh = std::move(kring), vh = std::move(vring);
}

// A host-visible storage buffer of n 32-bit words followed by a guard region.
class HostBuffer {
public:
    HostBuffer(Context& ctx, size_t n_words) : m_n(n_words) {
        auto b = Buffer::create(ctx.device(), (n_words + kGuardWords) * 4, BufferKind::HostStorage);
        EXPECT_TRUE(b.ok()) << (b.ok() ? "" : b.error().message);
        if (b.ok()) m_buf = std::move(b).value();
        auto* w = words();
        for (size_t i = 0; i < n_words + kGuardWords; ++i) w[i] = kSentinel;
    }
    uint32_t* words() { return static_cast<uint32_t*>(m_buf.mapped()); }
    float* f32() { return reinterpret_cast<float*>(words()); }
    uint16_t* f16() { return reinterpret_cast<uint16_t*>(words()); }
    BufferRange range() const { return m_buf.range(0, m_n * 4); }
    void fill(const void* src, size_t bytes) { std::memcpy(words(), src, bytes); }
    bool guard_intact() {
        for (size_t i = m_n; i < m_n + kGuardWords; ++i)
            if (words()[i] != kSentinel) return false;
        return true;
    }

private:
    Buffer m_buf;
    size_t m_n;
};

// Records with fn into a one-off command buffer, submits, waits.
inline Status run_ops(Context& ctx, const Plan& plan, const std::function<Status(Recorder&)>& fn) {
    EMBER_ASSIGN_OR_RETURN(VkCommandBuffer cmd, ctx.begin_oneoff());
    Recorder rec(ctx, cmd, plan);
    Status st = fn(rec);
    rec.barrier_to_host();
    Status end = ctx.end_oneoff_and_wait(cmd);
    if (!st.ok()) return st;
    return end;
}

// With the plan make_plan() gives the context's adapter.
inline Status run_ops(Context& ctx, const std::function<Status(Recorder&)>& fn) {
    return run_ops(ctx, make_plan(ctx.adapter()), fn);
}

inline double nmse(const float* got, const float* want, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; ++i) {
        double d = double(got[i]) - double(want[i]);
        num += d * d;
        den += double(want[i]) * want[i];
    }
    return den > 0 ? num / den : num;
}

// n F16 values as floats.
inline std::vector<float> floats_of_f16(const uint16_t* h, size_t n) {
    std::vector<float> f(n);
    for (size_t i = 0; i < n; ++i) f[i] = fp16_to_fp32(h[i]);
    return f;
}

inline std::vector<float> random_floats(size_t n, uint64_t seed, float lo = -1.0f,
                                        float hi = 1.0f) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> d(lo, hi);
    std::vector<float> v(n);
    for (auto& x : v) x = d(rng);
    return v;
}

// A decode attention's q/k norms left to it (DecodeAttentionFamily::qk_norm), for a test that
// wants it to see the query q and the step's key (row `row` of the F16 cache kh, n_head_kv *
// head_dim halfs): the heads' sums of squares in head_dim / 2 random pieces, q and the key times
// the rms those give (what the Q/K/V leaves: not yet divided), and the key's cache row set to NaN,
// which the attention must fill with the key.
class DeferredQkNorm {
public:
    DeferredQkNorm(Context& ctx, const std::vector<float>& q, std::vector<uint16_t>& kh, size_t row,
                   int n_head, int n_head_kv, int head_dim, uint64_t seed)
        : m_q(q),
          m_kv_dim(size_t(n_head_kv) * head_dim),
          m_row(row),
          m_want(kh.begin() + row * m_kv_dim, kh.begin() + (row + 1) * m_kv_dim),
          m_key_buf(ctx, m_kv_dim),
          m_ss_buf(ctx, size_t(n_head + n_head_kv) * head_dim / 2) {
        const auto ss = random_floats(size_t(n_head + n_head_kv) * head_dim / 2, seed, 0.5f, 4.0f);
        std::vector<float> key = floats_of_f16(m_want.data(), m_kv_dim);
        for (int s = 0; s < n_head + n_head_kv; ++s) {
            double t = 0;
            for (int i = 0; i < head_dim / 2; ++i) t += ss[size_t(s) * head_dim / 2 + i];
            const double rms = std::sqrt(t / head_dim + kEps);
            float* v =
                s < n_head ? &m_q[size_t(s) * head_dim] : &key[size_t(s - n_head) * head_dim];
            for (int d = 0; d < head_dim; ++d) v[d] = float(v[d] * rms);
        }
        m_key_buf.fill(key.data(), key.size() * 4);
        m_ss_buf.fill(ss.data(), ss.size() * 4);
        std::fill_n(kh.begin() + row * m_kv_dim, m_kv_dim, kHalfNan);
    }
    // What the q buffer holds.
    const std::vector<float>& q() const { return m_q; }
    void set(DecodeAttentionFamily& f) {
        f.qk_norm = true, f.k_new = m_key_buf.range(), f.qk_ss = m_ss_buf.range(), f.qk_eps = kEps;
    }
    // NMSE of the key the attention stored in the cache `cache` against the one it should see.
    double stored_key_nmse(const uint16_t* cache) const {
        const std::vector<float> got = floats_of_f16(cache + m_row * m_kv_dim, m_kv_dim),
                                 want = floats_of_f16(m_want.data(), m_kv_dim);
        return nmse(got.data(), want.data(), m_kv_dim);
    }

private:
    static constexpr float kEps = 1e-6f;
    std::vector<float> m_q;
    size_t m_kv_dim, m_row;
    std::vector<uint16_t> m_want;  // the key as the cache held it
    HostBuffer m_key_buf, m_ss_buf;
};

}  // namespace ember::vulkan::test
