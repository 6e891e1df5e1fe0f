// Elementwise, normalization, rope with the KV store, attention and argmax against the CPU ops.
#include <algorithm>
#include <string>
#include <tuple>

#include "cpu/ops.h"
#include "cpu/threadpool.h"
#include "quant/quant.h"
#include "vk_test_util.h"

namespace ember::vulkan::test {
namespace {

class Ops : public VulkanTest {
protected:
    void SetUp() override {
        VulkanTest::SetUp();
        if (!no_device_reason().empty()) GTEST_SKIP() << "no Vulkan device: " << no_device_reason();
    }
};

TEST_F(Ops, RmsNorm) {
    Context& ctx = shared_context();
    for (auto [n, rows] : {std::pair{64, 1}, {100, 3}, {4099, 2}}) {
        auto x = random_floats(size_t(n) * rows, 1 + n, -3, 3);
        auto w = random_floats(size_t(n), 2 + n);
        HostBuffer bx(ctx, x.size()), bw(ctx, w.size()), bo(ctx, x.size());
        bx.fill(x.data(), x.size() * 4);
        bw.fill(w.data(), w.size() * 4);
        ASSERT_TRUE(run_ops(ctx, [&](Recorder& r) {
                        return op_rms_norm(r, bx.range(), 0, bw.range(), bo.range(), 0, n, rows, n,
                                           1e-5f);
                    }).ok());
        std::vector<float> want(x.size());
        for (int r = 0; r < rows; ++r)
            cpu::rms_norm(&x[size_t(r) * n], w.data(), &want[size_t(r) * n], n, 1e-5f);
        EXPECT_LT(nmse(bo.f32(), want.data(), want.size()), 1e-10) << "n=" << n;
        EXPECT_TRUE(bo.guard_intact());
    }
}

TEST_F(Ops, RmsNormOfOneRowAtAnOffset) {
    Context& ctx = shared_context();
    const int n = 96;
    auto x = random_floats(size_t(n) * 3, 5);
    auto w = random_floats(size_t(n), 6);
    HostBuffer bx(ctx, x.size()), bw(ctx, w.size()), bo(ctx, size_t(n));
    bx.fill(x.data(), x.size() * 4);
    bw.fill(w.data(), w.size() * 4);
    ASSERT_TRUE(run_ops(ctx, [&](Recorder& r) {
                    return op_rms_norm(r, bx.range(), 2 * n, bw.range(), bo.range(), 0, n, 1, n,
                                       1e-6f);
                }).ok());
    std::vector<float> want(static_cast<size_t>(n));
    cpu::rms_norm(&x[2 * n], w.data(), want.data(), n, 1e-6f);
    EXPECT_LT(nmse(bo.f32(), want.data(), want.size()), 1e-10);
    EXPECT_TRUE(bo.guard_intact());
}

// The residual add fused with the norm after it, with F32 and F16 output; the F16 output of the
// plain norm and of SiLU*up (the tensor-core matmul's inputs).
TEST_F(Ops, AddRmsNormAndF16Outputs) {
    Context& ctx = shared_context();
    for (auto [n, rows] : {std::pair{64, 1}, {100, 3}, {4099, 2}}) {
        auto x = random_floats(size_t(n) * rows, 31 + n, -3, 3);
        auto res = random_floats(size_t(n) * rows, 32 + n, -3, 3);
        auto w = random_floats(size_t(n), 33 + n);
        std::vector<float> sum = x, want(x.size());
        cpu::add_inplace(sum.data(), res.data(), n * rows);
        for (int r = 0; r < rows; ++r)
            cpu::rms_norm(&sum[size_t(r) * n], w.data(), &want[size_t(r) * n], n, 1e-5f);
        for (bool f16 : {false, true}) {
            HostBuffer bx(ctx, x.size()), br(ctx, res.size()), bw(ctx, w.size()),
                bo(ctx, f16 ? (x.size() + 1) / 2 : x.size());
            bx.fill(x.data(), x.size() * 4);
            br.fill(res.data(), res.size() * 4);
            bw.fill(w.data(), w.size() * 4);
            ASSERT_TRUE(run_ops(ctx, [&](Recorder& r) {
                            return op_add_rms_norm(r, bx.range(), br.range(), bw.range(),
                                                   bo.range(), n, rows, 1e-5f, f16);
                        }).ok());
            EXPECT_LT(nmse(bx.f32(), sum.data(), sum.size()), 1e-12) << "n=" << n;
            const std::vector<float> got =
                f16 ? floats_of_f16(bo.f16(), want.size())
                    : std::vector<float>(bo.f32(), bo.f32() + want.size());
            // F16 output: rounding costs about 1e-7 of nmse.
            EXPECT_LT(nmse(got.data(), want.data(), want.size()), f16 ? 1e-6 : 1e-10)
                << "n=" << n << " f16 " << f16;
            EXPECT_TRUE(bx.guard_intact());
            EXPECT_TRUE(bo.guard_intact());

            if (!f16) continue;
            HostBuffer bn(ctx, (x.size() + 1) / 2);
            ASSERT_TRUE(run_ops(ctx, [&](Recorder& r) {
                            return op_rms_norm(r, br.range(), 0, bw.range(), bn.range(), 0, n, rows,
                                               n, 1e-5f, true);
                        }).ok());
            std::vector<float> norm(res.size());
            for (int r = 0; r < rows; ++r)
                cpu::rms_norm(&res[size_t(r) * n], w.data(), &norm[size_t(r) * n], n, 1e-5f);
            EXPECT_LT(nmse(floats_of_f16(bn.f16(), norm.size()).data(), norm.data(), norm.size()),
                      1e-6)
                << "n=" << n;
            EXPECT_TRUE(bn.guard_intact());

            HostBuffer bs(ctx, size_t(n + 1) / 2);
            ASSERT_TRUE(run_ops(ctx, [&](Recorder& r) {
                            return op_silu_mul(r, br.range(), bw.range(), bs.range(), uint32_t(n),
                                               true);
                        }).ok());
            std::vector<float> sm(size_t(n), 0.0f);
            cpu::silu_mul(res.data(), w.data(), sm.data(), n);
            EXPECT_LT(nmse(floats_of_f16(bs.f16(), size_t(n)).data(), sm.data(), size_t(n)), 1e-6)
                << "n=" << n;
            EXPECT_TRUE(bs.guard_intact());
        }
    }
}

// RoPE of a batch's Q and K in place, K and V stored as F16 at the step's positions: against
// the CPU's rope, and nothing written outside those positions.
void check_rope_kv(int n_tokens, int n_head, int n_head_kv, int head_dim, int n_rot, int pos0,
                   bool with_ff) {
    Context& ctx = shared_context();
    const int dq = n_head * head_dim, dkv = n_head_kv * head_dim, n_ctx = pos0 + n_tokens + 2;
    auto q = random_floats(size_t(n_tokens) * dq, 11 + pos0);
    auto k = random_floats(size_t(n_tokens) * dkv, 12 + pos0, -100, 100);
    auto v = random_floats(size_t(n_tokens) * dkv, 13 + pos0, -100, 100);
    auto ff = random_floats(size_t(n_rot / 2), 14, 1.0f, 4.0f);
    HostBuffer bq(ctx, q.size()), bk(ctx, k.size()), bv(ctx, v.size()), bff(ctx, ff.size()),
        bkc(ctx, size_t(n_ctx) * dkv / 2), bvc(ctx, size_t(n_ctx) * dkv / 2),
        step(ctx, 2 + size_t(n_tokens));
    bq.fill(q.data(), q.size() * 4);
    bk.fill(k.data(), k.size() * 4);
    bv.fill(v.data(), v.size() * 4);
    bff.fill(ff.data(), ff.size() * 4);
    std::fill(bkc.f16(), bkc.f16() + size_t(n_ctx) * dkv, uint16_t(0x7e00));
    std::fill(bvc.f16(), bvc.f16() + size_t(n_ctx) * dkv, uint16_t(0x7e00));
    step.words()[0] = uint32_t(pos0);
    step.words()[1] = uint32_t(n_tokens);
    ASSERT_TRUE(run_ops(ctx, [&](Recorder& r) {
                    return op_rope_kv_store(r, bq.range(), bk.range(), bv.range(), bkc.range(),
                                            bvc.range(), step.range(),
                                            with_ff ? bff.range() : BufferRange{}, n_tokens, n_head,
                                            n_head_kv, head_dim, n_rot, 10000.0f);
                }).ok());
    std::vector<float> wq = q, wk = k;
    for (int t = 0; t < n_tokens; ++t) {
        const float* f = with_ff ? ff.data() : nullptr;
        cpu::rope(&wq[size_t(t) * dq], n_head, head_dim, n_rot, pos0 + t, 10000.0f, f);
        cpu::rope(&wk[size_t(t) * dkv], n_head_kv, head_dim, n_rot, pos0 + t, 10000.0f, f);
    }
    const std::string what = "tokens " + std::to_string(n_tokens) + " heads " +
                             std::to_string(n_head) + "/" + std::to_string(n_head_kv) + " rot " +
                             std::to_string(n_rot) + " pos " + std::to_string(pos0);
    EXPECT_LT(nmse(bq.f32(), wq.data(), wq.size()), 1e-9) << what;
    EXPECT_LT(nmse(bk.f32(), wk.data(), wk.size()), 1e-9) << what;
    for (auto [cache, want, name] : {std::tuple{&bkc, &wk, "K"}, std::tuple{&bvc, &v, "V"}}) {
        for (int p = 0; p < n_ctx; ++p)
            for (int i = 0; i < dkv; ++i) {
                uint16_t got = cache->f16()[size_t(p) * dkv + i];
                if (p < pos0 || p >= pos0 + n_tokens) {
                    ASSERT_EQ(got, 0x7e00)
                        << name << " cache written at position " << p << ", " << what;
                } else {
                    float w = (*want)[size_t(p - pos0) * dkv + i];
                    // Rounding of the conversion is implementation-defined: within one
                    // half-precision ulp (and the rotation's own error).
                    ASSERT_NEAR(fp16_to_fp32(got), w, std::abs(w) / 1024.0f + 1e-3f)
                        << name << " cache at position " << p << ", " << what;
                }
            }
        EXPECT_TRUE(cache->guard_intact()) << name;
    }
    for (HostBuffer* b : {&bq, &bk}) EXPECT_TRUE(b->guard_intact());
}

TEST_F(Ops, RopeAndKvStore) {
    check_rope_kv(1, 4, 4, 64, 64, 0, false);
    check_rope_kv(3, 4, 2, 64, 64, 7, false);      // GQA
    check_rope_kv(5, 3, 3, 48, 32, 300, false);    // partial rotation
    check_rope_kv(2, 8, 2, 128, 128, 1000, true);  // frequency factors
    check_rope_kv(70, 6, 2, 64, 64, 20, false);    // several workgroups
}

TEST_F(Ops, SiluMulAndAdd) {
    Context& ctx = shared_context();
    for (uint32_t n : {1u, 1000u, 70001u}) {
        auto g = random_floats(n, n, -6, 6), u = random_floats(n, n + 1, -2, 2);
        HostBuffer bg(ctx, n), bu(ctx, n), bo(ctx, n);
        bg.fill(g.data(), n * 4);
        bu.fill(u.data(), n * 4);
        ASSERT_TRUE(run_ops(ctx, [&](Recorder& r) {
                        return op_silu_mul(r, bg.range(), bu.range(), bo.range(), n);
                    }).ok());
        std::vector<float> want(n);
        cpu::silu_mul(g.data(), u.data(), want.data(), int(n));
        EXPECT_LT(nmse(bo.f32(), want.data(), n), 1e-10) << n;
        EXPECT_TRUE(bo.guard_intact());

        ASSERT_TRUE(
            run_ops(ctx, [&](Recorder& r) { return op_add(r, bg.range(), bu.range(), n); }).ok());
        std::vector<float> sum = g;
        cpu::add_inplace(sum.data(), u.data(), int(n));
        EXPECT_LT(nmse(bg.f32(), sum.data(), n), 1e-12) << n;
        EXPECT_TRUE(bg.guard_intact());
    }
}

// n_tokens random queries at pos0 against random F16 keys and values on the device (seeds
// seed, seed + 1, seed + 2 offset by pos0), and the CPU's answer.
struct AttentionCase {
    AttentionCase(Context& ctx, int n_tokens, int pos0, int n_head, int n_head_kv, int head_dim,
                  uint64_t seed, float late_keys = 1)
        : s{n_tokens, n_head, n_head_kv, head_dim, 1.0f / std::sqrt(float(head_dim))},
          pos0(pos0),
          q(random_floats(size_t(n_tokens) * n_head * head_dim, seed + pos0, -2, 2)),
          k(f16(scaled_from(
              random_floats(size_t(pos0 + n_tokens) * n_head_kv * head_dim, seed + 1 + pos0, -2, 2),
              size_t(32) * n_head_kv * head_dim, late_keys))),
          v(f16(random_floats(size_t(pos0 + n_tokens) * n_head_kv * head_dim, seed + 2 + pos0, -2,
                              2))),
          bq(ctx, q.size()),
          bk(ctx, (k.size() + 1) / 2),
          bv(ctx, (v.size() + 1) / 2),
          bo(ctx, q.size()),
          step(ctx, 2 + size_t(n_tokens)) {
        bq.fill(q.data(), q.size() * 4);
        bk.fill(k.data(), k.size() * 2);
        bv.fill(v.data(), v.size() * 2);
        step.words()[0] = uint32_t(pos0);
        step.words()[1] = uint32_t(n_tokens);
        cpu::ThreadPool pool(1);
        want.resize(q.size());
        std::vector<float> scratch(size_t(pos0 + n_tokens) + 16);
        cpu::attention(pool, q.data(), k.data(), v.data(), want.data(), n_tokens, pos0, n_head,
                       n_head_kv, head_dim, scratch.data());
    }
    static std::vector<float> scaled_from(std::vector<float> f, size_t from, float by) {
        for (size_t i = from; i < f.size(); ++i) f[i] *= by;
        return f;
    }
    static std::vector<uint16_t> f16(const std::vector<float>& f) {
        std::vector<uint16_t> h(f.size());
        for (size_t i = 0; i < f.size(); ++i) h[i] = fp32_to_fp16(f[i]);
        return h;
    }
    double error() { return nmse(bo.f32(), want.data(), want.size()); }
    std::string describe() const {
        return "tokens " + std::to_string(s.n_tokens) + " pos0 " + std::to_string(pos0) +
               " heads " + std::to_string(s.n_head) + "/" + std::to_string(s.n_head_kv) + " dim " +
               std::to_string(s.head_dim);
    }

