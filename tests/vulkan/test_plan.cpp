// The plan (vulkan/plan.h) for adapters that need not exist: a fake NVIDIA GPU with 132 SMs
// (the H200's count) and a fake GPU without an SM count, for a 7B-shaped Q4_0 model. The grids
// are the ones plan.h documents; no device is used.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <tuple>

#include "model/arch.h"
#include "vulkan/forward.h"
#include "vulkan/instance.h"
#include "vulkan/stages_family.h"

namespace ember::vulkan::test {
namespace {

// A discrete GPU with F16 arithmetic, float atomics, subgroups of 32 and tensor cores.
Adapter fake_gpu(uint32_t vendor_id, uint32_t sm_count) {
    Adapter a;
    a.info.name = "fake";
    a.props.vendorID = vendor_id;
    a.props.deviceType = VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU;
    a.props.limits.maxComputeSharedMemorySize = 49152;
    a.props.limits.maxComputeWorkGroupSize[0] = 1024;
    a.props.limits.maxComputeWorkGroupInvocations = 1024;
    a.props.limits.maxStorageBufferRange = 0xFFFFFFFFu;
    a.props.limits.minStorageBufferOffsetAlignment = 16;
    a.props.limits.maxComputeWorkGroupCount[0] = 65535;
    a.props.limits.maxComputeWorkGroupCount[1] = 65535;
    a.props.limits.maxComputeWorkGroupCount[2] = 65535;
    a.max_allocation = uint64_t(4) << 30;
    a.subgroup_size = 32;
    a.float16 = true;
    a.atomic_float_add = true;
    a.subgroup_shuffle = true;
    a.coopmat_nv = true;
    a.sm_count = sm_count;
    return a;
}

// Llama-2-7B's shapes in Q4_0 (no weights: the plan needs only types and shapes), or another
// width E and FFN width F.
LlamaModel fake_7b(int64_t E = 4096, int64_t F = 11008) {
    LlamaModel m;
    LlamaHParams& hp = m.hp;
    hp.n_vocab = 32000;
    hp.n_ctx_train = 4096;
    hp.n_embd = uint32_t(E);
    hp.n_layer = 2;
    hp.n_head = uint32_t(E / 128);
    hp.n_head_kv = hp.n_head;
    hp.n_ff = uint32_t(F);
    hp.head_dim = 128;
    hp.n_rot = 128;
    auto t = [](GgmlType type, int64_t cols, int64_t rows) {
        Tensor x;
        x.type = type;
        x.ne[0] = cols;
        x.ne[1] = rows;
        x.row_stride = type == GgmlType::F32 ? uint64_t(cols) * 4 : uint64_t(cols) / 32 * 18;
        x.n_bytes = x.row_stride * uint64_t(rows);
        return x;
    };
    const GgmlType q = GgmlType::Q4_0;
    m.tok_embd = t(q, E, 32000);
    m.output_norm = t(GgmlType::F32, E, 1);
    m.output = t(q, E, 32000);
    for (int l = 0; l < 2; ++l) {
        LlamaLayer L;
        L.attn_norm = t(GgmlType::F32, E, 1);
        L.wq = t(q, E, E);
        L.wk = t(q, E, E);
        L.wv = t(q, E, E);
        L.wo = t(q, E, E);
        L.ffn_norm = t(GgmlType::F32, E, 1);
        L.ffn_gate = t(q, E, F);
        L.ffn_up = t(q, E, F);
        L.ffn_down = t(q, F, E);
        m.layers.push_back(L);
    }
    return m;
}

// The first dispatch of each stage of a decode step (argmax, a long context).
std::map<std::string, PlannedDispatch> decode_stages(const Adapter& a,
                                                     const LlamaModel& m = fake_7b()) {
    auto d = planned_dispatches(m, a, make_plan(a), {1, Output::Argmax, false}, 4096);
    EXPECT_TRUE(d.ok()) << d.error().message;
    std::map<std::string, PlannedDispatch> by_stage;
    if (d.ok())
        for (const PlannedDispatch& x : *d) by_stage.emplace(x.stage, x);
    return by_stage;
}

TEST(Plan, NvidiaWith132SmsTakesTheDocumentedGrids) {
    const Adapter a = fake_gpu(0x10DE, 132);
    const Plan p = make_plan(a);
    EXPECT_EQ(p.vendor, Vendor::Nvidia);
    EXPECT_EQ(p.sm_count, 132u);
    EXPECT_EQ(p.batching, Batching::Whole);
    auto s = decode_stages(a);
    // The embedding folds into the first QKV.
    EXPECT_EQ(s.count("embed"), 0u);
    // QKV: 5 workgroups of 256 an SM (Q4_0, 4,096 columns) = 660, then 6,144 row groups in two
    // even rounds of 8 subgroups: 384.
    const auto& qkv = s["norm + qkv + rope + kv store"];
    EXPECT_EQ(qkv.kernel, "matvec_fused_h_q4_0");
    EXPECT_EQ(qkv.threads, 256u);
    EXPECT_EQ(qkv.gx * qkv.gy, 384u);
    // Gate/up apart: 3 workgroups of 448 threads an SM.
    const auto& gu = s["norm + gate/up"];
    EXPECT_EQ(gu.kernel, "matvec_fused_h_q4_0");
    EXPECT_EQ(gu.threads, 448u);
    EXPECT_EQ(gu.gx * gu.gy, 396u);
    // Down: 4 column parts added atomically, 2,048 groups in rounds evened out: 512.
    const auto& down = s["silu + down + residual"];
    EXPECT_EQ(down.kernel, "matvec_fused_h_atomic_q4_0");
    EXPECT_EQ(down.threads, 256u);
    EXPECT_EQ(down.gx * down.gy, 512u);
    // The split attention's workgroups are the host's per step.
    EXPECT_EQ(s["attention"].kernel, "attention_split_f16_f32");
    EXPECT_TRUE(s["attention"].indirect);
    // A full prompt batch's Q projection: 128 x 128 tiles (32 x 4 = 128 of them fill 72% of
    // 132 SMs), token tiles first for a 9 MB matrix.
    const LlamaModel m = fake_7b();
    auto prompt = planned_dispatches(m, a, p, {512, Output::None, false}, 4096);
    ASSERT_TRUE(prompt.ok()) << prompt.error().message;
    bool big = false;
    for (const auto& d : *prompt)
        if (d.stage == "matmul q/k/v") big = big || d.kernel == "matmul_coopmat_xh_big_direct_q4_0";
    EXPECT_TRUE(big);
}

// 128 x 128 prompt tiles from 72% of the SMs: a 3,072-row wo (Phi-3.5's, 24 x 4 = 96 tiles of
// 512 tokens on 132 SMs) takes them; a 2,560-row one (Gemma 3 4B's, 80 tiles) 128 x 64 tiles.
TEST(Plan, PromptTilesOf128From72PercentOfTheSms) {
    const Adapter a = fake_gpu(0x10DE, 132);
    for (auto [E, kernel] : {std::pair{3072, "matmul_coopmat_xh_big_direct_q4_0"},
                             std::pair{2560, "matmul_coopmat_xh_wide_direct_q4_0"}}) {
        auto d =
            planned_dispatches(fake_7b(E, 8192), a, make_plan(a), {512, Output::None, false}, 4096);
        ASSERT_TRUE(d.ok()) << d.error().message;
        auto wo = std::find_if(d->begin(), d->end(),
                               [](const PlannedDispatch& x) { return x.stage == "matmul wo"; });
        ASSERT_NE(wo, d->end());
        EXPECT_EQ(wo->kernel, kernel) << E << " rows";
    }
}

// Short rows of many columns (Gemma 3 4B's down: 2,560 rows of 10,240): enough column parts for
// 1.5 rounds of the 5,280 subgroups, 5 (the most that leave each lane 2 blocks), not the 4 of
// 96-block parts; 1,280 groups a part in 2 even rounds of 132 workgroups: 400.
TEST(Plan, ShortRowsOfManyColumnsTakeMoreColumnParts) {
    const Adapter a = fake_gpu(0x10DE, 132);
    auto s = decode_stages(a, fake_7b(2560, 10240));
    const auto& down = s["silu + down + residual"];
    EXPECT_EQ(down.kernel, "matvec_fused_h_atomic_q4_0");
    EXPECT_EQ(down.gx * down.gy, 400u);
}

// Gemma 3 4B's shapes in Q4_0: post-norms, q/k norms, GELU, heads of 256.
LlamaModel fake_gemma3() {
    LlamaModel m = fake_7b(2560, 10240);
    LlamaHParams& hp = m.hp;
    hp.arch = find_arch("gemma3");
    hp.n_head = 8, hp.n_head_kv = 4, hp.head_dim = 256, hp.n_rot = 256;
    auto f32 = [](int64_t n) {
        Tensor x;
        x.type = GgmlType::F32;
        x.ne[0] = n, x.ne[1] = 1;
        x.row_stride = uint64_t(n) * 4, x.n_bytes = x.row_stride;
        return x;
    };
    for (LlamaLayer& L : m.layers) {
        const Tensor q = L.wq;
        auto rows = [&](int64_t cols, int64_t n) {
            Tensor x = q;
            x.ne[0] = cols, x.ne[1] = n;
            x.row_stride = uint64_t(cols) / 32 * 18, x.n_bytes = x.row_stride * uint64_t(n);
            return x;
        };
        L.wq = rows(2560, 2048), L.wk = rows(2560, 1024), L.wv = rows(2560, 1024);
        L.wo = rows(2048, 2560);
        L.q_norm = f32(256), L.k_norm = f32(256);
        L.post_attn_norm = f32(2560), L.post_ffn_norm = f32(2560);
    }
    return m;
}

// Gemma's decode on the fake H200 (the listing shows layer 0): the post-attention norm folds
// into gate/up, and the dispatches whose staging does more than load x (that fold, down's GELU)
// take 512-thread workgroups; Q/K/V, rope and the V store are one dispatch, which leaves the q/k
// norms' division and the K store to the attention.
TEST(Plan, GemmaFoldsPostNormsIntoWideWorkgroups) {
    Adapter a = fake_gpu(0x10DE, 132);
    a.props.limits.maxPerStageDescriptorStorageBuffers = 1u << 20;  // the fold binds 15
    auto s = decode_stages(a, fake_gemma3());
    const auto& gu = s["post-attention norm + norm + gate/up"];
    EXPECT_EQ(gu.kernel, "matvec_fused_h_resid_q4_0");
    EXPECT_EQ(gu.threads, 512u);
    EXPECT_EQ(s["down"].kernel, "matvec_fused_h_atomic_gelu_q4_0");
    EXPECT_EQ(s["down"].threads, 512u);
    const auto& qkv = s["norm + qkv + rope + v store"];
    EXPECT_EQ(qkv.kernel, "matvec_fused_h_heads_q4_0");
    EXPECT_EQ(qkv.threads, 256u);
    EXPECT_EQ(s["qk norm + k store + attention"].kernel, "attention_split_family_f16_f32");
    EXPECT_EQ(s.count("norm + qkv + rope + kv store"), 0u);
    EXPECT_EQ(s.count("norm + qkv"), 0u);
    EXPECT_EQ(s.count("bias + qk norm + rope + kv store"), 0u);
    EXPECT_EQ(s["wo"].threads, 256u);
    EXPECT_EQ(s.count("post-attention norm + residual"), 0u);
}

// A Q4_K_M layer's Q/K/V whose V is Q6_K (llama.cpp gives half the layers one): one dispatch
// that reads both types, x staged once, not a dispatch a type.
TEST(Plan, Q4KMQkvWithAQ6KVTakesOneDispatch) {
    const Adapter a = fake_gpu(0x10DE, 132);
    LlamaModel m = fake_7b();
    for (LlamaLayer& L : m.layers)
        for (auto [w, type, bytes] :
             {std::tuple{&L.wq, GgmlType::Q4_K, 144}, std::tuple{&L.wk, GgmlType::Q4_K, 144},
              std::tuple{&L.wv, GgmlType::Q6_K, 210}}) {
            w->type = type;
            w->row_stride = uint64_t(w->ne[0]) / 256 * uint64_t(bytes);
            w->n_bytes = w->row_stride * uint64_t(w->ne[1]);
        }
    auto d = planned_dispatches(m, a, make_plan(a), {1, Output::Argmax, false}, 4096);
    ASSERT_TRUE(d.ok()) << d.error().message;
    int qkv = 0;
    for (const PlannedDispatch& x : *d)
        if (x.stage == std::string("norm + qkv + rope + kv store")) {
            ++qkv;
            EXPECT_EQ(x.kernel, "matvec_fused_h_q4_k_v_q6_k");
        }
    EXPECT_EQ(qkv, 1);
}

// A family's prompt attention (Gemma 3: heads of 256, sliding windows) on the tensor cores where
// the adapter has them, two workgroups a head (each half of the output) for 64 queries; on the
// scalar kernel, one workgroup per head and token, where it has none.
TEST(Plan, FamilyPromptAttentionTakesTheTensorCores) {
    Adapter a = fake_gpu(0x10DE, 132);
    a.props.limits.maxPerStageDescriptorStorageBuffers = 1u << 20;
    for (bool cores : {true, false}) {
        a.coopmat_nv = cores;
        EXPECT_EQ(make_plan(a).family_attn_coopmat, cores);
        auto d =
            planned_dispatches(fake_gemma3(), a, make_plan(a), {512, Output::None, false}, 4096);
        ASSERT_TRUE(d.ok()) << d.error().message;
        auto att = std::find_if(d->begin(), d->end(),
                                [](const PlannedDispatch& x) { return x.stage == "attention"; });
        ASSERT_NE(att, d->end());
        if (cores) {
            EXPECT_EQ(att->kernel, "attention_coopmat_family_split_f16_f32");
            EXPECT_EQ(att->threads, 128u);
            EXPECT_EQ(att->gx * att->gy * att->gz, 8u * 512 / 64 * 2);
        } else {
            EXPECT_EQ(att->kernel, "attention_family_f16_f32");
            EXPECT_EQ(att->gx * att->gy * att->gz, 8u * 512);
        }
    }
}

// A prompt batch's profile labels (EMBER_VULKAN_PROFILE) name what ran: the F16 copy of an
// input is "f16 copy" and nothing else is, and each matmul keeps its stage's label (the output
// projection's copy once lent its label to the matmul after it in the families' stages).
TEST(Plan, PromptProfileLabelsNameTheirKernels) {
    Adapter a = fake_gpu(0x10DE, 132);
    a.props.limits.maxPerStageDescriptorStorageBuffers = 1u << 20;
    for (const LlamaModel& m : {fake_7b(), fake_gemma3()}) {
        auto d = planned_dispatches(m, a, make_plan(a), {512, Output::None, false}, 4096);
        ASSERT_TRUE(d.ok()) << d.error().message;
        int copies = 0, wo = 0;
        for (const PlannedDispatch& x : *d) {
            EXPECT_EQ(x.stage == "f16 copy", x.kernel == "cvt_f32_f16")
                << x.stage << ": " << x.kernel;
            if (x.kernel.rfind("matmul_", 0) == 0)
                EXPECT_EQ(x.stage.rfind("matmul ", 0), 0u) << x.stage << ": " << x.kernel;
            copies += x.stage == "f16 copy";
            wo += x.stage == "matmul wo";
        }
        // The attention output's copy for wo, and wo's one matmul.
        EXPECT_EQ(copies, 1);
        EXPECT_EQ(wo, 1);
    }
}

TEST(Plan, WithoutAnSmCountTakesTheFixedGrids) {
    const Adapter a = fake_gpu(0x1002, 0);
    const Plan p = make_plan(a);
    EXPECT_EQ(p.vendor, Vendor::Amd);
    EXPECT_EQ(p.sm_count, 0u);
    EXPECT_NE(std::string(p.vendor_reason), "");
    auto s = decode_stages(a);
    // 256 workgroups of 256 threads (matvec_workgroups): 6,144 QKV groups in 3 even rounds.
    const auto& qkv = s["norm + qkv + rope + kv store"];
    EXPECT_EQ(qkv.threads, 256u);
    EXPECT_EQ(qkv.gx * qkv.gy, 256u);
    // No 448-thread gate/up without the SM count.
    const auto& gu = s["norm + gate/up"];
    EXPECT_EQ(gu.threads, 256u);
    EXPECT_EQ(gu.gx * gu.gy, 256u);
    // 2,048 down groups fill 256 workgroups of 8 subgroups once: no column parts.
    const auto& down = s["silu + down + residual"];
    EXPECT_EQ(down.kernel, "matvec_fused_h_q4_0");
    EXPECT_EQ(down.gx * down.gy, 256u);
    // Integrated GPUs and CPU adapters size prompt batches by time.
    Adapter cpu = a;
    cpu.props.deviceType = VK_PHYSICAL_DEVICE_TYPE_CPU;
    EXPECT_EQ(make_plan(cpu).batching, Batching::Timed);
}

// The plan's fields reach the kernels: the user's EMBER_VULKAN_FUSED=0 (Overrides::no_fused)
// leaves the decode step on the one-op-a-dispatch stages.
TEST(Plan, OverridesTurnFusedKernelsOff) {
    const Adapter a = fake_gpu(0x10DE, 132);
    Overrides o;
    o.no_fused = true;
    const LlamaModel m = fake_7b();
    auto d = planned_dispatches(m, a, make_plan(a, o), {1, Output::Logits, false}, 4096);
    ASSERT_TRUE(d.ok()) << d.error().message;
    bool fused = false, embed = false;
    for (const auto& x : *d) {
        fused = fused || x.kernel.rfind("matvec_fused", 0) == 0;
        embed = embed || x.stage == "embed";
    }
    EXPECT_FALSE(fused);
    EXPECT_TRUE(embed);
}

// A prompt of a model of F32 weights on the tensor cores keeps F32 precision: each matmul is
// three F16 products (the weights' and activations' high parts, then the low part of each times
// the other's high part, added), and the attention stays on attention.comp with the batch's F32
// K and V.
// One product and the F16 attention moved a small Llama 3's logits 2.1e-3 (relative L2) from
// its reference on the H200; its quantized copy keeps one product and the F16 attention.
TEST(Plan, F32WeightsKeepF32PrecisionInPrompts) {
    Adapter a = fake_gpu(0x10DE, 132);
    const int64_t E = 256, F = 512;
    LlamaModel f32 = fake_7b(E, F);
    for (LlamaLayer& L : f32.layers)
        for (Tensor* t : {&L.wq, &L.wk, &L.wv, &L.wo, &L.ffn_gate, &L.ffn_up, &L.ffn_down}) {
            t->type = GgmlType::F32;
            t->row_stride = uint64_t(t->ne[0]) * 4;
            t->n_bytes = t->row_stride * uint64_t(t->ne[1]);
        }
    for (bool is_f32 : {true, false}) {
        auto d = planned_dispatches(is_f32 ? f32 : fake_7b(E, F), a, make_plan(a),
                                    {64, Output::None, false}, 4096);
        ASSERT_TRUE(d.ok()) << d.error().message;
        std::map<std::string, int> n;
        for (const PlannedDispatch& x : *d) {
            ++n[x.kernel];
            if (x.stage == "attention")
                EXPECT_EQ(x.kernel, is_f32 ? "attention_f16_f32" : "attention_coopmat_f16_f32");
        }
        // The first layer's 7 matrices; each F32 one fits the weight scratch in one round.
        const int f32_matmuls = is_f32 ? 7 : 0;
        EXPECT_EQ(n["dequant_hi_f32_f16"], f32_matmuls);
        EXPECT_EQ(n["dequant_lo_f32_f16"], f32_matmuls);
        EXPECT_EQ(n["matmul_coopmat_xhi_f16"], f32_matmuls);
        EXPECT_EQ(n["matmul_coopmat_lo_xlo_f16"], f32_matmuls);
        EXPECT_EQ(n["matmul_coopmat_lo_xhi_f16"], f32_matmuls);
        EXPECT_EQ(n["dequant_f32_f16"], 0);
    }
    // `ember-cli devices --plan` says why.
    const std::string text = describe_plan(f32, a, make_plan(a));
    EXPECT_NE(text.find("F32 weights: high parts"), std::string::npos) << text;
    EXPECT_NE(text.find("F32 weights' F16 high or low parts"), std::string::npos) << text;
}

// Llama's own stages take heads of powers of two; others (96: Phi-3's size, 80) take the family
// stages, whose decode attention runs the output projection with them.
TEST(Plan, LlamaHeadsOfOtherSizesTakeTheFamilyStages) {
    LlamaHParams hp;
    hp.n_layer = 2, hp.n_head = 32, hp.n_head_kv = 8;
    for (uint32_t hd : {64u, 128u, 256u, 96u, 80u}) {
        hp.head_dim = hp.n_rot = hd, hp.n_embd = hp.n_head * hd;
        EXPECT_EQ(uses_family_stages(hp), hd == 96 || hd == 80) << "heads of " << hd;
    }
}

}  // namespace
}  // namespace ember::vulkan::test
