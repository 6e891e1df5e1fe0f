// The decode attention with the output projection fused in (op_attention_wo, attention.comp WO)
// against the CPU's attention and a product in double, with guard regions: Llama's kernel (head
// sizes 64 and 128) and the families' (FAMILY: heads of 96 and 256, GQA, the scale given,
// soft-capping, sliding windows over cache rings), for each Wo type it reads (Q4_0, Q8_0,
// Q4_K), with many heads and with few (more workgroups a head, Plan::attn_wo_min_groups).
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "cpu/ops.h"
#include "cpu/threadpool.h"
#include "host_weight.h"
#include "quant/quant.h"
#include "vk_test_util.h"
#include "vulkan/weights.h"

namespace ember::vulkan::test {
namespace {

class AttentionWo : public VulkanTest {
protected:
    void SetUp() override {
        VulkanTest::SetUp();
        if (!no_device_reason().empty()) GTEST_SKIP() << "no Vulkan device: " << no_device_reason();
    }
};

struct WoCase {
    GgmlType type = GgmlType::Q4_0;
    int pos0 = 0, n_head = 4, n_head_kv = 2, head_dim = 64, rows = 200;
    bool family = true;  // attention.comp's FAMILY variant (else Llama's)
    float softcap = 0.0f;
    int window = 0, ring = 0;  // ring > 0: the caches hold this many rows (position p in p % ring)
    bool qk_norm = false;      // the q/k norms' division left to the attention (family only)
    std::string describe() const {
        return std::string(type_traits(type)->name) + " pos0 " + std::to_string(pos0) + " heads " +
               std::to_string(n_head) + "/" + std::to_string(n_head_kv) + " hd " +
               std::to_string(head_dim) + " rows " + std::to_string(rows) +
               (family ? " family" : " llama") + " softcap " + std::to_string(softcap) +
               " window " + std::to_string(window) + " ring " + std::to_string(ring) +
               (qk_norm ? " qk_norm" : "");
    }
};

// x = x0 + Wo attention(q, K, V) in one dispatch against x0 + Wo (the CPU's attention) in double.
// Cache rows outside the window hold NaN: reading one fails. qk_norm: q and the step's key come
// undivided by their heads' rms (DeferredQkNorm), the key's cache row NaN until it is stored.
void check(const WoCase& c) {
    Context& ctx = shared_context();
    const int hd = c.head_dim, QD = c.n_head * hd, KVD = c.n_head_kv * hd, n_kv = c.pos0 + 1;
    const uint64_t seed = uint64_t(c.pos0) * 31 + uint64_t(hd) * 7 + uint64_t(c.n_head);
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
                    hd, seed + 6);
    cpu::AttentionSpec spec;
    spec.n_head = c.n_head, spec.n_head_kv = c.n_head_kv, spec.head_dim = hd;
    // Not 1 / sqrt(hd) for the families: Gemma's query_pre_attn_scalar.
    spec.scale = (c.family ? 0.7f : 1.0f) / std::sqrt(float(hd));
    spec.softcap = c.softcap, spec.window = c.window;
    std::vector<float> att(q.size()), scratch(size_t(n_kv) + 16);
    cpu::ThreadPool pool(1);
    cpu::attention(pool, q.data(), kr.data(), vr.data(), att.data(), 1, c.pos0, spec,
                   scratch.data());
    const Weight wo = make_weight(c.type, c.rows, QD, seed + 4);
    const auto x0 = random_floats(size_t(c.rows), seed + 5);
    std::vector<float> want(size_t(c.rows));
    for (int r = 0; r < c.rows; ++r) {
        double s = x0[size_t(r)];
        for (int i = 0; i < QD; ++i) s += double(wo.f[size_t(r) * QD + i]) * att[size_t(i)];
        want[size_t(r)] = float(s);
    }