    // Whether some query's score beats the maximum of its first `tile` positions by more than
    // `margin`: the tensor-core path then rescales its output (attention_coopmat.comp, LAZY).
    bool scores_jump(int tile, float margin) const {
        const int hd = s.head_dim, g = s.n_head / s.n_head_kv;
        for (int t = 0; t < s.n_tokens; ++t)
            for (int h = 0; h < s.n_head; ++h) {
                float m = -1e30f;
                for (int j = 0; j <= pos0 + t; ++j) {
                    float dot = 0;
                    for (int d = 0; d < hd; ++d)
                        dot += q[(size_t(t) * s.n_head + h) * hd + d] *
                               fp16_to_fp32(k[(size_t(j) * s.n_head_kv + h / g) * hd + d]);
                    dot *= s.scale;
                    if (j < tile)
                        m = std::max(m, dot);
                    else if (dot > m + margin)
                        return true;
                }
            }
        return false;
    }

    AttentionShape s;
    int pos0;
    std::vector<float> q;
    std::vector<uint16_t> k, v;
    std::vector<float> want;
    HostBuffer bq, bk, bv, bo, step;
};

// op_attention on the case against the CPU's answer.
void expect_attention_matches(Context& ctx, AttentionCase& c) {
    ASSERT_TRUE(run_ops(ctx, [&](Recorder& r) {
                    return op_attention(r, c.bq.range(), c.bk.range(), c.bv.range(), c.bo.range(),
                                        c.step.range(), c.s);
                }).ok());
    // On the tensor cores Q and the probabilities are rounded to F16.
    const double tol = attention_on_tensor_cores(ctx.adapter(), c.s) ? 1e-5 : 1e-10;
    EXPECT_LT(c.error(), tol) << c.describe();
    EXPECT_TRUE(c.bo.guard_intact());
}

void check_attention(int n_tokens, int pos0, int n_head, int n_head_kv, int head_dim) {
    Context& ctx = shared_context();
    AttentionCase c(ctx, n_tokens, pos0, n_head, n_head_kv, head_dim, 31);
    expect_attention_matches(ctx, c);
}

TEST_F(Ops, AttentionPrefillCausal) {
    check_attention(5, 0, 4, 4, 64);
    check_attention(7, 3, 4, 2, 48);   // GQA, a head size that is not a power of two
    check_attention(70, 0, 2, 1, 32);  // more positions than one tile
    // Batches that take the tensor cores where there are some: query blocks of 64 (the last
    // partial, a subgroup's 16 too), key tiles of 32 after earlier positions (the last partial),
    // GQA, head sizes 32 to 128.
    check_attention(40, 0, 4, 2, 64);
    check_attention(70, 30, 8, 2, 128);
    check_attention(33, 5, 6, 3, 48);
    check_attention(16, 100, 4, 4, 32);
    check_attention(200, 17, 4, 1, 128);
}

// Keys past position 32 six times larger: many queries' maxima grow past their first tile's by
// more than the tensor-core path lets them before it rescales the output it has summed.
TEST_F(Ops, AttentionPrefillScoresGrow) {
    Context& ctx = shared_context();
    AttentionCase c(ctx, 150, 0, 2, 1, 128, 31, 6);
    ASSERT_TRUE(c.scores_jump(32, 8.5f)) << "the case no longer covers the rescale";
    expect_attention_matches(ctx, c);
}

TEST_F(Ops, AttentionDecode) {
    check_attention(1, 0, 4, 2, 64);
    check_attention(1, 130, 8, 2, 128);  // several tiles, the last partial
    check_attention(1, 64, 6, 3, 256);   // exactly one full tile before, head_dim > workgroup
}

// The decode attention: one run per head and runs of passes from 1 up to more than the
// position needs, passes with a partial last one, GQA, and the counters left at zero (run
// twice in one command buffer: the second must combine again). Each case runs with n_split
// runs per head launched (the idle ones return) and with the grid of decode_attention_grid
// read by an indirect dispatch. group: the plan's most query heads a workgroup.
void check_decode_attention(int pos0, int n_head, int n_head_kv, int head_dim, uint32_t n_split,
                            uint32_t group = 1) {
    Context& ctx = shared_context();
    Plan plan = make_plan(ctx.adapter());
    plan.attn_max_group = group;
    AttentionCase c(ctx, 1, pos0, n_head, n_head_kv, head_dim, 41);
    ASSERT_TRUE(decode_attention_supported(plan, c.s));
    HostBuffer part(ctx, decode_attention_partials(c.s, n_split)), count(ctx, size_t(n_head));
    HostBuffer grid(ctx, 3);
    const auto g = decode_attention_grid(plan, c.s, n_split, uint32_t(pos0) + 1);
    std::copy(g.begin(), g.end(), grid.words());
    std::fill_n(count.words(), n_head, 0u);
    for (int rep = 0; rep < 2; ++rep) {
        const bool indirect = rep == 1;
        ASSERT_TRUE(run_ops(ctx, plan, [&](Recorder& r) -> Status {
                        for (int i = 0; i < 2; ++i) {
                            EMBER_TRY(op_attention_decode(
                                r, c.bq.range(), c.bk.range(), c.bv.range(), c.bo.range(),
                                c.step.range(), c.s, part.range(), count.range(), n_split,
                                indirect ? grid.range() : BufferRange{}));
                            r.barrier();
                        }
                        return Status{};
                    }).ok());
        EXPECT_LT(c.error(), 1e-10) << c.describe() << " runs " << n_split << " of " << g[1]
                                    << " group " << group << (indirect ? " indirect" : "");
        for (int h = 0; h < n_head; ++h) ASSERT_EQ(count.words()[h], 0u) << "counter " << h;
        std::fill_n(c.bo.f32(), c.q.size(), -7.0f);
    }
    EXPECT_TRUE(c.bo.guard_intact());
    EXPECT_TRUE(part.guard_intact());
    EXPECT_TRUE(count.guard_intact());
}

// With the default plan a workgroup takes one query head (Plan::attn_max_group), a pass is R PT
// positions (R = 256 / (head_dim / 8) rows of threads, PT 8, halved until a pass is at most
// 512 scores) and a run at least 2 passes.
TEST_F(Ops, AttentionDecodeSplit) {
    check_decode_attention(0, 4, 2, 64, 4);        // one position, the grid one run
    check_decode_attention(100, 32, 32, 128, 8);   // one pass, most rows' loads clamped
    check_decode_attention(300, 8, 2, 128, 1);     // GQA 4, three passes in one run
    check_decode_attention(300, 8, 2, 128, 3);     // three passes: runs of 2 and 1
    check_decode_attention(1000, 4, 4, 128, 64);   // 8 passes: four runs of 2
    check_decode_attention(3000, 8, 2, 128, 64);   // 24 passes: twelve runs of 2
    check_decode_attention(3000, 8, 2, 128, 5);    // capped: runs of 5, 5, 5, 5 and 4
    check_decode_attention(2500, 32, 4, 64, 4);    // GQA 8, 10 passes: runs of 3, 3, 3 and 1
    check_decode_attention(9000, 8, 4, 8, 8);      // stories260K's head size: 18 passes of 512
    check_decode_attention(77, 6, 6, 32, 1);       // a single run allowed
    check_decode_attention(600, 32, 2, 64, 8);     // 16 query heads per KV head: 3 passes, 2 runs
    check_decode_attention(700, 4, 4, 256, 16);    // head_dim 256: 11 passes of 64, 6 runs
    check_decode_attention(1200, 28, 4, 128, 32);  // GQA 7 (Qwen2.5-7B): 10 passes, 5 runs
    check_decode_attention(900, 12, 2, 64, 16);    // GQA 6, head_dim 64: 4 passes of 256
    // Shapes it does not take are an error, not a wrong answer.
    const Plan plan = make_plan(shared_context().adapter());
    EXPECT_FALSE(decode_attention_supported(plan, {1, 4, 4, 48, 1.0f}));  // 6 does not divide 256
    EXPECT_FALSE(decode_attention_supported(plan, {1, 6, 4, 64, 1.0f}));  // heads not a multiple
    EXPECT_FALSE(decode_attention_supported(plan, {2, 4, 4, 64, 1.0f}));  // a batch
}

// Query heads of a KV head in one workgroup (a plan's attn_max_group, up to 4): each K/V row
// loaded once for the G heads, 4 positions a thread a pass for groups of 3 or 4 (halved until
// a pass has at most 512 scores), each head's runs combined by its group's last run.
TEST_F(Ops, AttentionDecodeGrouped) {
    check_decode_attention(300, 8, 2, 128, 3, 4);     // GQA 4, groups of 4: 5 passes of 64
    check_decode_attention(3000, 8, 2, 128, 64, 4);   // 47 passes: 24 runs of 2
    check_decode_attention(2500, 32, 4, 64, 4, 4);    // GQA 8 in groups of 4, head_dim 64
    check_decode_attention(700, 8, 4, 256, 16, 2);    // groups of 2, head_dim 256
    check_decode_attention(1200, 28, 4, 128, 32, 4);  // GQA 7: groups of 1
    check_decode_attention(900, 12, 2, 64, 16, 4);    // GQA 6 in groups of 3
}

// Long chats (left out of the validation run, as the long prompts are): Llama-3.1's heads at
// depth 16,384 (128 passes: 64 runs of 2) and Llama-2's at 20,000 (157 passes, capped: 32 runs
// of 5, the last 2).
TEST_F(Ops, AttentionDecodeAfterLongPrompt) {
    check_decode_attention(16383, 32, 8, 128, 128);
    check_decode_attention(20000, 8, 8, 128, 32);
}

TEST_F(Ops, Argmax) {
    Context& ctx = shared_context();
    for (uint32_t n : {1u, 5u, 300u, 32000u}) {
        auto x = random_floats(n, 40 + n, -5, 5);
        uint32_t want = uint32_t(std::max_element(x.begin(), x.end()) - x.begin());
        if (n > 10) {  // a tie: the lower index wins
            x[n / 3] = x[n - 2] = 9.0f;
            want = n / 3;
        }
        HostBuffer bx(ctx, n), bres(ctx, 1);
        bx.fill(x.data(), n * 4);
        ASSERT_TRUE(run_ops(ctx, [&](Recorder& r) {
                        return op_argmax(r, bx.range(), 0, n, bres.range());
                    }).ok());
        EXPECT_EQ(bres.words()[0], want) << "n=" << n;
        EXPECT_TRUE(bres.guard_intact());
    }
}

}  // namespace
}  // namespace ember::vulkan::test
