// The families' Q/K/V in one fused decode dispatch (FusedMode::Heads, matvec_fused_h.comp HEADS)
// against the CPU, with guard regions: rows of Wq, Wk and Wv of one type or of two (a dispatch a
// type), the biases, per-head q/k RMSNorm, RoPE in both layouts (partial, with frequency factors,
// linear scaling, YaRN and attn_factor), K and V stored at the step's row of the caches (rings
// too), Gemma's post-norm folded into the input; and the per-head counts left at zero for the
// next step. With the q/k norms left to the attention: q and k rotated, times their norm weights,
// k not in the cache, and the heads' sums of squares that divide them.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <tuple>
#include <utility>

#include "cpu/ops.h"
#include "host_weight.h"
#include "quant/quant.h"
#include "vk_test_util.h"
#include "vulkan/ops_family.h"
#include "vulkan/weights.h"

namespace ember::vulkan::test {
namespace {

class FusedHeads : public VulkanTest {
protected:
    void SetUp() override {
        VulkanTest::SetUp();
        if (!no_device_reason().empty()) GTEST_SKIP() << "no Vulkan device: " << no_device_reason();
        if (!shared_context().adapter().float16)
            GTEST_SKIP() << "the fused heads need matvec_fused_h.comp (F16 arithmetic)";
        if (shared_context().adapter().props.limits.maxPerStageDescriptorStorageBuffers < 22)
            GTEST_SKIP() << "the fused heads bind 22 storage buffers";
    }
};

// W xn, in double, as floats.
std::vector<float> product(const Weight& w, const std::vector<double>& xn) {
    std::vector<float> y(size_t(w.rows));
    for (int64_t r = 0; r < w.rows; ++r) {
        double s = 0;
        for (int64_t c = 0; c < w.cols; ++c) s += double(w.f[r * w.cols + c]) * xn[c];
        y[r] = float(s);
    }
    return y;
}

struct HeadsCase {
    GgmlType tq = GgmlType::Q4_K, tv = GgmlType::Q4_K;  // Wq and Wk's type; Wv's
    int n_embd = 512, n_head = 4, n_head_kv = 2, head_dim = 64, n_rot = 64, pos = 5;
    bool neox = true, bias = false, qk_norm = false, ff = false, fold = false;
    bool defer = false;  // the q/k norms' division left to the attention (FusedMatvec)
    float scale = 1.0f, attn_factor = 1.0f, ext_factor = 0.0f;
    int ring = 0;                    // > 0: the caches are rings of this many rows
    uint32_t grid = 0, threads = 0;  // > 0: the plan's workgroups and threads a workgroup
    std::string describe() const {
        return std::string(type_traits(tq)->name) + "/" + std::string(type_traits(tv)->name) +
               " E " + std::to_string(n_embd) + " heads " + std::to_string(n_head) + "/" +
               std::to_string(n_head_kv) + " hd " + std::to_string(head_dim) + " rot " +
               std::to_string(n_rot) + " pos " + std::to_string(pos) + (neox ? " neox" : "") +
               (bias ? " bias" : "") + (qk_norm ? " qk_norm" : "") + (ff ? " ff" : "") +
               (fold ? " fold" : "") + (defer ? " defer" : "") +
               (ring ? " ring " + std::to_string(ring) : "") + (ext_factor != 0.0f ? " yarn" : "") +
               (grid ? " grid " + std::to_string(grid) + "x" + std::to_string(threads) : "");
    }
};

// A case's random inputs: x, the folded post-norm's input u and weight uw, the norm weight, the
// biases, the q/k norm weights and the rope frequency factors.
struct HeadsInputs {
    std::vector<float> x, u, nw, uw, bq, bk, bv, qn, kn, ff;
};
HeadsInputs make_inputs(const HeadsCase& c, uint64_t seed) {
    const size_t E = size_t(c.n_embd), QD = size_t(c.n_head) * c.head_dim,
                 KVD = size_t(c.n_head_kv) * c.head_dim, hd = size_t(c.head_dim);
    return {random_floats(E, seed + 4, -3, 3),
            random_floats(E, seed + 5, -40, 40),
            random_floats(E, seed + 6, 0.5f, 1.5f),
            random_floats(E, seed + 7, 0.5f, 1.5f),
            random_floats(QD, seed + 8),
            random_floats(KVD, seed + 9),
            random_floats(KVD, seed + 10),
            random_floats(hd, seed + 11, 0.5f, 1.5f),
            random_floats(hd, seed + 12, 0.5f, 1.5f),
            random_floats(size_t(std::max(1, c.n_rot / 2)), seed + 13, 1.0f, 4.0f)};
}

// The CPU: x' = x (+ rmsnorm(u) * uw folded), xn = rmsnorm(x') * nw, the three products, the
// biases, the q/k norms, the rope.
struct HeadsWant {
    std::vector<float> xin, q, k, v;
};
HeadsWant cpu_heads(const HeadsCase& c, const HeadsInputs& in, const Weight& wq, const Weight& wk,
                    const Weight& wv, float eps) {
    const int E = c.n_embd, hd = c.head_dim, QD = c.n_head * hd, KVD = c.n_head_kv * hd;
    HeadsWant w;
    w.xin = in.x;
    if (c.fold) {
        std::vector<float> t(static_cast<size_t>(E));
        cpu::rms_norm(in.u.data(), in.uw.data(), t.data(), E, eps);
        for (int i = 0; i < E; ++i) w.xin[i] += t[i];
    }
    double ss = 0;
    for (float v : w.xin) ss += double(v) * v;
    const double inv = 1.0 / std::sqrt(ss / E + eps);
    std::vector<double> xn(static_cast<size_t>(E));
    for (int i = 0; i < E; ++i) xn[i] = w.xin[i] * inv * in.nw[i];
    w.q = product(wq, xn), w.k = product(wk, xn), w.v = product(wv, xn);
    if (c.bias) {
        cpu::add_inplace(w.q.data(), in.bq.data(), QD);
        cpu::add_inplace(w.k.data(), in.bk.data(), KVD);
        cpu::add_inplace(w.v.data(), in.bv.data(), KVD);
    }
    if (c.qk_norm) {
        for (int h = 0; h < c.n_head; ++h)
            cpu::rms_norm(&w.q[h * hd], in.qn.data(), &w.q[h * hd], hd, eps);
        for (int h = 0; h < c.n_head_kv; ++h)
            cpu::rms_norm(&w.k[h * hd], in.kn.data(), &w.k[h * hd], hd, eps);
    }
    cpu::RopeSpec spec;
    spec.n_rot = c.n_rot;
    spec.freq_base = 10000.0f;
    spec.freq_scale = c.scale;
    spec.freq_factors = c.ff ? in.ff.data() : nullptr;
    spec.neox = c.neox;
    spec.attn_factor = c.attn_factor;
    spec.ext_factor = c.ext_factor;
    spec.n_ctx_orig = c.ext_factor != 0.0f ? 4096 : 0;
    cpu::rope(w.q.data(), c.n_head, hd, c.pos, spec);
    cpu::rope(w.k.data(), c.n_head_kv, hd, c.pos, spec);
    return w;
}

// The device buffers of a case: inputs as made, outputs and caches poisoned or zeroed.
struct HeadsBuffers {
    HostBuffer x, u, nw, uw, xo, z, bq, bk, bv, qn, kn, ff, q_out, k_raw, kc, vc, count, step, sums;
    HeadsBuffers(Context& ctx, const HeadsCase& c, const HeadsInputs& in, int n_ctx)
        : x(ctx, in.x.size()),
          u(ctx, in.u.size()),
          nw(ctx, in.nw.size()),
          uw(ctx, in.uw.size()),
          xo(ctx, in.x.size()),
          z(ctx, in.x.size()),
          bq(ctx, in.bq.size()),
          bk(ctx, in.bk.size()),
          bv(ctx, in.bv.size()),
          qn(ctx, in.qn.size()),
          kn(ctx, in.kn.size()),
          ff(ctx, in.ff.size()),
          q_out(ctx, in.bq.size()),
          k_raw(ctx, in.bk.size()),
          kc(ctx, size_t(n_ctx) * in.bk.size() / 2 + 1),
          vc(ctx, size_t(n_ctx) * in.bk.size() / 2 + 1),
          count(ctx, size_t(c.n_head + c.n_head_kv)),
          step(ctx, 3),
          sums(ctx, size_t(c.n_head + c.n_head_kv) * c.head_dim / 2) {
        for (auto [b, v] : {std::pair{&x, &in.x},
                            {&u, &in.u},
                            {&nw, &in.nw},
                            {&uw, &in.uw},
                            {&bq, &in.bq},
                            {&bk, &in.bk},
                            {&bv, &in.bv},
                            {&qn, &in.qn},
                            {&kn, &in.kn},
                            {&ff, &in.ff}})
            b->fill(v->data(), v->size() * 4);
        std::fill_n(kc.f16(), size_t(n_ctx) * in.bk.size(), kHalfNan);
        std::fill_n(vc.f16(), size_t(n_ctx) * in.bk.size(), kHalfNan);
        std::fill_n(count.words(), size_t(c.n_head + c.n_head_kv), 0u);
        step.words()[0] = uint32_t(c.pos);
        step.words()[1] = 1;
    }
};

// The Heads dispatch of a case over its buffers.
Status run_heads(Context& ctx, const HeadsCase& c, HeadsBuffers& b, const DeviceTensor* w[3],
                 float eps) {
    const int hd = c.head_dim, QD = c.n_head * hd, KVD = c.n_head_kv * hd;
    QkvRope r;
    r.q = {b.q_out.range(), 0, uint32_t(QD)};
    r.k = {b.k_raw.range(), 0, uint32_t(KVD)};
    if (c.bias) r.bq = b.bq.range(), r.bk = b.bk.range(), r.bv = b.bv.range();
    if (c.qk_norm) r.q_norm = b.qn.range(), r.k_norm = b.kn.range();
    if (c.ff) r.ff = b.ff.range();
    r.eps = eps;
    r.k_cache = b.kc.range(), r.v_cache = b.vc.range(), r.step = b.step.range();
    r.n_tokens = 1, r.n_head = c.n_head, r.n_head_kv = c.n_head_kv;
    r.head_dim = hd, r.n_rot = c.n_rot, r.freq_scale = c.scale, r.neox = c.neox;
    r.attn_factor = c.attn_factor, r.ext_factor = c.ext_factor;
    r.n_ctx_orig = c.ext_factor != 0.0f ? 4096 : 0;
    r.kv_ring = uint32_t(c.ring);
    FusedMatvec f;
    f.mode = FusedMode::Heads;
    f.w[0] = w[0], f.w[1] = w[1], f.w[2] = w[2];
    f.x = b.x.range(), f.norm = b.nw.range(), f.eps = eps;
    f.heads = &r, f.head_count = b.count.range();
    f.defer_qk_norm = c.defer, f.qk_ss = b.sums.range();
    if (c.fold) {
        f.fold = true, f.resid = b.u.range(), f.resid_norm = b.uw.range();
        f.x_out = b.xo.range(), f.zero = b.z.range();
    }
    Plan plan = make_plan(ctx.adapter());
    if (c.grid) plan.matvec_grid = c.grid, plan.matvec_threads = c.threads;
    return run_ops(ctx, plan, [&](Recorder& rec) { return op_matvec_fused(rec, f); });
}

// K and V in the caches: only the step's row written (deferred q/k norms: no K row), near the
// CPU's values.
void check_caches(const HeadsCase& c, HeadsBuffers& b, const HeadsWant& want, int n_ctx) {
    const int KVD = c.n_head_kv * c.head_dim;
    const uint32_t row = uint32_t(c.ring ? c.pos % c.ring : c.pos);
    for (auto [cache, w, name] :
         {std::tuple{&b.kc, &want.k, "K"}, std::tuple{&b.vc, &want.v, "V"}}) {
        const bool written = !(c.defer && cache == &b.kc);
        std::vector<float> got(static_cast<size_t>(KVD));
        for (int rw = 0; rw < n_ctx; ++rw)
            for (int i = 0; i < KVD; ++i) {
                const uint16_t h = cache->f16()[size_t(rw) * KVD + i];
                if (uint32_t(rw) == row && written)
                    got[size_t(i)] = fp16_to_fp32(h);
                else
                    ASSERT_EQ(h, kHalfNan)
                        << name << " cache written at row " << rw << ", " << c.describe();
            }
        // F16 rounding of values of about 1: NMSE near 1e-7.
        if (written) {
            EXPECT_LT(nmse(got.data(), w->data(), got.size()), 4e-6)
                << name << ", " << c.describe();
        }
        EXPECT_TRUE(cache->guard_intact()) << name << ", " << c.describe();
    }
}

void check_heads(const HeadsCase& c) {
    Context& ctx = shared_context();
    const int E = c.n_embd, hd = c.head_dim, QD = c.n_head * hd, KVD = c.n_head_kv * hd;
    const int n_ctx = c.ring ? c.ring : c.pos + 3;
    const float eps = 1e-6f;
    const uint64_t seed = uint64_t(hd) * 31 + uint64_t(c.pos);
    const Weight wq = make_weight(c.tq, QD, E, seed + 1), wk = make_weight(c.tq, KVD, E, seed + 2),
                 wv = make_weight(c.tv, KVD, E, seed + 3);
    const Tensor tq = wq.tensor("wq"), tk = wk.tensor("wk"), tv = wv.tensor("wv");
    auto store = WeightStore::upload(ctx, {&tq, &tk, &tv}, nullptr, nullptr);
    ASSERT_TRUE(store.ok()) << store.error().message;
    const HeadsInputs in = make_inputs(c, seed);
    const HeadsWant want = cpu_heads(c, in, wq, wk, wv, eps);

    HeadsBuffers b(ctx, c, in, n_ctx);
    const DeviceTensor* w[3] = {(*store)->find(tq), (*store)->find(tk), (*store)->find(tv)};
    auto st = run_heads(ctx, c, b, w, eps);
    ASSERT_TRUE(st.ok()) << c.describe() << ": " << st.error().message;

    if (c.defer) {
        // q and k (not in the cache) divided here by the rms of their heads' sums of squares.
        auto divided = [&](float* v, int slot) {
            double t = 0;
            for (int i = 0; i < hd / 2; ++i) t += b.sums.f32()[size_t(slot) * hd / 2 + i];
            for (int d = 0; d < hd; ++d) v[d] = float(v[d] / std::sqrt(t / hd + eps));
        };
        for (int h = 0; h < c.n_head; ++h) divided(b.q_out.f32() + size_t(h) * hd, h);
        for (int h = 0; h < c.n_head_kv; ++h) divided(b.k_raw.f32() + size_t(h) * hd, c.n_head + h);
        EXPECT_LT(nmse(b.k_raw.f32(), want.k.data(), want.k.size()), 2e-6) << "k, " << c.describe();
        EXPECT_TRUE(b.sums.guard_intact()) << c.describe();
    }
    EXPECT_LT(nmse(b.q_out.f32(), want.q.data(), want.q.size()), 2e-6) << "q, " << c.describe();
    check_caches(c, b, want, n_ctx);
    EXPECT_EQ(std::count(b.count.words(), b.count.words() + c.n_head + c.n_head_kv, 0u),
              c.n_head + c.n_head_kv)
        << "counts not left at zero, " << c.describe();
    EXPECT_EQ(std::memcmp(b.x.f32(), in.x.data(), in.x.size() * 4), 0) << c.describe();
    if (c.fold) {
        EXPECT_LT(nmse(b.xo.f32(), want.xin.data(), want.xin.size()), 1e-12) << c.describe();
        EXPECT_EQ(std::count(b.z.f32(), b.z.f32() + E, 0.0f), E) << c.describe();
    }
    for (HostBuffer* hb : {&b.q_out, &b.k_raw, &b.xo, &b.z, &b.count})
        EXPECT_TRUE(hb->guard_intact()) << c.describe();
}

// Qwen 2: biases, NEOX over the whole head.
TEST_F(FusedHeads, BiasesAndNeox) {
    check_heads(
        {.n_head = 4, .n_head_kv = 2, .head_dim = 128, .n_rot = 128, .pos = 7, .bias = true});
    check_heads({.tq = GgmlType::Q4_0,
                 .tv = GgmlType::Q4_0,
                 .n_embd = 256,
                 .head_dim = 64,
                 .n_rot = 64,
                 .pos = 300,
                 .bias = true});
}

// Qwen 3 and Gemma 3: per-head q/k norms (also over the unrotated dimensions of a partial
// rotary); Gemma's 256-wide heads with a Q6_K V (one dispatch beside Q4_K, two beside Q8_0) and
// its post-FFN norm folded into the input; a sliding-window layer's ring.
const HeadsCase kQkNormCases[] = {
    {.n_head = 4, .n_head_kv = 2, .head_dim = 128, .n_rot = 128, .qk_norm = true},
    {.head_dim = 96, .n_rot = 32, .pos = 12, .qk_norm = true},
    {.tv = GgmlType::Q6_K,
     .n_head = 2,
     .n_head_kv = 1,
     .head_dim = 256,
     .n_rot = 256,
     .pos = 40,
     .qk_norm = true,
     .fold = true,
     .ring = 16},
    {.tq = GgmlType::Q8_0,
     .tv = GgmlType::Q6_K,
     .n_embd = 256,
     .n_head = 8,
     .n_head_kv = 4,
     .head_dim = 32,
     .n_rot = 32,
     .pos = 1,
     .qk_norm = true,
     .fold = true},
};

TEST_F(FusedHeads, QkNormsAndMixedTypes) {
    for (const HeadsCase& c : kQkNormCases) check_heads(c);
}

// Llama 3 (adjacent pairs, frequency factors), partial rotary, linear scaling, YaRN and
// LongRoPE's attn_factor.
TEST_F(FusedHeads, RopeVariants) {
    check_heads({.n_rot = 64, .pos = 1000, .neox = false, .ff = true});
    check_heads({.head_dim = 96, .n_rot = 32, .pos = 12, .bias = true});
    check_heads({.tq = GgmlType::Q5_0,
                 .tv = GgmlType::Q8_0,
                 .head_dim = 64,
                 .n_rot = 48,
                 .pos = 77,
                 .neox = false,
                 .scale = 0.25f});
    check_heads(
        {.pos = 3000, .ff = true, .scale = 0.25f, .attn_factor = 1.19f, .ext_factor = 1.0f});
}

// The q/k norms left to the attention, as Qwen 3 and Gemma 3 decode on the split attention:
// QkNormsAndMixedTypes' cases, then biases over a partial rotary, adjacent pairs and rounds.
TEST_F(FusedHeads, QkNormsDeferredToTheAttention) {
    for (HeadsCase c : kQkNormCases) {
        c.defer = true;
        check_heads(c);
    }
    check_heads(
        {.head_dim = 96, .n_rot = 32, .pos = 12, .bias = true, .qk_norm = true, .defer = true});
    check_heads({.tq = GgmlType::Q8_0,
                 .n_embd = 256,
                 .head_dim = 64,
                 .n_rot = 64,
                 .pos = 9,
                 .neox = false,
                 .qk_norm = true,
                 .defer = true,
                 .grid = 3,
                 .threads = 96});
}

// Two steps in a row: the counts the first left at zero serve the second.
TEST_F(FusedHeads, CountsServeTheNextStep) {
    check_heads({.pos = 0, .bias = true, .qk_norm = true});
    check_heads({.pos = 1, .bias = true, .qk_norm = true});
}

// Grids of few workgroups: each subgroup takes several rounds of row groups (the plan's usual
// grid covers these shapes in one), the rounds of a workgroup cross heads, the last round is
// partial; Q/K and V in one dispatch and in two.
TEST_F(FusedHeads, FewWorkgroupsTakeSeveralRounds) {
    for (auto [grid, tv] : {std::pair{1u, GgmlType::Q4_K}, std::pair{3u, GgmlType::Q6_K}})
        check_heads({.tv = tv,
                     .n_head = 6,
                     .n_head_kv = 2,
                     .head_dim = 64,
                     .n_rot = 64,
                     .pos = 3,
                     .bias = true,
                     .qk_norm = true,
                     .grid = grid,
                     .threads = 96});
}

// Shapes the heads cannot take are refused, not run wrong.
TEST_F(FusedHeads, RefusesBadShapes) {
    Context& ctx = shared_context();
    const Weight wq = make_weight(GgmlType::Q4_K, 256, 256, 1),
                 wk = make_weight(GgmlType::Q4_K, 128, 256, 2);
    const Tensor tq = wq.tensor("wq"), tk = wk.tensor("wk");
    auto store = WeightStore::upload(ctx, {&tq, &tk}, nullptr, nullptr);
    ASSERT_TRUE(store.ok()) << store.error().message;
    HostBuffer bx(ctx, 256), by(ctx, 256), bk(ctx, 128), kc(ctx, 64), vc(ctx, 64), cnt(ctx, 8),
        step(ctx, 3);
    std::fill_n(bx.f32(), 256, 1.0f);
    std::fill_n(cnt.words(), 8, 0u);
    step.words()[0] = 0, step.words()[1] = 1;
    QkvRope r;
    r.q = {by.range(), 0, 256}, r.k = {bk.range(), 0, 128};
    r.n_tokens = 1, r.n_head = 4, r.n_head_kv = 2, r.head_dim = 64, r.n_rot = 64;
    r.k_cache = kc.range(), r.v_cache = vc.range(), r.step = step.range();
    FusedMatvec f;
    f.mode = FusedMode::Heads;
    f.w[0] = (*store)->find(tq), f.w[1] = (*store)->find(tk), f.w[2] = f.w[1];
    f.x = bx.range(), f.eps = r.eps, f.heads = &r, f.head_count = cnt.range();
    auto run = [&] { return run_ops(ctx, [&](Recorder& rec) { return op_matvec_fused(rec, f); }); };
    EXPECT_TRUE(run().ok());
    r.n_head = 3;  // Wq's rows are not n_head heads
    EXPECT_FALSE(run().ok());
    r.n_head = 4, r.n_rot = 66;  // more rotated dimensions than the head has
    EXPECT_FALSE(run().ok());
    r.n_rot = 64, r.bq = bx.range();  // a bias for q alone
    EXPECT_FALSE(run().ok());
    r.bq = {}, r.eps = 1e-5f;  // the head norm's epsilon is the input norm's
    EXPECT_FALSE(run().ok());
}

}  // namespace
}  // namespace ember::vulkan::test
