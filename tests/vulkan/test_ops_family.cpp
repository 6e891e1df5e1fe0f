// The decoder families' ops (vulkan/ops_family.h) against the CPU ops, with guard regions:
// bias, per-head q/k norm and rope in both layouts (partial, scaled, with frequency factors,
// YaRN and LongRoPE's attn_factor, over a fused QKV row); attention with soft-capping, sliding
// windows and 256-wide heads (batches of 16+ tokens on the tensor cores where the device has
// them); the gated FFN products; soft-capping and scaling.
#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cpu/ops.h"
#include "cpu/threadpool.h"
#include "quant/quant.h"
#include "vk_test_util.h"
#include "vulkan/ops_family.h"

namespace ember::vulkan::test {
namespace {

class OpsFamily : public VulkanTest {
protected:
    void SetUp() override {
        VulkanTest::SetUp();
        if (!no_device_reason().empty()) GTEST_SKIP() << "no Vulkan device: " << no_device_reason();
    }
};

struct RopeCase {
    int n_tokens = 1, n_head = 4, n_head_kv = 2, head_dim = 64, n_rot = 64, pos0 = 0;
    bool neox = false, bias = false, qk_norm = false, ff = false, fused = false;
    float base = 10000.0f, scale = 1.0f;
    int ring = 0;                                 // > 0: the caches are rings of this many rows
    float attn_factor = 1.0f, ext_factor = 0.0f;  // LongRoPE's magnitude; YaRN's ramp weight
    int ctx_orig = 0;                             // YaRN's original context
    std::string describe() const {
        return "tokens " + std::to_string(n_tokens) + " heads " + std::to_string(n_head) + "/" +
               std::to_string(n_head_kv) + " hd " + std::to_string(head_dim) + " rot " +
               std::to_string(n_rot) + " pos " + std::to_string(pos0) + (neox ? " neox" : "") +
               (bias ? " bias" : "") + (qk_norm ? " qk_norm" : "") + (ff ? " ff" : "") +
               (fused ? " fused" : "") + (ring ? " ring " + std::to_string(ring) : "") +
               (ext_factor != 0.0f ? " yarn" : "") +
               (attn_factor != 1.0f ? " attn_factor " + std::to_string(attn_factor) : "");
    }
};

// A rope case's random inputs: q, k, v rows, the biases, the q/k norm weights and the rope
// frequency factors.
struct RopeInputs {
    std::vector<float> q, k, v, bq, bk, bv, qn, kn, ff;
};
RopeInputs make_rope_inputs(const RopeCase& c) {
    const size_t hd = size_t(c.head_dim), QD = c.n_head * hd, KVD = c.n_head_kv * hd;
    const size_t n = size_t(c.n_tokens);
    const uint64_t seed = uint64_t(c.pos0) * 7 + uint64_t(hd);
    return {random_floats(n * QD, seed + 1, -2, 2),
            random_floats(n * KVD, seed + 2, -2, 2),
            random_floats(n * KVD, seed + 3, -2, 2),
            random_floats(QD, seed + 4),
            random_floats(KVD, seed + 5),
            random_floats(KVD, seed + 6),
            random_floats(hd, seed + 7, 0.5f, 1.5f),
            random_floats(hd, seed + 8, 0.5f, 1.5f),
            random_floats(size_t(std::max(1, c.n_rot / 2)), seed + 9, 1.0f, 4.0f)};
}

// The expected q, k, v rows: the CPU's bias add, rms_norm and rope, in place.
void cpu_qkv_rope(const RopeCase& c, const RopeInputs& in, std::vector<float>& wq,
                  std::vector<float>& wk, std::vector<float>& wv, float eps) {
    const int hd = c.head_dim, QD = c.n_head * hd, KVD = c.n_head_kv * hd;
    wq = in.q, wk = in.k, wv = in.v;
    cpu::RopeSpec spec;
    spec.n_rot = c.n_rot;
    spec.freq_base = c.base;
    spec.freq_scale = c.scale;
    spec.freq_factors = c.ff ? in.ff.data() : nullptr;
    spec.neox = c.neox;
    spec.attn_factor = c.attn_factor;
    spec.ext_factor = c.ext_factor;
    spec.n_ctx_orig = c.ctx_orig;
    for (int t = 0; t < c.n_tokens; ++t) {
        float *tq = &wq[size_t(t) * QD], *tk = &wk[size_t(t) * KVD], *tv = &wv[size_t(t) * KVD];
        if (c.bias) {
            cpu::add_inplace(tq, in.bq.data(), QD);
            cpu::add_inplace(tk, in.bk.data(), KVD);
            cpu::add_inplace(tv, in.bv.data(), KVD);
        }
        if (c.qk_norm) {
            for (int h = 0; h < c.n_head; ++h)
                cpu::rms_norm(tq + h * hd, in.qn.data(), tq + h * hd, hd, eps);
            for (int h = 0; h < c.n_head_kv; ++h)
                cpu::rms_norm(tk + h * hd, in.kn.data(), tk + h * hd, hd, eps);
        }
        cpu::rope(tq, c.n_head, hd, c.pos0 + t, spec);
        cpu::rope(tk, c.n_head_kv, hd, c.pos0 + t, spec);
    }
}

// The caches (n_ctx rows of F16, a ring where the case has one): the step's positions hold the
// expected k and v, every other row is untouched.
void check_rope_caches(const RopeCase& c, HostBuffer& kc, HostBuffer& vc,
                       const std::vector<float>& wk, const std::vector<float>& wv, int n_ctx) {
    const int KVD = c.n_head_kv * c.head_dim;
    for (auto [cache, want, name] : {std::tuple{&kc, &wk, "K"}, std::tuple{&vc, &wv, "V"}}) {
        for (int rw = 0; rw < n_ctx; ++rw)
            for (int i = 0; i < KVD; ++i) {
                const uint16_t got = cache->f16()[size_t(rw) * KVD + i];
                // The step's position held in this row, if any.
                int p = rw;
                if (c.ring) p = c.pos0 + ((rw - c.pos0 % c.ring) + c.ring) % c.ring;
                if (p < c.pos0 || p >= c.pos0 + c.n_tokens) {
                    ASSERT_EQ(got, kHalfNan)
                        << name << " cache written at row " << rw << ", " << c.describe();
                } else {
                    const float w = (*want)[size_t(p - c.pos0) * KVD + i];
                    ASSERT_NEAR(fp16_to_fp32(got), w, std::abs(w) / 1024.0f + 1e-3f)
                        << name << " cache at row " << rw << ", " << c.describe();
                }
            }
        EXPECT_TRUE(cache->guard_intact()) << name;
    }
}

// op_qkv_rope against the CPU's bias add, rms_norm and rope; the caches written only at the
// step's positions. Q, K and V are one [n][QD + 2 KVD] buffer when fused, else three.
void check_qkv_rope(const RopeCase& c) {
    Context& ctx = shared_context();
    const int hd = c.head_dim, QD = c.n_head * hd, KVD = c.n_head_kv * hd;
    const int row = c.fused ? QD + 2 * KVD : 0;
    const int n_ctx = c.ring ? c.ring : c.pos0 + c.n_tokens + 2;  // rows of the caches
    const float eps = 1e-6f;
    const RopeInputs in = make_rope_inputs(c);
    std::vector<float> wq, wk, wv;
    cpu_qkv_rope(c, in, wq, wk, wv, eps);

    // The device buffers: one fused row [q | k | v] per token, or three.
    std::vector<float> qkv;
    if (c.fused) {
        qkv.resize(size_t(c.n_tokens) * row);
        for (int t = 0; t < c.n_tokens; ++t) {
            std::copy_n(&in.q[size_t(t) * QD], QD, &qkv[size_t(t) * row]);
            std::copy_n(&in.k[size_t(t) * KVD], KVD, &qkv[size_t(t) * row + QD]);
            std::copy_n(&in.v[size_t(t) * KVD], KVD, &qkv[size_t(t) * row + QD + KVD]);
        }
    }
    HostBuffer bbq(ctx, in.q.size()), bbk(ctx, in.k.size()), bbv(ctx, in.v.size()),
        bqkv(ctx, qkv.size() + 1), b_bq(ctx, in.bq.size()), b_bk(ctx, in.bk.size()),
        b_bv(ctx, in.bv.size()), bqn(ctx, in.qn.size()), bkn(ctx, in.kn.size()),
        bff(ctx, in.ff.size()), bkc(ctx, size_t(n_ctx) * KVD / 2 + 1),
        bvc(ctx, size_t(n_ctx) * KVD / 2 + 1), step(ctx, 2 + size_t(c.n_tokens));
    for (auto [b, v] : {std::pair{&bbq, &in.q},
                        {&bbk, &in.k},
                        {&bbv, &in.v},
                        {&bqkv, &qkv},
                        {&b_bq, &in.bq},
                        {&b_bk, &in.bk},
                        {&b_bv, &in.bv},
                        {&bqn, &in.qn},
                        {&bkn, &in.kn},
                        {&bff, &in.ff}})
        b->fill(v->data(), v->size() * 4);
    std::fill_n(bkc.f16(), size_t(n_ctx) * KVD, kHalfNan);
    std::fill_n(bvc.f16(), size_t(n_ctx) * KVD, kHalfNan);
    step.words()[0] = uint32_t(c.pos0);
    step.words()[1] = uint32_t(c.n_tokens);

    QkvRope r;
    if (c.fused) {
        r.q = {bqkv.range(), 0, uint32_t(row)};
        r.k = {bqkv.range(), uint32_t(QD), uint32_t(row)};
        r.v = {bqkv.range(), uint32_t(QD + KVD), uint32_t(row)};
    } else {
        r.q = {bbq.range(), 0, uint32_t(QD)};
        r.k = {bbk.range(), 0, uint32_t(KVD)};
        r.v = {bbv.range(), 0, uint32_t(KVD)};
    }
    if (c.bias) r.bq = b_bq.range(), r.bk = b_bk.range(), r.bv = b_bv.range();
    if (c.qk_norm) r.q_norm = bqn.range(), r.k_norm = bkn.range();
    if (c.ff) r.ff = bff.range();
    r.eps = eps;
    r.k_cache = bkc.range(), r.v_cache = bvc.range(), r.step = step.range();
    r.n_tokens = c.n_tokens, r.n_head = c.n_head, r.n_head_kv = c.n_head_kv;
    r.head_dim = hd, r.n_rot = c.n_rot;
    r.freq_base = c.base, r.freq_scale = c.scale, r.neox = c.neox;
    r.kv_ring = uint32_t(c.ring);
    r.attn_factor = c.attn_factor, r.ext_factor = c.ext_factor, r.n_ctx_orig = c.ctx_orig;
    ASSERT_TRUE(run_ops(ctx, [&](Recorder& rec) { return op_qkv_rope(rec, r); }).ok())
        << c.describe();

    // q and k in place; v in place too (it changes only with a bias).
    std::vector<float> gq(wq.size()), gk(wk.size()), gv(wv.size());
    for (int t = 0; t < c.n_tokens; ++t) {
        const float* f = bqkv.f32() + size_t(t) * row;
        std::copy_n(c.fused ? f : bbq.f32() + size_t(t) * QD, QD, &gq[size_t(t) * QD]);
        std::copy_n(c.fused ? f + QD : bbk.f32() + size_t(t) * KVD, KVD, &gk[size_t(t) * KVD]);
        std::copy_n(c.fused ? f + QD + KVD : bbv.f32() + size_t(t) * KVD, KVD,
                    &gv[size_t(t) * KVD]);
    }
    EXPECT_LT(nmse(gq.data(), wq.data(), wq.size()), 1e-9) << "q, " << c.describe();
    EXPECT_LT(nmse(gk.data(), wk.data(), wk.size()), 1e-9) << "k, " << c.describe();
    EXPECT_LT(nmse(gv.data(), wv.data(), wv.size()), 1e-12) << "v, " << c.describe();
    check_rope_caches(c, bkc, bvc, wk, wv, n_ctx);
    for (HostBuffer* b : {&bbq, &bbk, &bbv, &bqkv}) EXPECT_TRUE(b->guard_intact()) << c.describe();
}

TEST_F(OpsFamily, RopeAdjacentPairs) {
    check_qkv_rope({});                                                         // Llama
    check_qkv_rope({.n_tokens = 3, .head_dim = 48, .n_rot = 32, .pos0 = 300});  // partial
    check_qkv_rope({.n_tokens = 2,
                    .n_head = 8,
                    .head_dim = 128,
                    .n_rot = 128,
                    .pos0 = 1000,
                    .ff = true});  // Llama 3 factors
}

TEST_F(OpsFamily, RopeNeox) {
    check_qkv_rope({.n_tokens = 4, .pos0 = 9, .neox = true});
    // Phi-3: partial rotary over a fused QKV row.
    check_qkv_rope({.n_tokens = 3,
                    .n_head = 4,
                    .n_head_kv = 4,
                    .head_dim = 96,
                    .n_rot = 32,
                    .pos0 = 40,
                    .neox = true,
                    .fused = true});
    // Gemma 3's global layers: another base, linear scaling, 256-wide heads.
    check_qkv_rope({.n_tokens = 2,
                    .n_head = 2,
                    .n_head_kv = 1,
                    .head_dim = 256,
                    .n_rot = 256,
                    .pos0 = 500,
                    .neox = true,
                    .base = 1e6f,
                    .scale = 0.125f});
    check_qkv_rope({.n_tokens = 70,
                    .n_head = 3,
                    .n_head_kv = 1,
                    .head_dim = 32,
                    .n_rot = 32,
                    .pos0 = 20,
                    .neox = true,
                    .ff = true});  // many tokens, factors
}

// Qwen's YaRN (factor 4 over a 4096-token original context, NEOX, far past it and near 0),
// and Phi-3's LongRoPE (factors and attn_factor, partial rotary over a fused QKV row).
TEST_F(OpsFamily, RopeYarnAndLongRope) {
    for (int pos0 : {3, 1500})
        check_qkv_rope({.n_tokens = 5,
                        .n_head = 4,
                        .n_head_kv = 2,
                        .head_dim = 128,
                        .n_rot = 128,
                        .pos0 = pos0,
                        .neox = true,
                        .bias = true,
                        .base = 1e6f,
                        .scale = 0.25f,
                        .ext_factor = 1.0f,
                        .ctx_orig = 4096});
    check_qkv_rope({.n_tokens = 3,
                    .n_head = 4,
                    .n_head_kv = 4,
                    .head_dim = 96,
                    .n_rot = 96,
                    .pos0 = 1000,
                    .neox = true,
                    .ff = true,
                    .fused = true,
                    .attn_factor = 1.19f});
}

TEST_F(OpsFamily, QkvBiasAndQkNorm) {
    check_qkv_rope({.n_tokens = 3,
                    .n_head = 6,
                    .n_head_kv = 2,
                    .pos0 = 5,
                    .neox = true,
                    .bias = true});  // Qwen 2
    check_qkv_rope({.n_tokens = 3,
                    .n_head = 4,
                    .n_head_kv = 2,
                    .head_dim = 128,
                    .n_rot = 128,
                    .pos0 = 17,
                    .neox = true,
                    .qk_norm = true});  // Qwen 3
    check_qkv_rope({.n_tokens = 2,
                    .n_head = 4,
                    .n_head_kv = 2,
                    .head_dim = 256,
                    .n_rot = 256,
                    .pos0 = 3,
                    .neox = true,
                    .qk_norm = true,
                    .base = 10000.0f});  // Gemma 3
    check_qkv_rope({.n_tokens = 2,
                    .n_head = 4,
                    .n_head_kv = 4,
                    .head_dim = 64,
                    .n_rot = 32,
                    .pos0 = 1,
                    .bias = true,
                    .qk_norm = true,
                    .fused = true});  // all at once
}

// A sliding-window layer's cache as a ring: the batch lands at rows pos % ring, wrapping.
TEST_F(OpsFamily, RopeIntoCacheRing) {
    check_qkv_rope({.n_tokens = 5, .pos0 = 13, .neox = true, .ring = 7});  // rows 6, 0, 1, 2, 3
    check_qkv_rope({.n_tokens = 7, .pos0 = 70, .ring = 7});                // every row
}

TEST_F(OpsFamily, RopeRefusesBadShapes) {
    Context& ctx = shared_context();
    HostBuffer b(ctx, 64);
    QkvRope r;
    r.q = r.k = r.v = {b.range(), 0, 8};
    r.k_cache = r.v_cache = r.step = b.range();
    r.n_tokens = 1, r.n_head = 1, r.n_head_kv = 1, r.head_dim = 8, r.n_rot = 7;
    EXPECT_FALSE(run_ops(ctx, [&](Recorder& rec) { return op_qkv_rope(rec, r); }).ok());
    r.n_rot = 8, r.head_dim = 1024;
    EXPECT_FALSE(run_ops(ctx, [&](Recorder& rec) { return op_qkv_rope(rec, r); }).ok());
    r.head_dim = 8, r.n_tokens = 3, r.kv_ring = 2;  // a batch larger than the ring
    EXPECT_FALSE(run_ops(ctx, [&](Recorder& rec) { return op_qkv_rope(rec, r); }).ok());
    r.n_tokens = 1, r.kv_ring = 0, r.ext_factor = 1.0f;  // YaRN without an original context
    EXPECT_FALSE(run_ops(ctx, [&](Recorder& rec) { return op_qkv_rope(rec, r); }).ok());
}

struct AttnCase {
    int n_tokens = 1, pos0 = 0, n_head = 4, n_head_kv = 2, head_dim = 64;
    float softcap = 0.0f;
    int window = 0;
    bool batch = false;     // the batch's own K/V from F32 rows of a fused QKV buffer
    int ring = 0;           // > 0: the caches are rings of this many rows
    bool keep_f32 = false;  // F32 arithmetic asked for: never the tensor cores
    std::string describe() const {
        return "tokens " + std::to_string(n_tokens) + " pos0 " + std::to_string(pos0) + " heads " +
               std::to_string(n_head) + "/" + std::to_string(n_head_kv) + " hd " +
               std::to_string(head_dim) + " softcap " + std::to_string(softcap) + " window " +
               std::to_string(window) + (batch ? " batch" : "") +
               (ring ? " ring " + std::to_string(ring) : "") + (keep_f32 ? " keep_f32" : "");
    }
};

// op_attention_family against the CPU's attention (soft-cap, window) over the same keys and
// values: the cache's F16 values, and with `batch` the batch's own positions as F32 (the
// tensor cores read them from the cache, which holds them too). Cache positions that no query's
// window reaches hold NaN: reading one fails the test.
void check_attention(const AttnCase& c) {
    Context& ctx = shared_context();
    const int hd = c.head_dim, QD = c.n_head * hd, KVD = c.n_head_kv * hd;
    const int n_kv = c.pos0 + c.n_tokens, row = QD + 2 * KVD;
    const uint64_t seed = uint64_t(c.pos0) * 13 + uint64_t(hd) + uint64_t(c.window);
    auto q = random_floats(size_t(c.n_tokens) * QD, seed + 1, -2, 2);
    auto k = random_floats(size_t(n_kv) * KVD, seed + 2, -2, 2);
    auto v = random_floats(size_t(n_kv) * KVD, seed + 3, -2, 2);
    // Scores large enough that a soft-cap of 5 to 50 changes them.
    for (auto& x : q) x *= 4.0f;
    std::vector<uint16_t> kh(k.size()), vh(v.size());
    for (size_t i = 0; i < k.size(); ++i) kh[i] = fp32_to_fp16(k[i]), vh[i] = fp32_to_fp16(v[i]);
    // What the CPU reads: F16 values, the batch's positions as F32 when the GPU reads them so.
    std::vector<float> kr = floats_of_f16(kh.data(), kh.size()),
                       vr = floats_of_f16(vh.data(), vh.size());
    if (c.batch) {
        std::copy(k.begin() + size_t(c.pos0) * KVD, k.end(), kr.begin() + size_t(c.pos0) * KVD);
        std::copy(v.begin() + size_t(c.pos0) * KVD, v.end(), vr.begin() + size_t(c.pos0) * KVD);
    }
    const int first = c.window > 0 ? std::max(0, c.pos0 + 1 - c.window) : 0;
    hide_unread_cache_rows(kh, vh, KVD, first, n_kv, c.ring);

    cpu::AttentionSpec spec;
    spec.n_head = c.n_head, spec.n_head_kv = c.n_head_kv, spec.head_dim = hd;
    spec.scale = 1.0f / std::sqrt(float(hd));
    spec.softcap = c.softcap, spec.window = c.window;
    std::vector<float> want(q.size()), scratch(size_t(n_kv) + 16);
    cpu::ThreadPool pool(1);
    cpu::attention(pool, q.data(), kr.data(), vr.data(), want.data(), c.n_tokens, c.pos0, spec,
                   scratch.data());

    // Q (and the batch's K and V) in one fused [n][QD + 2 KVD] buffer, q at offset 0.
    std::vector<float> qkv(size_t(c.n_tokens) * row);
    for (int t = 0; t < c.n_tokens; ++t) {
        std::copy_n(&q[size_t(t) * QD], QD, &qkv[size_t(t) * row]);
        std::copy_n(&k[size_t(c.pos0 + t) * KVD], KVD, &qkv[size_t(t) * row + QD]);
        std::copy_n(&v[size_t(c.pos0 + t) * KVD], KVD, &qkv[size_t(t) * row + QD + KVD]);
    }
    HostBuffer bqkv(ctx, qkv.size()), bk(ctx, (kh.size() + 1) / 2), bv(ctx, (vh.size() + 1) / 2),
        bo(ctx, q.size()), step(ctx, 2 + size_t(c.n_tokens));
    bqkv.fill(qkv.data(), qkv.size() * 4);
    bk.fill(kh.data(), kh.size() * 2);
    bv.fill(vh.data(), vh.size() * 2);
    step.words()[0] = uint32_t(c.pos0);
    step.words()[1] = uint32_t(c.n_tokens);
    FamilyAttention a;
    a.q = {bqkv.range(), 0, uint32_t(row)};
    a.k_cache = bk.range(), a.v_cache = bv.range(), a.out = bo.range(), a.step = step.range();
    if (c.batch) {
        a.k_batch = {bqkv.range(), uint32_t(QD), uint32_t(row)};
        a.v_batch = {bqkv.range(), uint32_t(QD + KVD), uint32_t(row)};
    }
    a.s = {c.n_tokens, c.n_head, c.n_head_kv, hd, spec.scale};
    a.softcap = c.softcap, a.window = c.window, a.kv_ring = uint32_t(c.ring);
    a.keep_f32 = c.keep_f32;
    ASSERT_TRUE(run_ops(ctx, [&](Recorder& r) { return op_attention_family(r, a); }).ok())
        << c.describe();
    // On the tensor cores Q and the probabilities are rounded to F16, and so is the batch's K/V.
    // keep_f32 holds the scalar kernel's precision whatever the predicate says.
    const bool cores = !c.keep_f32 && family_attention_on_tensor_cores(make_plan(ctx.adapter()), a);
    EXPECT_LT(nmse(bo.f32(), want.data(), want.size()), cores ? 1e-5 : 1e-9)
        << c.describe() << (cores ? " (tensor cores)" : "");
    EXPECT_TRUE(bo.guard_intact()) << c.describe();
}

TEST_F(OpsFamily, AttentionCausal) {
    check_attention({.n_tokens = 5});
    check_attention({.n_tokens = 70, .pos0 = 3, .n_head = 2, .n_head_kv = 1, .head_dim = 32});
    check_attention({.n_tokens = 1, .pos0 = 130, .n_head = 8, .n_head_kv = 2, .head_dim = 80});
    check_attention({.n_tokens = 6, .pos0 = 10, .batch = true});
}

TEST_F(OpsFamily, AttentionSoftcapAndHead256) {
    check_attention({.n_tokens = 4, .pos0 = 7, .head_dim = 256, .softcap = 50.0f});  // Gemma 2
    check_attention(
        {.n_tokens = 1, .pos0 = 90, .n_head = 2, .n_head_kv = 1, .head_dim = 256, .softcap = 5.0f});
    check_attention({.n_tokens = 3,
                     .pos0 = 4,
                     .n_head = 4,
                     .n_head_kv = 4,
                     .head_dim = 96,
                     .softcap = 10.0f,
                     .batch = true});
}

TEST_F(OpsFamily, AttentionSlidingWindow) {
    check_attention({.n_tokens = 8, .pos0 = 20, .window = 5});  // every query's window shorter
    check_attention({.n_tokens = 1,
                     .pos0 = 200,
                     .n_head = 4,
                     .n_head_kv = 1,
                     .head_dim = 64,
                     .window = 70});  // decode, window over two tiles
    check_attention({.n_tokens = 12, .pos0 = 0, .window = 4, .batch = true});
    check_attention({.n_tokens = 3,
                     .pos0 = 2,
                     .head_dim = 256,
                     .softcap = 20.0f,
                     .window = 100,
                     .batch = true});  // window longer than the context
}

// A sliding window over a cache ring of window + batch - 1 rows, wrapped several times.
TEST_F(OpsFamily, AttentionSlidingWindowOverCacheRing) {
    check_attention({.n_tokens = 1, .pos0 = 150, .window = 9, .ring = 9});  // decode
    check_attention({.n_tokens = 6, .pos0 = 61, .window = 9, .ring = 14});  // prompt batch
    check_attention({.n_tokens = 6, .pos0 = 61, .window = 9, .batch = true, .ring = 14});
    check_attention({.n_tokens = 3,
                     .pos0 = 300,
                     .head_dim = 256,
                     .softcap = 20.0f,
                     .window = 70,
                     .ring = 80});  // rows to spare, reads over two tiles
    // A ring too small for the window and batch is refused, not read wrong.
    Context& ctx = shared_context();
    HostBuffer b(ctx, 64);
    FamilyAttention a;
    a.q = {b.range(), 0, 8};
    a.k_cache = a.v_cache = a.out = a.step = b.range();
    a.s = {4, 1, 1, 8, 1.0f};
    a.window = 8, a.kv_ring = 10;
    EXPECT_FALSE(run_ops(ctx, [&](Recorder& r) { return op_attention_family(r, a); }).ok());
    a.window = 0;
    EXPECT_FALSE(run_ops(ctx, [&](Recorder& r) { return op_attention_family(r, a); }).ok());
}

// Prompt batches of 16+ tokens, which take the tensor cores where the device has them: query
// blocks of 64 (the last partial, a subgroup's 16 too) and key tiles of 32, GQA, the families'
// head sizes (Qwen 128, Phi-3 96, Gemma 256, the test models' 16 and 48), soft-capping, windows
// shorter than the prompt (the first tile a workgroup reads partly before its window, at even
// and odd tiles), q in fused QKV rows, cache rings.
const AttnCase kPromptBatches[] = {
    {.n_tokens = 130, .pos0 = 0, .n_head = 6, .n_head_kv = 2, .head_dim = 128},
    {.n_tokens = 17, .pos0 = 0, .n_head = 8, .n_head_kv = 2, .head_dim = 16},
    {.n_tokens = 100,
     .pos0 = 37,
     .n_head = 4,
     .n_head_kv = 2,
     .head_dim = 96,
     .window = 40,
     .batch = true},  // Phi-3's fused attn_qkv rows
    {.n_tokens = 70,
     .pos0 = 5,
     .n_head = 4,
     .n_head_kv = 2,
     .head_dim = 64,
     .softcap = 20.0f,
     .window = 33},  // Gemma 2
    {.n_tokens = 40,
     .pos0 = 3,
     .n_head = 4,
     .n_head_kv = 1,
     .head_dim = 48,
     .softcap = 5.0f,
     .window = 8},
    {.n_tokens = 64,
     .pos0 = 200,
     .n_head = 2,
     .n_head_kv = 1,
     .head_dim = 128,
     .window = 50,
     .ring = 113},  // ring of window + batch - 1 rows
    {.n_tokens = 24,
     .pos0 = 3,
     .n_head = 2,
     .n_head_kv = 1,
     .head_dim = 256,
     .softcap = 50.0f,
     .window = 20},  // Gemma's 256-wide heads
    {.n_tokens = 70,
     .pos0 = 30,
     .n_head = 4,
     .n_head_kv = 2,
     .head_dim = 256,
     .window = 40,
     .ring = 110},
    // F32 arithmetic asked for: the scalar kernel's precision (1e-9) on any device.
    {.n_tokens = 100,
     .pos0 = 37,
     .n_head = 4,
     .n_head_kv = 2,
     .head_dim = 96,
     .window = 40,
     .batch = true,
     .keep_f32 = true},
};

class OpsFamilyPrompt : public OpsFamily, public ::testing::WithParamInterface<AttnCase> {};

TEST_P(OpsFamilyPrompt, AttentionMatchesCpu) {
    check_attention(GetParam());
}

// "t130_p0_h6x2_d128", then what else the case sets: "_cap20", "_w40", "_ring113", "_batch",
// "_f32".
std::string prompt_case_name(const ::testing::TestParamInfo<AttnCase>& info) {
    const AttnCase& c = info.param;
    return "t" + std::to_string(c.n_tokens) + "_p" + std::to_string(c.pos0) + "_h" +
           std::to_string(c.n_head) + "x" + std::to_string(c.n_head_kv) + "_d" +
           std::to_string(c.head_dim) +
           (c.softcap > 0 ? "_cap" + std::to_string(int(c.softcap)) : "") +
           (c.window ? "_w" + std::to_string(c.window) : "") +
           (c.ring ? "_ring" + std::to_string(c.ring) : "") + (c.batch ? "_batch" : "") +
           (c.keep_f32 ? "_f32" : "");
}

INSTANTIATE_TEST_SUITE_P(Batches, OpsFamilyPrompt, ::testing::ValuesIn(kPromptBatches),
                         prompt_case_name);

// GELU-tanh and SiLU products, F32 and F16 out, over separate gate/up rows and over fused
// [gate | up] rows (Phi-3).
TEST_F(OpsFamily, GatedProducts) {
    Context& ctx = shared_context();
    for (auto [n, rows] : {std::pair{1u, 1u}, {1000u, 3u}, {4099u, 2u}})
        for (bool gelu : {false, true})
            for (bool fused : {false, true})
                for (bool f16 : {false, true}) {
                    const std::string what = "n " + std::to_string(n) + " rows " +
                                             std::to_string(rows) + (gelu ? " gelu" : " silu") +
                                             (fused ? " fused" : "") + (f16 ? " f16" : "");
                    auto g = random_floats(size_t(n) * rows, n + 1, -12, 12);
                    auto u = random_floats(size_t(n) * rows, n + 2, -2, 2);
                    std::vector<float> want(g.size());
                    (gelu ? cpu::gelu_tanh_mul : cpu::silu_mul)(g.data(), u.data(), want.data(),
                                                                int(g.size()));
                    std::vector<float> gu(g.size() * 2);
                    for (uint32_t r = 0; r < rows; ++r) {
                        std::copy_n(&g[size_t(r) * n], n, &gu[size_t(r) * 2 * n]);
                        std::copy_n(&u[size_t(r) * n], n, &gu[size_t(r) * 2 * n + n]);
                    }
                    HostBuffer bg(ctx, g.size()), bu(ctx, u.size()), bgu(ctx, gu.size()),
                        bo(ctx, f16 ? (g.size() + 1) / 2 : g.size());
                    bg.fill(g.data(), g.size() * 4);
                    bu.fill(u.data(), u.size() * 4);
                    bgu.fill(gu.data(), gu.size() * 4);
                    const RowView gate =
                        fused ? RowView{bgu.range(), 0, 2 * n} : RowView{bg.range(), 0, n};
                    const RowView up =
                        fused ? RowView{bgu.range(), n, 2 * n} : RowView{bu.range(), 0, n};
                    ASSERT_TRUE(run_ops(ctx,
                                        [&](Recorder& r) {
                                            return op_glu(r, gelu, gate, up, bo.range(), n, rows,
                                                          f16);
                                        })
                                    .ok())
                        << what;
                    const std::vector<float> got =
                        f16 ? floats_of_f16(bo.f16(), want.size())
                            : std::vector<float>(bo.f32(), bo.f32() + want.size());
                    EXPECT_LT(nmse(got.data(), want.data(), want.size()), f16 ? 1e-6 : 1e-10)
                        << what;
                    EXPECT_TRUE(bo.guard_intact()) << what;
                }
}

// Soft-capping and scaling in place, at an offset: nothing outside [off, off + n) changes.
TEST_F(OpsFamily, SoftcapAndScale) {
    Context& ctx = shared_context();
    for (uint32_t n : {1u, 300u, 70001u}) {
        const uint32_t off = 5, total = n + 9;
        for (bool cap : {true, false}) {
            auto x = random_floats(total, n, -200, 200);
            if (cap) x[off] = 1e30f;  // saturates, no NaN
            std::vector<float> want = x;
            if (cap)
                cpu::softcap(&want[off], int(n), 30.0f);
            else
                cpu::scale_inplace(&want[off], int(n), 1.5f);
            HostBuffer bx(ctx, total);
            bx.fill(x.data(), total * 4);
            ASSERT_TRUE(run_ops(ctx, [&](Recorder& r) {
                            return cap ? op_softcap(r, bx.range(), off, n, 30.0f)
                                       : op_scale(r, bx.range(), off, n, 1.5f);
                        }).ok());
            EXPECT_LT(nmse(bx.f32(), want.data(), total), 1e-12) << n << (cap ? " cap" : " scale");
            for (uint32_t i = 0; i < off; ++i) EXPECT_EQ(bx.f32()[i], x[i]);
            for (uint32_t i = off + n; i < total; ++i) EXPECT_EQ(bx.f32()[i], x[i]);
            EXPECT_TRUE(bx.guard_intact());
        }
    }
    Context& c2 = shared_context();
    HostBuffer b(c2, 4);
    EXPECT_FALSE(
        run_ops(c2, [&](Recorder& r) { return op_softcap(r, b.range(), 0, 4, 0.0f); }).ok());
}

}  // namespace
}  // namespace ember::vulkan::test
