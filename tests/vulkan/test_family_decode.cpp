// The decoder families' decode kernels (stages_family_decode.cpp) against the CPU, with guard
// regions: the fused mat-vecs with a plain store of normed rows (Q, K, V) and with a GELU-tanh
// gate (both products and the down projection's activated input), the split decode attention
// with soft-capping, sliding windows over cache rings and 96- and 256-wide heads, and the
// post-norm with its residual add, apart or folded into the next mat-vec's input.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <optional>
#include <string>

#include "cpu/ops.h"
#include "cpu/threadpool.h"
#include "gguf/gguf.h"
#include "host_weight.h"
#include "model/llama.h"
#include "quant/quant.h"
#include "test_util.h"
#include "vk_test_util.h"
#include "vulkan/forward.h"
#include "vulkan/weights.h"

namespace ember::vulkan::test {
namespace {

class FamilyDecode : public VulkanTest {
protected:
    void SetUp() override {
        VulkanTest::SetUp();
        if (!no_device_reason().empty()) GTEST_SKIP() << "no Vulkan device: " << no_device_reason();
    }
};

double gelu_tanh(double x) {
    return 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

// W rmsnorm(x) * norm (norm given) or W x, in double.
std::vector<double> product(const Weight& w, const std::vector<float>& x, const float* norm,
                            float eps) {
    double ss = 0;
    for (float v : x) ss += double(v) * v;
    const double inv = norm ? 1.0 / std::sqrt(ss / double(w.cols) + eps) : 1.0;
    std::vector<double> y(size_t(w.rows));
    for (int64_t r = 0; r < w.rows; ++r) {
        double s = 0;
        for (int64_t c = 0; c < w.cols; ++c)
            s += double(w.f[r * w.cols + c]) * x[c] * inv * (norm ? norm[c] : 1.0f);
        y[r] = s;
    }
    return y;
}

struct GeluCase {
    GgmlType type;
    int64_t rows, cols;
    const char* warp;    // Plan::matvec_max_unroll ("0": per-workgroup mode)
    const char* ksplit;  // Plan::matvec_ksplit of the down projection ("0": the rule)
};

// Gemma's FFN on the fused kernels: g = GELU(Wg xn) * (Wu xn) in one dispatch (Silu mode with
// gelu), [gate; up] apart (GateUp), and x += Wd GELU(gate) * up (Add with silu_in and gelu), in
// column parts added atomically where the device has float atomics.
void check_gelu(const GeluCase& c) {
    Context& ctx = shared_context();
    const float eps = 1e-6f;
    const Weight wg = make_weight(c.type, c.rows, c.cols, 71),
                 wu = make_weight(c.type, c.rows, c.cols, 72),
                 wd = make_weight(c.type, c.cols, c.rows, 73);
    const Tensor tg = wg.tensor("gate"), tu = wu.tensor("up"), td = wd.tensor("down");
    auto store = WeightStore::upload(ctx, {&tg, &tu, &td}, nullptr, nullptr);
    ASSERT_TRUE(store.ok()) << store.error().message;
    const auto x = random_floats(size_t(c.cols), 74, -3, 3);
    const auto nw = random_floats(size_t(c.cols), 75, 0.5f, 1.5f);
    const auto y0 = random_floats(size_t(c.cols), 76, -1, 1);
    const auto g = product(wg, x, nw.data(), eps), u = product(wu, x, nw.data(), eps);
    std::vector<float> want_prod(size_t(c.rows)), want_apart(size_t(2 * c.rows)), gu(want_apart);
    for (int64_t r = 0; r < c.rows; ++r) {
        want_prod[r] = float(gelu_tanh(g[r]) * u[r]);
        want_apart[r] = float(g[r]), want_apart[c.rows + r] = float(u[r]);
        gu[r] = float(g[r]), gu[c.rows + r] = float(u[r]);
    }
    std::vector<float> act(size_t(c.rows)), want_down(size_t(c.cols));
    for (int64_t r = 0; r < c.rows; ++r) act[r] = float(gelu_tanh(gu[r]) * gu[c.rows + r]);
    const auto d = product(wd, act, nullptr, eps);
    for (int64_t r = 0; r < c.cols; ++r) want_down[r] = float(y0[r] + d[r]);

    Plan plan = make_plan(ctx.adapter());
    plan.fused_kernel = FusedKernel::Staged;
    plan.matvec_max_unroll = uint32_t(std::atoi(c.warp));
    plan.matvec_ksplit = uint32_t(std::atoi(c.ksplit));
    const std::string what = std::string(type_traits(c.type)->name) + " " + std::to_string(c.rows) +
                             "x" + std::to_string(c.cols) + " warp " + c.warp + " ksplit " +
                             c.ksplit;
    HostBuffer bx(ctx, x.size()), bn(ctx, nw.size()), by(ctx, 2 * size_t(c.rows));
    bx.fill(x.data(), x.size() * 4);
    bn.fill(nw.data(), nw.size() * 4);
    for (const bool apart : {false, true}) {
        // Apart (and SiLU or GELU on down's input) runs only in the subgroup mode.
        if (apart && std::string(c.warp) == "0") continue;
        FusedMatvec f;
        f.mode = apart ? FusedMode::GateUp : FusedMode::Silu;
        f.w[0] = (*store)->find(tg);
        f.w[1] = (*store)->find(tu);
        f.x = bx.range(), f.norm = bn.range(), f.eps = eps, f.y = by.range();
        f.gelu = true;
        auto st = run_ops(ctx, plan, [&](Recorder& r) { return op_matvec_fused(r, f); });
        ASSERT_TRUE(st.ok()) << what << ": " << st.error().message;
        const std::vector<float>& want = apart ? want_apart : want_prod;
        EXPECT_LT(nmse(by.f32(), want.data(), want.size()), 2e-6) << what << " apart " << apart;
        EXPECT_TRUE(by.guard_intact()) << what;
    }
    if (std::string(c.warp) == "0") return;
    HostBuffer bgu(ctx, gu.size()), bd(ctx, y0.size());
    bgu.fill(gu.data(), gu.size() * 4);
    bd.fill(y0.data(), y0.size() * 4);
    FusedMatvec f;
    f.mode = FusedMode::Add;
    f.w[0] = (*store)->find(td);
    f.x = bgu.range(), f.y = bd.range();
    f.silu_in = true, f.gelu = true;
    auto st = run_ops(ctx, plan, [&](Recorder& r) { return op_matvec_fused(r, f); });
    ASSERT_TRUE(st.ok()) << what << ": " << st.error().message;
    EXPECT_LT(nmse(bd.f32(), want_down.data(), want_down.size()), 2e-6) << what << " down";
    EXPECT_TRUE(bd.guard_intact()) << what;
}

TEST_F(FamilyDecode, GeluGateMatchesCpu) {
    if (!shared_context().adapter().float16)
        GTEST_SKIP() << "the GELU gate needs matvec_fused_h.comp (F16 arithmetic)";
    check_gelu({GgmlType::Q4_K, 768, 512, "2", "0"});
    check_gelu({GgmlType::Q4_K, 768, 512, "2", "2"});  // down in 2 column parts
    check_gelu({GgmlType::Q6_K, 512, 768, "1", "0"});
    check_gelu({GgmlType::Q8_0, 224, 256, "2", "3"});
    check_gelu({GgmlType::Q4_0, 224, 4096, "0", "0"});  // the per-workgroup mode (product only)
}

// Whether the plain kernel (F32 arithmetic) runs a 64 x 64 Q8_0 mat-vec that `set` describes
// (its weight and x / y buffers filled in already).
bool plain_kernel_runs(uint64_t seed, const std::function<void(FusedMatvec&)>& set) {
    Context& ctx = shared_context();
    const Weight w = make_weight(GgmlType::Q8_0, 64, 64, seed);
    const Tensor t = w.tensor("w");
    auto store = WeightStore::upload(ctx, {&t}, nullptr, nullptr);
    EXPECT_TRUE(store.ok()) << store.error().message;
    if (!store.ok()) return false;
    HostBuffer bx(ctx, 64), by(ctx, 64);
    Plan plan = make_plan(ctx.adapter());
    plan.fused_kernel = FusedKernel::Plain;
    FusedMatvec f;
    f.w[0] = f.w[1] = (*store)->find(t);
    f.x = bx.range(), f.y = by.range();
    set(f);
    return run_ops(ctx, plan, [&](Recorder& r) { return op_matvec_fused(r, f); }).ok();
}

// Without F16 arithmetic (or with the plain kernel) a GELU gate is refused, not run as SiLU.
TEST_F(FamilyDecode, GeluGateRefusedByThePlainKernel) {
    EXPECT_FALSE(plain_kernel_runs(81, [](FusedMatvec& f) {
        f.mode = FusedMode::Silu;
        f.gelu = true;
    }));
}

// Gemma's post-norm folded into the next mat-vec's input (FusedMatvec::resid): x' = x +
// rmsnorm(r) * rw, then y = W rmsnorm(x') * norm (Store; GateUp: gate and up apart), x' written
// to x_out by the first workgroup, `zero` zeroed; x and r as they were, nothing past any buffer.
// resid_out false: x_out and zero left to another dispatch. threads: the workgroup's (0: the
// plan's; 32 makes wide rows take the staging's loop, not its registers). cancel: x close to
// -rmsnorm(r) * rw, so that x' is a twentieth of x (the one-pass sum of x'^2 subtracts).
void check_resid(GgmlType type, int64_t rows, int64_t cols, FusedMode mode, bool resid_out,
                 uint32_t threads = 0, bool cancel = false) {
    Context& ctx = shared_context();
    const float eps = 1e-6f;
    const Weight w0 = make_weight(type, rows, cols, 101), w1 = make_weight(type, rows, cols, 102);
    const Tensor t0 = w0.tensor("w0"), t1 = w1.tensor("w1");
    auto store = WeightStore::upload(ctx, {&t0, &t1}, nullptr, nullptr);
    ASSERT_TRUE(store.ok()) << store.error().message;
    auto x = random_floats(size_t(cols), 103, -3, 3);
    const auto r = random_floats(size_t(cols), 104, -40, 40);
    const auto rw = random_floats(size_t(cols), 105, 0.5f, 1.5f);
    const auto nw = random_floats(size_t(cols), 106, 0.5f, 1.5f);
    std::vector<float> want_x(static_cast<size_t>(cols));
    cpu::rms_norm(r.data(), rw.data(), want_x.data(), int(cols), eps);
    if (cancel)
        for (int64_t c = 0; c < cols; ++c) x[c] = x[c] / 60.0f - want_x[c];
    for (int64_t c = 0; c < cols; ++c) want_x[c] += x[c];
    const bool gu = mode == FusedMode::GateUp;
    std::vector<float> want(size_t(gu ? 2 * rows : rows));
    const auto y0 = product(w0, want_x, nw.data(), eps);
    for (int64_t i = 0; i < rows; ++i) want[i] = float(y0[i]);
    if (gu) {
        const auto y1 = product(w1, want_x, nw.data(), eps);
        for (int64_t i = 0; i < rows; ++i) want[rows + i] = float(y1[i]);
    }
    HostBuffer bx(ctx, x.size()), br(ctx, r.size()), brw(ctx, rw.size()), bn(ctx, nw.size()),
        by(ctx, want.size()), bxo(ctx, x.size()), bz(ctx, x.size());
    bx.fill(x.data(), x.size() * 4);
    br.fill(r.data(), r.size() * 4);
    brw.fill(rw.data(), rw.size() * 4);
    bn.fill(nw.data(), nw.size() * 4);
    const std::vector<float> ones(x.size(), 1.0f);
    bz.fill(ones.data(), ones.size() * 4);
    FusedMatvec f;
    f.mode = mode;
    f.w[0] = (*store)->find(t0);
    if (gu) f.w[1] = (*store)->find(t1);
    f.x = bx.range(), f.norm = bn.range(), f.eps = eps, f.y = by.range();
    f.fold = true, f.resid = br.range(), f.resid_norm = brw.range(), f.x_out = bxo.range();
    f.zero = bz.range();
    f.resid_out = resid_out;
    const std::string what = std::string(type_traits(type)->name) + " " + std::to_string(rows) +
                             "x" + std::to_string(cols) + (gu ? " gate/up" : " store") +
                             (resid_out ? "" : " (no x_out)") + " threads " +
                             std::to_string(threads) + (cancel ? " cancelling" : "");
    Plan plan = make_plan(ctx.adapter());
    plan.matvec_threads = threads;
    auto st = run_ops(ctx, plan, [&](Recorder& rec) { return op_matvec_fused(rec, f); });
    ASSERT_TRUE(st.ok()) << what << ": " << st.error().message;
    EXPECT_LT(nmse(by.f32(), want.data(), want.size()), 2e-6) << what;
    EXPECT_EQ(std::memcmp(bx.f32(), x.data(), x.size() * 4), 0) << what;
    EXPECT_EQ(std::memcmp(br.f32(), r.data(), r.size() * 4), 0) << what;
    if (resid_out) {
        // (x' is x + rmsnorm(r) * rw rounded in another order; cancelling, a twentieth of x.)
        EXPECT_LT(nmse(bxo.f32(), want_x.data(), want_x.size()), cancel ? 1e-9 : 1e-12) << what;
        EXPECT_EQ(std::count(bz.f32(), bz.f32() + cols, 0.0f), cols) << what;
    } else {
        EXPECT_EQ(std::count(bxo.words(), bxo.words() + cols, kSentinel), cols) << what;
        EXPECT_EQ(std::memcmp(bz.f32(), ones.data(), ones.size() * 4), 0) << what;
    }
    for (HostBuffer* b : {&bx, &br, &by, &bxo, &bz}) EXPECT_TRUE(b->guard_intact()) << what;
}

TEST_F(FamilyDecode, PostNormFoldedIntoTheNextMatvec) {
    if (!shared_context().adapter().float16)
        GTEST_SKIP() << "the fold needs matvec_fused_h.comp (F16 arithmetic)";
    check_resid(GgmlType::Q4_K, 96, 512, FusedMode::Store, true);
    check_resid(GgmlType::Q4_K, 96, 512, FusedMode::GateUp, true);
    check_resid(GgmlType::Q6_K, 64, 768, FusedMode::Store, false);
    check_resid(GgmlType::Q4_0, 64, 2560, FusedMode::GateUp, true);
    check_resid(GgmlType::Q8_0, 40, 256, FusedMode::Store, true);
    // x' of a twentieth of x's size; rows past the staging's registers (2,560 columns over 32
    // threads: 20 vec4 a thread) take its two passes over r.
    check_resid(GgmlType::Q4_K, 64, 2560, FusedMode::GateUp, true, 0, true);
    check_resid(GgmlType::Q4_0, 32, 2560, FusedMode::Store, true, 32);
    check_resid(GgmlType::Q4_K, 32, 1024, FusedMode::GateUp, true, 32, true);
}

// The plain kernel (F32 arithmetic) has no fold: refused, not run without it.
TEST_F(FamilyDecode, PostNormFoldRefusedByThePlainKernel) {
    EXPECT_FALSE(plain_kernel_runs(107, [](FusedMatvec& f) {
        f.w[1] = nullptr;  // one matrix
        f.norm = f.x;
        f.fold = true, f.resid = f.resid_norm = f.x_out = f.zero = f.x;
    }));
}

struct AttnCase {
    int pos0 = 0, n_head = 4, n_head_kv = 2, head_dim = 64;
    float softcap = 0.0f;
    int window = 0, ring = 0;  // ring > 0: the caches hold this many rows (position p in p % ring)
    uint32_t n_split = 8;
    bool qk_norm = false;  // the q/k norms' division left to the attention
    std::string describe() const {
        return "pos0 " + std::to_string(pos0) + " heads " + std::to_string(n_head) + "/" +
               std::to_string(n_head_kv) + " hd " + std::to_string(head_dim) + " softcap " +
               std::to_string(softcap) + " window " + std::to_string(window) + " ring " +
               std::to_string(ring) + " runs " + std::to_string(n_split) +
               (qk_norm ? " qk_norm" : "");
    }
};

// op_attention_decode with the family's extras against the CPU's attention (soft-cap, window,
// the scale given) over the cache's F16 values. Rows that the window does not reach hold NaN:
// reading one fails. Run twice in one command buffer (the counters must be left at zero),
// launched with n_split runs per head and with decode_attention_grid's grid for the whole
// context (an indirect dispatch). qk_norm: q and the step's key come undivided by their heads'
// rms (DeferredQkNorm), the key apart and its cache row NaN until the attention stores it there.
void check_attention(const AttnCase& c) {
    Context& ctx = shared_context();
    const int hd = c.head_dim, QD = c.n_head * hd, KVD = c.n_head_kv * hd, n_kv = c.pos0 + 1;
    const uint64_t seed = uint64_t(c.pos0) * 17 + uint64_t(hd) + uint64_t(c.window);
    auto q = random_floats(size_t(QD), seed + 1, -2, 2);
    for (auto& x : q) x *= 4.0f;  // scores large enough that a soft-cap of 5 to 50 changes them
    const auto k = random_floats(size_t(n_kv) * KVD, seed + 2, -2, 2);
    const auto v = random_floats(size_t(n_kv) * KVD, seed + 3, -2, 2);
    std::vector<uint16_t> kh(k.size()), vh(v.size());
    for (size_t i = 0; i < k.size(); ++i) kh[i] = fp32_to_fp16(k[i]), vh[i] = fp32_to_fp16(v[i]);
    const std::vector<float> kr = floats_of_f16(kh.data(), kh.size()),
                             vr = floats_of_f16(vh.data(), vh.size());
    const int first = c.window > 0 ? std::max(0, n_kv - c.window) : 0;
    hide_unread_cache_rows(kh, vh, KVD, first, n_kv, c.ring);
    std::optional<DeferredQkNorm> qkn;
    if (c.qk_norm)
        qkn.emplace(ctx, q, kh, size_t(c.ring ? c.pos0 % c.ring : c.pos0), c.n_head, c.n_head_kv,
                    hd, seed + 4);
    cpu::AttentionSpec spec;
    spec.n_head = c.n_head, spec.n_head_kv = c.n_head_kv, spec.head_dim = hd;
    spec.scale = 0.7f / std::sqrt(float(hd));  // not 1 / sqrt(hd): Gemma's query_pre_attn_scalar
    spec.softcap = c.softcap, spec.window = c.window;
    std::vector<float> want(q.size()), scratch(size_t(n_kv) + 16);
    cpu::ThreadPool pool(1);
    cpu::attention(pool, q.data(), kr.data(), vr.data(), want.data(), 1, c.pos0, spec,
                   scratch.data());

    const AttentionShape s{1, c.n_head, c.n_head_kv, hd, spec.scale};
    ASSERT_TRUE(decode_attention_supported(make_plan(ctx.adapter()), s, true)) << c.describe();
    HostBuffer bq(ctx, q.size()), bk(ctx, (kh.size() + 1) / 2), bv(ctx, (vh.size() + 1) / 2),
        bo(ctx, q.size()), step(ctx, 3), part(ctx, decode_attention_partials(s, c.n_split)),
        count(ctx, size_t(c.n_head)), grid(ctx, 3);
    bq.fill(qkn ? qkn->q().data() : q.data(), q.size() * 4);
    bk.fill(kh.data(), kh.size() * 2);
    bv.fill(vh.data(), vh.size() * 2);
    step.words()[0] = uint32_t(c.pos0);
    step.words()[1] = 1;
    std::fill_n(count.words(), c.n_head, 0u);
    const auto g = decode_attention_grid(make_plan(ctx.adapter()), s, c.n_split, uint32_t(n_kv));
    std::copy(g.begin(), g.end(), grid.words());
    DecodeAttentionFamily f;
    f.softcap = c.softcap, f.window = uint32_t(c.window), f.kv_ring = uint32_t(c.ring);
    if (qkn) qkn->set(f);
    for (const bool indirect : {false, true}) {
        std::fill_n(bo.f32(), q.size(), -7.0f);
        auto st = run_ops(ctx, [&](Recorder& r) -> Status {
            for (int i = 0; i < 2; ++i) {
                EMBER_TRY(op_attention_decode(r, bq.range(), bk.range(), bv.range(), bo.range(),
                                              step.range(), s, part.range(), count.range(),
                                              c.n_split, indirect ? grid.range() : BufferRange{},
                                              &f));
                r.barrier();
            }
            return Status{};
        });
        ASSERT_TRUE(st.ok()) << c.describe() << ": " << st.error().message;
        // (qk_norm: the key rounded to F16 after a division of another order, a unit apart here
        // and there.)
        EXPECT_LT(nmse(bo.f32(), want.data(), want.size()), c.qk_norm ? 1e-8 : 1e-10)
            << c.describe() << (indirect ? " indirect" : "");
        if (qkn) EXPECT_LT(qkn->stored_key_nmse(bk.f16()), 1e-7) << c.describe();
        for (int h = 0; h < c.n_head; ++h)
            ASSERT_EQ(count.words()[h], 0u) << c.describe() << " counter " << h;
    }
    EXPECT_TRUE(bo.guard_intact()) << c.describe();
    EXPECT_TRUE(part.guard_intact()) << c.describe();
    EXPECT_TRUE(count.guard_intact()) << c.describe();
}

// A pass is 2048 / (head_dim / 8) positions (168 for 96: 21 rows of 12 threads, 4 idle) and a
// run at least 2 passes.
TEST_F(FamilyDecode, AttentionScaleAndSoftcap) {
    check_attention({.pos0 = 0});
    check_attention({.pos0 = 700, .n_head = 8, .n_head_kv = 2, .head_dim = 128});  // 3 runs
    check_attention({.pos0 = 90, .n_head = 2, .n_head_kv = 1, .head_dim = 256, .softcap = 5.0f});
    check_attention({.pos0 = 1000, .head_dim = 256, .softcap = 50.0f, .n_split = 16});  // Gemma 2
}

TEST_F(FamilyDecode, AttentionHead96) {
    check_attention({.pos0 = 5, .n_head = 4, .n_head_kv = 4, .head_dim = 96});
    check_attention({.pos0 = 1500, .n_head = 4, .n_head_kv = 2, .head_dim = 96});  // 9 passes
    check_attention({.pos0 = 1500, .n_head = 4, .n_head_kv = 2, .head_dim = 96, .n_split = 1});
}

// Qwen 3 and Gemma 3: q and the step's key divided by their heads' rms here (the Q/K/V's sums
// of squares), the key stored in the cache; one run and several, a ring, GQA 1 to 4.
TEST_F(FamilyDecode, AttentionFinishesDeferredQkNorms) {
    check_attention({.pos0 = 0, .qk_norm = true});
    check_attention({.pos0 = 700, .n_head = 8, .n_head_kv = 2, .head_dim = 128, .qk_norm = true});
    check_attention({.pos0 = 150,
                     .n_head = 2,
                     .n_head_kv = 2,
                     .head_dim = 256,
                     .window = 9,
                     .ring = 9,
                     .qk_norm = true});
    check_attention({.pos0 = 3000,
                     .n_head = 8,
                     .n_head_kv = 2,
                     .head_dim = 256,
                     .window = 700,
                     .ring = 1211,
                     .n_split = 16,
                     .qk_norm = true});
}

// A sliding window reads only its own positions: of the whole cache, or of a ring of window +
// batch - 1 rows wrapped several times; shorter and longer than the context.
TEST_F(FamilyDecode, AttentionSlidingWindow) {
    check_attention({.pos0 = 200, .n_head_kv = 1, .window = 70});
    check_attention({.pos0 = 30, .window = 100});  // the window longer than the context
    check_attention({.pos0 = 150, .window = 9, .ring = 9});
    check_attention({.pos0 = 3000, .head_dim = 256, .softcap = 20.0f, .window = 700, .ring = 1211});
    check_attention({.pos0 = 5000,
                     .n_head = 8,
                     .n_head_kv = 4,
                     .head_dim = 128,
                     .window = 4096,
                     .ring = 4607,
                     .n_split = 16});  // Gemma 3's 4,096-window at depth
}

TEST_F(FamilyDecode, AttentionRefusesBadArguments) {
    Context& ctx = shared_context();
    HostBuffer b(ctx, 64);
    DecodeAttentionFamily f;
    f.window = 8, f.kv_ring = 4;  // a ring smaller than the window
    auto run = [&](const AttentionShape& s) {
        return run_ops(ctx, [&](Recorder& r) {
            return op_attention_decode(r, b.range(), b.range(), b.range(), b.range(), b.range(), s,
                                       b.range(), b.range(), 1, {}, &f);
        });
    };
    EXPECT_FALSE(run({1, 1, 1, 64, 1.0f}).ok());
    f.kv_ring = 0;
    EXPECT_FALSE(run({1, 1, 1, 60, 1.0f}).ok());    // not a multiple of 8
    EXPECT_FALSE(run({1, 1, 1, 4096, 1.0f}).ok());  // more eighths than threads
    EXPECT_FALSE(run({2, 1, 1, 64, 1.0f}).ok());    // a batch
}

// x += rmsnorm(r) * w over one row (Gemma's post-norms), r zeroed (the decode step's down
// adds into it), and nothing past the row.
TEST_F(FamilyDecode, RmsNormAdd) {
    Context& ctx = shared_context();
    const int n = 2304;
    const float eps = 1e-6f;
    const auto r = random_floats(size_t(n), 91, -30, 30), w = random_floats(size_t(n), 92, 0, 2),
               x = random_floats(size_t(n), 93);
    std::vector<float> want(static_cast<size_t>(n));
    cpu::rms_norm(r.data(), w.data(), want.data(), n, eps);
    for (int i = 0; i < n; ++i) want[i] += x[i];
    HostBuffer br(ctx, r.size()), bw(ctx, w.size()), bx(ctx, x.size());
    br.fill(r.data(), r.size() * 4);
    bw.fill(w.data(), w.size() * 4);
    bx.fill(x.data(), x.size() * 4);
    ASSERT_TRUE(run_ops(ctx, [&](Recorder& rec) {
                    return op_rms_norm_add(rec, br.range(), bw.range(), bx.range(), n, 1, eps);
                }).ok());
    EXPECT_LT(nmse(bx.f32(), want.data(), want.size()), 1e-12);
    EXPECT_TRUE(bx.guard_intact());
    EXPECT_EQ(std::count(br.f32(), br.f32() + n, 0.0f), n);
    EXPECT_TRUE(br.guard_intact());
}

// What `ember-cli devices --plan -m FILE` prints for a family file: its decode steps on the fused
// mat-vecs and the family's split attention, not the generic matmul and attention ops.
TEST_F(FamilyDecode, PlanListsTheFusedKernels) {
    for (const char* name : {"qwen2.gguf", "gemma2.gguf", "phi3.gguf"}) {
        const std::string path = ember::test::shared_path(std::string("models/arch/") + name);
        auto file = gguf::File::open(path);
        if (!file.ok()) GTEST_SKIP() << "no " << path;
        auto model = load_model(**file);
        ASSERT_TRUE(model.ok()) << model.error().message;
        const Adapter& a = shared_context().adapter();
        const std::string text = describe_plan(*model, a, make_plan(a));
        const size_t d0 = text.find("decode step"), d1 = text.find("prompt batch of");
        ASSERT_NE(d0, std::string::npos) << text;
        const std::string decode = text.substr(d0, d1 - d0);
        SCOPED_TRACE(std::string(name) + ":\n" + decode);
        EXPECT_NE(decode.find("attention_split_family_f16_f32"), std::string::npos);
        EXPECT_NE(decode.find("norm + qkv"), std::string::npos);
        EXPECT_NE(decode.find("matvec_fused"), std::string::npos);
        EXPECT_EQ(decode.find("attention_family_f16_f32"), std::string::npos);
        EXPECT_EQ(decode.find("matmul q/k/v"), std::string::npos);
    }
}

}  // namespace
}  // namespace ember::vulkan::test