    const Tensor tw = wo.tensor("wo");
    auto store = WeightStore::upload(ctx, {&tw}, nullptr, nullptr);
    ASSERT_TRUE(store.ok()) << store.error().message;
    const DeviceTensor& dw = *(*store)->find(tw);
    const AttentionShape s{1, c.n_head, c.n_head_kv, hd, spec.scale};
    const Plan plan = make_plan(ctx.adapter());
    {
        const Recorder probe(ctx.adapter(), plan, nullptr);
        if (!attention_wo_supported(probe, s, dw, c.family))
            GTEST_SKIP() << "no fused output projection here (float atomics, F16 arithmetic, "
                            "subgroup shuffles): "
                         << c.describe();
    }
    HostBuffer bq(ctx, q.size()), bk(ctx, (kh.size() + 1) / 2), bv(ctx, (vh.size() + 1) / 2),
        bx(ctx, x0.size()), step(ctx, 3);
    bq.fill(qkn ? qkn->q().data() : q.data(), q.size() * 4);
    bk.fill(kh.data(), kh.size() * 2);
    bv.fill(vh.data(), vh.size() * 2);
    bx.fill(x0.data(), x0.size() * 4);
    step.words()[0] = uint32_t(c.pos0);
    step.words()[1] = 1;
    DecodeAttentionFamily f;
    f.softcap = c.softcap, f.window = uint32_t(c.window), f.kv_ring = uint32_t(c.ring);
    if (qkn) qkn->set(f);
    auto st = run_ops(ctx, plan, [&](Recorder& r) {
        return op_attention_wo(r, bq.range(), bk.range(), bv.range(), bx.range(), step.range(), s,
                               dw, c.family ? &f : nullptr);
    });
    ASSERT_TRUE(st.ok()) << c.describe() << ": " << st.error().message;
    // The head's output is rounded to F16 (scaled) for the products, as in matvec_fused_h.comp.
    EXPECT_LT(nmse(bx.f32(), want.data(), want.size()), 2e-6) << c.describe();
    if (qkn) EXPECT_LT(qkn->stored_key_nmse(bk.f16()), 1e-7) << c.describe();
    EXPECT_TRUE(bx.guard_intact()) << c.describe();
    EXPECT_TRUE(bq.guard_intact() && bk.guard_intact() && bv.guard_intact()) << c.describe();
}

TEST_F(AttentionWo, LlamaHeads) {
    check({.type = GgmlType::Q4_0, .pos0 = 40, .n_head = 8, .n_head_kv = 8, .family = false});
    check({.type = GgmlType::Q8_0, .pos0 = 100, .head_dim = 128, .rows = 300, .family = false});
    check({.type = GgmlType::Q4_K, .pos0 = 7, .head_dim = 128, .family = false});
}

// Phi-3's head of 96: 3 blocks of Wo's row a head, on 4 lanes (one adds nothing); with Q4_K,
// head 2's blocks 6, 7 and 8 straddle two superblocks.
TEST_F(AttentionWo, FamilyHead96) {
    check({.type = GgmlType::Q4_K, .pos0 = 60, .n_head = 8, .n_head_kv = 8, .head_dim = 96});
    check({.type = GgmlType::Q4_0,
           .pos0 = 150,
           .n_head = 4,
           .n_head_kv = 1,
           .head_dim = 96,
           .rows = 130});
}

// Gemma's head of 256 (8 lanes a row), a soft-cap (Gemma 2), few heads (many workgroups a head).
TEST_F(AttentionWo, FamilyHead256AndSoftcap) {
    check({.type = GgmlType::Q4_K,
           .pos0 = 90,
           .n_head = 2,
           .n_head_kv = 1,
           .head_dim = 256,
           .rows = 256,
           .softcap = 5.0f});
    check({.type = GgmlType::Q8_0, .pos0 = 3, .n_head = 4, .n_head_kv = 2, .head_dim = 256});
    check({.type = GgmlType::Q4_0,
           .pos0 = 120,
           .n_head = 4,
           .n_head_kv = 4,
           .head_dim = 128,
           .softcap = 50.0f});
}

// Sliding windows: shorter than the context, over a ring of cache rows, longer than the context.
TEST_F(AttentionWo, FamilySlidingWindow) {
    check({.pos0 = 200, .n_head_kv = 1, .window = 70});
    check({.type = GgmlType::Q4_K, .pos0 = 150, .head_dim = 128, .window = 9, .ring = 9});
    check({.type = GgmlType::Q4_K,
           .pos0 = 100,
           .n_head = 2,
           .n_head_kv = 1,
           .head_dim = 256,
           .rows = 96,
           .softcap = 20.0f,
           .window = 33,
           .ring = 40});
    check({.pos0 = 30, .window = 100});
}

// Qwen 3 and Gemma 3: q and the step's key divided by their heads' rms here, the key stored in
// the cache by one of the workgroups of its KV head (every one of them reads it).
TEST_F(AttentionWo, FamilyDeferredQkNorms) {
    check({.type = GgmlType::Q4_K, .pos0 = 33, .head_dim = 128, .qk_norm = true});
    check({.type = GgmlType::Q4_0,
           .pos0 = 100,
           .n_head = 4,
           .n_head_kv = 2,
           .head_dim = 256,
           .rows = 256,
           .window = 33,
           .ring = 40,
           .qk_norm = true});
}

TEST_F(AttentionWo, RefusesARingWithoutAWindow) {
    Context& ctx = shared_context();
    const Weight wo = make_weight(GgmlType::Q4_0, 64, 256, 9);
    const Tensor tw = wo.tensor("wo");
    auto store = WeightStore::upload(ctx, {&tw}, nullptr, nullptr);
    ASSERT_TRUE(store.ok()) << store.error().message;
    const DeviceTensor& dw = *(*store)->find(tw);
    const AttentionShape s{1, 4, 2, 64, 0.125f};
    HostBuffer b(ctx, 4096);
    DecodeAttentionFamily f;
    f.kv_ring = 16;  // no window
    bool supported = false;
    auto st = run_ops(ctx, [&](Recorder& r) {
        supported = attention_wo_supported(r, s, dw, true);
        return op_attention_wo(r, b.range(), b.range(), b.range(), b.range(), b.range(), s, dw, &f);
    });
    ASSERT_FALSE(st.ok());
    if (supported) EXPECT_NE(st.error().message.find("ring"), std::string::npos);
}

}  // namespace
}  // namespace ember::vulkan::test
