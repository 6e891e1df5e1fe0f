// The whole forward pass on the device against the CPU backend, the fit estimate, and the real
// stories260K model through the public API.
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <list>
#include <optional>

#include <nlohmann/json.hpp>

#include "common/log.h"
#include "cpu/backend_cpu.h"
#include "ember/ember.h"
#include "quant/quant.h"
#include "run_cli.h"
#include "test_util.h"
#include "vk_test_util.h"
#include "vulkan/forward.h"
#include "vulkan/vulkan_backend.h"

namespace ember::vulkan::test {
namespace {

// A small random Llama model with every matrix in one type.
struct SynthModel {
    LlamaModel m;
    std::list<std::vector<uint8_t>> storage;

    Tensor make(const std::string& name, GgmlType type, int64_t cols, int64_t rows, float lo,
                float hi, uint64_t seed) {
        auto tt = *type_traits(type);
        uint64_t stride = row_bytes(tt, uint64_t(cols));
        auto& buf = storage.emplace_back(stride * uint64_t(rows));
        auto f = random_floats(size_t(cols * rows), seed, lo, hi);
        for (int64_t r = 0; r < rows; ++r) quantize_row(type, &f[r * cols], &buf[r * stride], cols);
        Tensor t;
        t.name = name;
        t.type = type;
        t.ne[0] = cols;
        t.ne[1] = rows;
        t.data = buf.data();
        t.n_bytes = buf.size();
        t.row_stride = stride;
        m.weight_bytes += buf.size();
        return t;
    }
};

// more_bits: the type of attn_v, ffn_down and the output in layer 1 and the output (as
// llama.cpp's Q4_K_M gives some layers Q6_K there); else type. n_ff: the FFN's width.
std::unique_ptr<SynthModel> synth_model(GgmlType type, bool tied = false, bool rope_freqs = false,
                                        std::optional<GgmlType> more_bits = std::nullopt,
                                        uint32_t n_ff = 512) {
    auto s = std::make_unique<SynthModel>();
    LlamaHParams& hp = s->m.hp;
    hp.n_vocab = 300;
    hp.n_ctx_train = 64;
    hp.n_embd = 256;
    hp.n_layer = 2;
    hp.n_head = 4;
    hp.n_head_kv = 2;
    hp.n_ff = n_ff;
    hp.head_dim = 64;
    hp.n_rot = 64;
    const float a_e = std::sqrt(3.0f / hp.n_embd), a_f = std::sqrt(3.0f / hp.n_ff);
    uint64_t seed = 1000 + uint64_t(type);
    s->m.tok_embd = s->make("token_embd.weight", type, hp.n_embd, hp.n_vocab, -1, 1, seed++);
    s->m.output_norm =
        s->make("output_norm.weight", GgmlType::F32, hp.n_embd, 1, 0.5f, 1.5f, seed++);
    if (tied) {
        s->m.output = s->m.tok_embd;
        s->m.tied_output = true;
    } else {
        s->m.output = s->make("output.weight", more_bits.value_or(type), hp.n_embd, hp.n_vocab,
                              -a_e, a_e, seed++);
    }
    if (rope_freqs)
        s->m.rope_freqs =
            s->make("rope_freqs.weight", GgmlType::F32, hp.n_rot / 2, 1, 1, 3, seed++);
    for (uint32_t l = 0; l < hp.n_layer; ++l) {
        LlamaLayer L;
        std::string p = "blk." + std::to_string(l) + ".";
        L.attn_norm =
            s->make(p + "attn_norm.weight", GgmlType::F32, hp.n_embd, 1, 0.5f, 1.5f, seed++);
        L.wq = s->make(p + "attn_q.weight", type, hp.n_embd, hp.n_embd, -a_e, a_e, seed++);
        L.wk = s->make(p + "attn_k.weight", type, hp.n_embd, hp.n_kv_dim(), -a_e, a_e, seed++);
        const GgmlType mb = l == 1 ? more_bits.value_or(type) : type;
        L.wv = s->make(p + "attn_v.weight", mb, hp.n_embd, hp.n_kv_dim(), -a_e, a_e, seed++);
        L.wo = s->make(p + "attn_output.weight", type, hp.n_embd, hp.n_embd, -a_e, a_e, seed++);
        L.ffn_norm =
            s->make(p + "ffn_norm.weight", GgmlType::F32, hp.n_embd, 1, 0.5f, 1.5f, seed++);
        L.ffn_gate = s->make(p + "ffn_gate.weight", type, hp.n_embd, hp.n_ff, -a_e, a_e, seed++);
        L.ffn_up = s->make(p + "ffn_up.weight", type, hp.n_embd, hp.n_ff, -a_e, a_e, seed++);
        L.ffn_down = s->make(p + "ffn_down.weight", mb, hp.n_ff, hp.n_embd, -a_f, a_f, seed++);
        s->m.layers.push_back(L);
    }
    return s;
}

// The same model with every quantized tensor dequantized to F32: what the device computes
// exactly, so the CPU on it is a reference without the CPU's 8-bit activation rounding.
std::unique_ptr<SynthModel> dequantized_twin(const LlamaModel& q) {
    auto s = std::make_unique<SynthModel>();
    s->m = q;
    auto conv = [&](Tensor& t) {
        if (!t.present() || t.type == GgmlType::F32) return;
        auto& buf = s->storage.emplace_back(uint64_t(t.cols() * t.rows()) * 4);
        for (int64_t r = 0; r < t.rows(); ++r)
            dequantize_row(t.type, t.data + r * t.row_stride,
                           reinterpret_cast<float*>(buf.data()) + r * t.cols(), t.cols());
        t.type = GgmlType::F32;
        t.data = buf.data();
        t.n_bytes = buf.size();
        t.row_stride = uint64_t(t.cols()) * 4;
    };
    conv(s->m.tok_embd);
    conv(s->m.output);
    for (auto& L : s->m.layers)
        for (Tensor* t : {&L.wq, &L.wk, &L.wv, &L.wo, &L.ffn_gate, &L.ffn_up, &L.ffn_down})
            conv(*t);
    return s;
}

// adjust: changes to the plan (whole batches unless it says otherwise: batches sized by time
// would split a prompt differently on a busy machine, and a split changes the rounding).
Options test_options(int n_ctx, std::function<void(Plan&)> adjust = {}) {
    Options o;
    o.device = test_device();
    o.n_ctx = n_ctx;
    o.disk_pipeline_cache = false;
    o.adjust_plan = [adjust](Plan& p) {
        p.batching = Batching::Whole;
        if (adjust) adjust(p);
    };
    return o;
}

// Prompt, then greedy-free decode steps with fixed tokens: logits compared at every step.
// cpu_ref: the model the CPU runs (the same one, or its dequantized twin).
void compare_with_cpu(const LlamaModel& model, const LlamaModel& cpu_ref, double tol,
                      const Options& opt) {
    const int n_ctx = 32;
    auto vk = create_backend_model(model, opt);
    ASSERT_TRUE(vk.ok()) << vk.error().message;
    EXPECT_EQ((*vk)->info().kind, BackendKind::Vulkan);
    auto cpu_model = cpu::create_backend_model(cpu_ref, 1);
    ASSERT_TRUE(cpu_model.ok()) << cpu_model.error().message;
    auto vr = (*vk)->create_runner(n_ctx);
    ASSERT_TRUE(vr.ok()) << vr.error().message;
    auto cr = (*cpu_model)->create_runner(n_ctx);
    ASSERT_TRUE(cr.ok());
    const int V = int(model.hp.n_vocab);
    std::vector<float> lv(size_t(V), 0.0f), lc(size_t(V), 0.0f);

    std::vector<int32_t> prompt = {1, 17, 299, 42, 0, 150, 7};
    ASSERT_TRUE((*vr)->forward(prompt, 0, lv.data()).ok());
    ASSERT_TRUE((*cr)->forward(prompt, 0, lc.data()).ok());
    EXPECT_LT(nmse(lv.data(), lc.data(), lv.size()), tol) << "after the prompt";
    int pos = int(prompt.size());
    for (int32_t tok : {5, 77, 298}) {
        std::vector<int32_t> one = {tok};
        ASSERT_TRUE((*vr)->forward(one, pos, lv.data()).ok());
        ASSERT_TRUE((*cr)->forward(one, pos, lc.data()).ok());
        EXPECT_LT(nmse(lv.data(), lc.data(), lv.size()), tol) << "decode at " << pos;
        ++pos;
    }
    // The device argmax of the next step agrees with the argmax of the device logits.
    std::vector<int32_t> one = {3};
    auto am = (*vr)->forward_argmax(one, pos);
    ASSERT_TRUE(am.ok()) << am.error().message;
    ASSERT_TRUE((*vr)->forward(one, pos, lv.data()).ok());  // same position again: same K/V
    EXPECT_EQ(*am, int32_t(std::max_element(lv.begin(), lv.end()) - lv.begin()));

    // Invalid input is refused, not run.
    std::vector<int32_t> bad = {int32_t(V)};
    auto st = (*vr)->forward(bad, 0, lv.data());
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().code, "vulkan.bad_token");
    auto full = (*vr)->forward(one, n_ctx, lv.data());
    ASSERT_FALSE(full.ok());
    EXPECT_EQ(full.error().code, "vulkan.context_full");
}

class Forward : public VulkanTest {
protected:
    void SetUp() override {
        VulkanTest::SetUp();
        if (!no_device_reason().empty()) GTEST_SKIP() << "no Vulkan device: " << no_device_reason();
    }
};

// The stories model on the test device with EMBER_VULKAN_PROFILE=1 (read once, at load).
auto load_profiled_stories() {
    LoadParams lp;
    lp.backend = BackendKind::Vulkan;
    lp.device = test_device();
    lp.n_ctx = 64;
    ::setenv("EMBER_VULKAN_PROFILE", "1", 1);
    auto model = Model::load(ember::test::stories_model(), lp);
    ::unsetenv("EMBER_VULKAN_PROFILE");
    return model;
}

// The tight tolerance against the dequantized twin; prompts on the tensor cores stage weights
// and activations as F16, which costs about three decimal digits; decode mat-vecs of the
// quantized types take F16 dot products where the device has F16 arithmetic (~5e-7 NMSE a
// mat-vec).
double exact_tol(GgmlType type) {
    auto a = Context::pick_adapter(test_device());
    bool coopmat = a.ok() && matmul_on_tensor_cores(*a, type);
    bool f16_dot = a.ok() && a->float16 && fused_matvec_f16_type(type);
    return coopmat ? 1e-4 : f16_dot ? 1e-5 : 1e-6;
}

// A prompt of n tokens where the plan multiplies on int8 dot products (matmul_idot.comp):
// activations rounded to 8 bits, as the CPU's quantized dot products do (1.6e-4 from the
// dequantized twin measured on lavapipe for the Q4_0 model of 520 tokens).
double prompt_tol(GgmlType type, int n) {
    auto a = Context::pick_adapter(test_device());
    return a.ok() && matmul_on_int_dot(make_plan(*a), type, n) ? 1e-3 : exact_tol(type);
}

// Against the CPU on the same weights (which rounds activations to 8 bits for quantized
// types), and tightly against the CPU on the dequantized weights.
void check_type(GgmlType type, double tol_same, bool tied = false, bool rope_freqs = false) {
    auto s = synth_model(type, tied, rope_freqs);
    compare_with_cpu(s->m, s->m, std::max(tol_same, exact_tol(type)), test_options(32));
    if (type != GgmlType::F32) {
        auto twin = dequantized_twin(s->m);
        compare_with_cpu(s->m, twin->m, exact_tol(type), test_options(32));
    }
}

// Logits of a prompt and three decode steps.
std::vector<std::vector<float>> run_steps(BackendModel& bm) {
    auto r = bm.create_runner(32);
    EXPECT_TRUE(r.ok());
    if (!r.ok()) return {};
    const int V = int(300);
    std::vector<std::vector<float>> out;
    std::vector<int32_t> prompt = {1, 17, 299, 42, 0};
    out.emplace_back(size_t(V));
    EXPECT_TRUE((*r)->forward(prompt, 0, out.back().data()).ok());
    int pos = int(prompt.size());
    for (int32_t tok : {5, 77, 298}) {
        std::vector<int32_t> one = {tok};
        out.emplace_back(size_t(V));
        EXPECT_TRUE((*r)->forward(one, pos++, out.back().data()).ok());
    }
    return out;
}

// Where the readback memory is host-cached (lavapipe's and NVIDIA's), the logits are read where
// the GPU wrote them: another runner's copy (forward) of the same step, each step's own. Not
// bitwise: a residual add split in column parts sums with float atomics in any order, and a
// sum that moves by an ulp can round an activation to another F16 in the next dot products, and
// that spreads (on the H200 two runs of the same steps came out 2.4e-9 and once 4.7e-7 NMSE
// apart). A stale or wrong step is O(1) away.
TEST_F(Forward, LogitsViewEqualsCopy) {
    auto s = synth_model(GgmlType::Q4_0);
    auto vk = create_backend_model(s->m, test_options(32));
    ASSERT_TRUE(vk.ok()) << vk.error().message;
    auto view = (*vk)->create_runner(32);
    auto copy = (*vk)->create_runner(32);
    ASSERT_TRUE(view.ok() && copy.ok());
    if (!(*view)->has_logits_view()) GTEST_SKIP() << "no host-cached readback memory";
    const std::vector<int32_t> steps[] = {{1, 17, 299, 42, 0}, {5}, {77}, {298}};
    std::vector<float> want(300), prev;
    int pos = 0;
    for (const auto& t : steps) {
        auto got = (*view)->forward_view(t, pos);
        ASSERT_TRUE(got.ok()) << got.error().message;
        ASSERT_TRUE((*copy)->forward(t, pos, want.data()).ok());
        pos += int(t.size());
        ASSERT_EQ(got->size(), want.size());
        EXPECT_LT(nmse(got->data(), want.data(), want.size()), 1e-5) << "position " << pos;
        EXPECT_NE(std::vector<float>(got->begin(), got->end()), prev) << "position " << pos;
        prev.assign(got->begin(), got->end());
    }
}

// The fused decode kernels compute what the one-op-per-dispatch path computes, for every type
// they handle (with RoPE frequency factors and a tied output too); other types do not use them.
// Q4_0 and Q8_0 run twice: F16 dot products (where the device has them) and F32. Q4_1, Q5_x
// and the K-quants are fused only with F16 dot products, also where a layer's V is of another
// type than its Q and K (a dispatch per type), as in Q4_K_M and Q5_K_M files. BF16 is not fused.
TEST_F(Forward, FusedDecodeMatchesUnfused) {
    struct Case {
        GgmlType type;
        bool tied, rope_freqs, fused;
        const char* matvec_h;        // "1": FusedKernel::Staged, "0": FusedKernel::Plain
        const char* warp = nullptr;  // Plan::matvec_max_unroll ("0": one group per workgroup)
        std::optional<GgmlType> more_bits = std::nullopt;
    };
    auto adapter = Context::pick_adapter(test_device());
    const bool f16 = adapter.ok() && adapter->float16;
    for (Case c : {Case{GgmlType::Q4_0, false, true, true, "1"},
                   Case{GgmlType::Q4_0, false, true, true, "1", "0"},
                   Case{GgmlType::Q4_0, false, true, true, "0"},
                   Case{GgmlType::Q8_0, true, false, true, "1"},
                   Case{GgmlType::Q8_0, true, false, true, "1", "0"},
                   Case{GgmlType::Q8_0, true, false, true, "0"},
                   Case{GgmlType::F16, false, false, true, "1"},
                   Case{GgmlType::F32, true, true, true, "1"},
                   Case{GgmlType::Q4_K, false, true, true, "1"},
                   Case{GgmlType::Q4_K, false, false, false, "0"},
                   Case{GgmlType::Q6_K, true, false, true, "1", "1"},
                   Case{GgmlType::Q4_K, false, false, true, "1", nullptr, GgmlType::Q6_K},
                   Case{GgmlType::Q4_0, false, false, true, "1", nullptr, GgmlType::Q8_0},
                   Case{GgmlType::Q5_K, false, true, true, "1"},
                   Case{GgmlType::Q5_K, true, false, true, "1", nullptr, GgmlType::Q6_K},
                   Case{GgmlType::Q4_1, false, false, true, "1"},
                   Case{GgmlType::Q4_1, false, false, false, "0"},
                   Case{GgmlType::Q5_0, false, true, true, "1"},
                   Case{GgmlType::Q5_1, true, false, true, "1"},
                   Case{GgmlType::BF16, false, false, false, "1"}}) {
        SCOPED_TRACE(std::string(type_name(c.type)) + " MATVEC_H=" + c.matvec_h +
                     " MATVEC_WARP=" + (c.warp ? c.warp : "default") + " more bits " +
                     (c.more_bits ? std::string(type_name(*c.more_bits)) : "-"));
        const bool h = f16 && std::string(c.matvec_h) == "1" && fused_matvec_f16_type(c.type);
        // Mixed types and the F16-only types need the F16 kernel.
        const bool fused = c.fused && (h || (!fused_matvec_f16_only(c.type) && !c.more_bits));
        auto kernels = [&](Plan& p) {
            p.fused_kernel =
                std::string(c.matvec_h) == "1" ? FusedKernel::Staged : FusedKernel::Plain;
            if (c.warp) p.matvec_max_unroll = uint32_t(std::atoi(c.warp));
        };
        auto s = synth_model(c.type, c.tied, c.rope_freqs, c.more_bits);
        auto fused_model = create_backend_model(s->m, test_options(32, kernels));
        ASSERT_TRUE(fused_model.ok()) << fused_model.error().message;
        EXPECT_EQ((*fused_model)->info().fused_kernels, fused);
        auto plain = create_backend_model(s->m, test_options(32, [&](Plan& p) {
                                              kernels(p);
                                              p.fused = false;
                                          }));
        ASSERT_TRUE(plain.ok()) << plain.error().message;
        EXPECT_FALSE((*plain)->info().fused_kernels);
        auto a = run_steps(**fused_model), b = run_steps(**plain);
        ASSERT_EQ(a.size(), b.size());
        for (size_t i = 0; i < a.size(); ++i)
            EXPECT_LT(nmse(a[i].data(), b[i].data(), a[i].size()), h ? 1e-5 : 1e-9) << "step " << i;
    }
}

// A down projection wider than matvec_fused_h.comp's staging of x fits (Llama-70B's 28,672
// columns on NVIDIA's 48 KB of shared memory): column parts stage a share each, so the decode
// keeps the fused kernels, and its steps match the unfused ones.
TEST_F(Forward, WideDownKeepsTheFusedDecode) {
    auto adapter = Context::pick_adapter(test_device());
    ASSERT_TRUE(adapter.ok());
    if (!adapter->float16 || !adapter->atomic_float_add)
        GTEST_SKIP() << "no F16 arithmetic or float atomics";
    // 16 blocks more than the staging (68 bytes a block) holds, in superblocks.
    const uint32_t n_ff =
        (adapter->props.limits.maxComputeSharedMemorySize / 68 + 16 + 7) / 8 * 8 * 32;
    auto s = synth_model(GgmlType::Q4_K, false, false, std::nullopt, n_ff);
    auto fused_model = create_backend_model(s->m, test_options(32));
    ASSERT_TRUE(fused_model.ok()) << fused_model.error().message;
    EXPECT_TRUE((*fused_model)->info().fused_kernels);
    auto plain = create_backend_model(s->m, test_options(32, [](Plan& p) { p.fused = false; }));
    ASSERT_TRUE(plain.ok()) << plain.error().message;
    auto a = run_steps(**fused_model), b = run_steps(**plain);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i)
        EXPECT_LT(nmse(a[i].data(), b[i].data(), a[i].size()), 1e-5) << "step " << i;
}

// Decode steps on both sides of the context length from which the attention splits over
// positions: up to it the output projection runs inside the attention dispatch (attention.comp
// WO, float atomics), after it in its own; every step must match the separate dispatches.
TEST_F(Forward, AttentionWithOutputProjectionMatchesSeparate) {
    auto adapter = Context::pick_adapter(test_device());
    ASSERT_TRUE(adapter.ok());
    const bool fusable = adapter->atomic_float_add && adapter->float16 && adapter->subgroup_shuffle;
    // head_dim 64: one run per head up to 512 positions (2 passes of 256).
    const int n_prompt = 509, n_steps = 6;
    for (GgmlType type : {GgmlType::Q4_0, GgmlType::Q8_0, GgmlType::Q4_K}) {
        SCOPED_TRACE(type_name(type));
        auto s = synth_model(type);
        auto run = [&](bool wo, std::string& report) {
            ::testing::internal::CaptureStderr();
            std::vector<std::vector<float>> out;
            {
                auto bm = create_backend_model(s->m, test_options(n_prompt + n_steps, [&](Plan& p) {
                                                   p.attn_wo = wo;
                                                   p.profile = Overrides::Profile::Stages;
                                               }));
                EXPECT_TRUE(bm.ok());
                auto r = bm.ok() ? (*bm)->create_runner(n_prompt + n_steps)
                                 : Result<std::unique_ptr<Runner>>(bm.error());
                EXPECT_TRUE(r.ok());
                if (r.ok()) {
                    std::vector<int32_t> prompt(n_prompt);
                    for (int i = 0; i < n_prompt; ++i) prompt[size_t(i)] = (i * 37 + 11) % 300;
                    out.emplace_back(300);
                    EXPECT_TRUE((*r)->forward(prompt, 0, out.back().data()).ok());
                    for (int i = 0; i < n_steps; ++i) {
                        std::vector<int32_t> one = {int32_t(i * 53 % 300)};
                        out.emplace_back(300);
                        EXPECT_TRUE((*r)->forward(one, n_prompt + i, out.back().data()).ok());
                    }
                }
            }
            report = ::testing::internal::GetCapturedStderr();
            return out;
        };
        std::string fused_report, plain_report;
        auto a = run(true, fused_report), b = run(false, plain_report);
        EXPECT_EQ(fused_report.find("attention + wo + residual") != std::string::npos, fusable)
            << fused_report;
        EXPECT_EQ(plain_report.find("attention + wo + residual"), std::string::npos);
        ASSERT_EQ(a.size(), size_t(n_steps + 1));
        ASSERT_EQ(a.size(), b.size());
        for (size_t i = 0; i < a.size(); ++i)
            EXPECT_LT(nmse(a[i].data(), b[i].data(), a[i].size()), 1e-5) << "step " << i;
    }
}

TEST_F(Forward, F32MatchesCpu) {
    check_type(GgmlType::F32, 1e-6, false, true);
}
TEST_F(Forward, F16TiedOutputMatchesCpu) {
    check_type(GgmlType::F16, 1e-5, true);
}
TEST_F(Forward, BF16MatchesCpu) {
    check_type(GgmlType::BF16, 1e-5);
}
TEST_F(Forward, Q8_0MatchesCpu) {
    check_type(GgmlType::Q8_0, 1e-3, false, true);
}
TEST_F(Forward, Q4_0MatchesCpu) {
    check_type(GgmlType::Q4_0, 1e-3);
}
TEST_F(Forward, Q4_1MatchesCpu) {
    check_type(GgmlType::Q4_1, 1e-3);
}
TEST_F(Forward, Q5_0MatchesCpu) {
    check_type(GgmlType::Q5_0, 1e-3);
}
TEST_F(Forward, Q5_1MatchesCpu) {
    check_type(GgmlType::Q5_1, 1e-3);
}
TEST_F(Forward, Q4_KMatchesCpu) {
    check_type(GgmlType::Q4_K, 1e-3);
}
TEST_F(Forward, Q5_KMatchesCpu) {
    check_type(GgmlType::Q5_K, 1e-3);
}
TEST_F(Forward, Q6_KMatchesCpu) {
    check_type(GgmlType::Q6_K, 1e-3);
}

TEST_F(Forward, SplitTensorsMatchCpu) {
    Options o = test_options(32);
    o.max_range_override = 65536;  // the 300 x 256 F32 embedding and output become 2 pieces each
    auto s = synth_model(GgmlType::F32);
    compare_with_cpu(s->m, s->m, 1e-6, o);
}

// A prompt longer than one command buffer's batch is split; the K/V of earlier chunks is used.
TEST_F(Forward, LongPromptIsSplitIntoBatches) {
    auto s = synth_model(GgmlType::Q4_0);
    const int n_ctx = kMaxBatch + 16;
    auto vk = create_backend_model(s->m, test_options(n_ctx));
    ASSERT_TRUE(vk.ok()) << vk.error().message;
    auto twin = dequantized_twin(s->m);
    auto cpu_model = cpu::create_backend_model(twin->m, 1);
    ASSERT_TRUE(cpu_model.ok());
    auto vr = (*vk)->create_runner(n_ctx);
    auto cr = (*cpu_model)->create_runner(n_ctx);
    ASSERT_TRUE(vr.ok() && cr.ok());
    std::vector<int32_t> prompt(kMaxBatch + 8);
    for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = int32_t((i * 37 + 11) % s->m.hp.n_vocab);
    std::vector<float> lv(s->m.hp.n_vocab), lc(s->m.hp.n_vocab);
    ASSERT_TRUE((*vr)->forward(prompt, 0, lv.data()).ok());
    ASSERT_TRUE((*cr)->forward(prompt, 0, lc.data()).ok());
    EXPECT_LT(nmse(lv.data(), lc.data(), lv.size()), prompt_tol(GgmlType::Q4_0, kMaxBatch));
}

// The batch after a measured one takes what fits the target time at the measured seconds per
// token, within [1, capacity] and the tokens left; before any measurement, kFirstBatch.
TEST(BatchSize, FollowsTheMeasuredTime) {
    EXPECT_EQ(next_batch_size(0, kBatchTargetS, kMaxBatch, 1000), kFirstBatch);
    EXPECT_EQ(next_batch_size(0, kBatchTargetS, kMaxBatch, 10), 10);
    EXPECT_EQ(next_batch_size(0.25 / 100, 0.25, kMaxBatch, 1000), 100);
    EXPECT_EQ(next_batch_size(0.25 / 100, 0.25, kMaxBatch, 30), 30);
    EXPECT_EQ(next_batch_size(0.25 / 100, 0.5, kMaxBatch, 1000), 200);
    EXPECT_EQ(next_batch_size(1e-7, 0.25, kMaxBatch, 1000), kMaxBatch);  // a fast GPU
    EXPECT_EQ(next_batch_size(1e-7, 0.25, kMaxBatch, 7), 7);
    EXPECT_EQ(next_batch_size(3.0, 0.25, kMaxBatch, 1000), kFirstBatch);  // never fewer
    EXPECT_EQ(next_batch_size(3.0, 0, kMaxBatch, 1000), kMaxBatch);       // no time limit
    EXPECT_EQ(next_batch_size(0, kBatchTargetS, 16, 1000), 16);  // a short context's capacity
}

// On a slow adapter a prompt goes in short submissions (a desktop GPU's watchdog stops long
// ones): with a plan that sizes batches by time (Batching::Timed) and a target far below what
// a token takes, a prompt of fewer than kMaxBatch tokens goes in batches of kFirstBatch
// tokens. The logits equal those of the same prompt in one batch (Batching::Whole), up to the
// F16 rounding of the K/V that earlier batches leave in the cache, and the CPU's.
TEST_F(Forward, LongPromptOnASlowAdapterIsSplitByMeasuredTime) {
    auto s = synth_model(GgmlType::Q4_0);
    const int n_prompt = 2 * kFirstBatch - 24, n_ctx = n_prompt + 8;
    std::vector<int32_t> prompt(static_cast<size_t>(n_prompt));
    for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = int32_t((i * 37 + 11) % s->m.hp.n_vocab);
    // Logits after the prompt and one decode step, and the profile's prompt submissions.
    auto run = [&](Batching batching, int& batches) {
        std::vector<float> out(2 * size_t(s->m.hp.n_vocab));
        ::testing::internal::CaptureStderr();
        {
            auto vk = create_backend_model(s->m, test_options(n_ctx, [&](Plan& p) {
                                               p.batching = batching;
                                               p.batch_target_s = 1e-9;
                                               p.profile = Overrides::Profile::Stages;
                                           }));
            EXPECT_TRUE(vk.ok()) << vk.error().message;
            auto r =
                vk.ok() ? (*vk)->create_runner(n_ctx) : Result<std::unique_ptr<Runner>>(vk.error());
            EXPECT_TRUE(r.ok());
            if (r.ok()) {
                EXPECT_TRUE((*r)->forward(prompt, 0, out.data()).ok());
                std::vector<int32_t> one = {7};
                EXPECT_TRUE((*r)->forward(one, n_prompt, out.data() + s->m.hp.n_vocab).ok());
            }
        }
        const std::string report = ::testing::internal::GetCapturedStderr();
        const std::string key = "GPU profile, prompt batches: ";
        const size_t at = report.find(key);
        batches = at == std::string::npos ? -1 : std::atoi(report.c_str() + at + key.size());
        return out;
    };
    int whole = 0, split = 0;
    auto a = run(Batching::Whole, whole), b = run(Batching::Timed, split);
    EXPECT_EQ(whole, 1);
    // kFirstBatch tokens, then the rest (never fewer than kFirstBatch a batch but for the last).
    EXPECT_EQ(split, 2);
    const size_t V = s->m.hp.n_vocab;
    // (Single-token batches run the decode kernels: F16 dot products where the device has them.)
    // (With int8 activations, the K/V's rounding also moves some activations' 8-bit rounding.)
    const double tol = prompt_tol(GgmlType::Q4_0, n_prompt);
    EXPECT_LT(nmse(b.data(), a.data(), V), tol) << "after the prompt";
    EXPECT_LT(nmse(b.data() + V, a.data() + V, V), tol) << "after a decode step";

    auto twin = dequantized_twin(s->m);
    auto cpu_model = cpu::create_backend_model(twin->m, 1);
    ASSERT_TRUE(cpu_model.ok());
    auto cr = (*cpu_model)->create_runner(n_ctx);
    ASSERT_TRUE(cr.ok());
    std::vector<float> lc(V);
    ASSERT_TRUE((*cr)->forward(prompt, 0, lc.data()).ok());
    EXPECT_LT(nmse(b.data(), lc.data(), V), tol);
}

TEST_F(Forward, RefusesAModelThatDoesNotFit) {
    auto s = synth_model(GgmlType::F32);
    auto est = estimate_fit(s->m, 32, test_device(), 100000);
    ASSERT_TRUE(est.ok()) << est.error().message;
    const auto& hp = s->m.hp;
    EXPECT_EQ(est->kv_cache, 2ull * hp.n_layer * 32 * hp.n_kv_dim() * 2);
    EXPECT_GE(est->weights, s->m.weight_bytes);
    EXPECT_GT(est->scratch, 0u);
    EXPECT_EQ(est->total, est->weights + est->kv_cache + est->scratch);
    EXPECT_EQ(est->available, 100000u);
    EXPECT_EQ(est->available_source, "override");
    EXPECT_FALSE(est->fits);

    auto real = estimate_fit(s->m, 32, test_device());
    ASSERT_TRUE(real.ok());
    EXPECT_TRUE(real->fits) << real->available;
    EXPECT_NE(real->available_source, "override");

    Options o = test_options(32);
    o.fake_available = 100000;
    auto vk = create_backend_model(s->m, o);
    ASSERT_FALSE(vk.ok());
    EXPECT_EQ(vk.error().code, "vulkan.does_not_fit");
    EXPECT_NE(vk.error().message.find("needs"), std::string::npos) << vk.error().message;
    EXPECT_NE(vk.error().message.find("available"), std::string::npos) << vk.error().message;
    EXPECT_NE(vk.error().message.find(format_bytes(est->total)), std::string::npos)
        << vk.error().message;
}

TEST_F(Forward, UploadCanBeCancelled) {
    auto s = synth_model(GgmlType::F32);
    Options o = test_options(32);
    int calls = 0;
    o.progress = [&](float p) {
        EXPECT_GE(p, 0.0f);
        EXPECT_LE(p, 1.0f);
        return ++calls < 3;
    };
    auto vk = create_backend_model(s->m, o);
    ASSERT_FALSE(vk.ok());
    EXPECT_EQ(vk.error().code, "vulkan.cancelled");
}

TEST_F(Forward, MemoryStatsCountOwnAllocations) {
    auto s = synth_model(GgmlType::F32);
    auto vk = create_backend_model(s->m, test_options(32));
    ASSERT_TRUE(vk.ok()) << vk.error().message;
    MemoryStats before = (*vk)->memory();
    EXPECT_GE(before.used, s->m.weight_bytes);
    EXPECT_GT(before.budget, 0u);
    auto r = (*vk)->create_runner(32);
    ASSERT_TRUE(r.ok());
    EXPECT_GT((*vk)->memory().used, before.used);
}

// The real model through the public API: greedy continuations equal the reference.
TEST_F(Forward, Stories260KGreedyMatchesReference) {
    std::ifstream in(ember::test::shared_path("models/stories260K.reference.json"));
    if (!in) GTEST_SKIP() << "no stories260K reference";
    auto ref = nlohmann::json::parse(in);
    LoadParams lp;
    lp.backend = BackendKind::Vulkan;
    lp.device = test_device();
    lp.n_ctx = 128;
    auto model = Model::load(ember::test::stories_model(), lp);
    ASSERT_TRUE(model.ok()) << model.error().message;
    ASSERT_EQ((*model)->backend().kind, BackendKind::Vulkan) << (*model)->backend().fallback_reason;
    for (const auto& c : ref["cases"]) {
        auto session = Session::create(**model);
        ASSERT_TRUE(session.ok());
        std::vector<int32_t> ids = c["prompt_ids"].get<std::vector<int32_t>>();
        auto want = c["greedy_32"].get<std::vector<int32_t>>();
        auto logits = (*session)->eval(ids);
        ASSERT_TRUE(logits.ok()) << logits.error().message;
        auto ref_logits = c["logits_after_prompt"].get<std::vector<float>>();
        ASSERT_EQ(logits->size(), ref_logits.size());
        EXPECT_LT(nmse(logits->data(), ref_logits.data(), ref_logits.size()), 1e-6);
        std::vector<int32_t> got;
        int32_t next = int32_t(std::max_element(logits->begin(), logits->end()) - logits->begin());
        while (got.size() < want.size()) {
            got.push_back(next);
            std::vector<int32_t> one = {next};
            auto am = (*session)->eval_argmax(one);
            ASSERT_TRUE(am.ok()) << am.error().message;
            next = *am;
        }
        EXPECT_EQ(got, want) << c["prompt"];
    }
}

// EMBER_VULKAN_PROFILE=1: the runner's report names every decode stage and counts the steps.
TEST_F(Forward, ProfileReportsEveryStage) {
    auto model = load_profiled_stories();
    ASSERT_TRUE(model.ok()) << model.error().message;
    ::testing::internal::CaptureStderr();
    {
        auto session = Session::create(**model);
        ASSERT_TRUE(session.ok());
        std::vector<int32_t> prompt = {1, 403, 407};
        ASSERT_TRUE((*session)->eval(prompt).ok());
        for (int32_t t : {261, 378, 432}) {
            std::vector<int32_t> one = {t};
            ASSERT_TRUE((*session)->eval_argmax(one).ok());
        }
    }
    std::string report = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(report.find("GPU profile, prompt batches: 1 submissions"), std::string::npos)
        << report;
    EXPECT_NE(report.find("GPU profile, decode steps: 3 submissions"), std::string::npos) << report;
    for (const char* stage :
         {"norm + qkv + rope + kv store", "attention", "wo + residual", "norm + gate/up + silu",
          "down + residual", "output norm + head", "argmax", "embed"})
        EXPECT_NE(report.find(stage), std::string::npos) << stage << "\n" << report;
}

// Session::set_profiling(false): the submissions that follow run but stay out of the profile,
// and its header says how many were left out.
TEST_F(Forward, ProfileLeavesOutWhatRanWhileOff) {
    auto model = load_profiled_stories();
    ASSERT_TRUE(model.ok()) << model.error().message;
    ::testing::internal::CaptureStderr();
    {
        auto session = Session::create(**model);
        ASSERT_TRUE(session.ok());
        (*session)->set_profiling(false);
        std::vector<int32_t> prompt = {1, 403, 407};
        ASSERT_TRUE((*session)->eval(prompt).ok());
        for (int32_t t : {261, 378}) ASSERT_TRUE((*session)->eval(std::vector<int32_t>{t}).ok());
        (*session)->set_profiling(true);
        for (int32_t t : {432, 261, 378})
            ASSERT_TRUE((*session)->eval(std::vector<int32_t>{t}).ok());
    }
    const std::string report = ::testing::internal::GetCapturedStderr();
    // Every prompt batch was left out: no table for them.
    EXPECT_EQ(report.find("prompt batches"), std::string::npos) << report;
    EXPECT_NE(report.find("GPU profile, decode steps: 3 submissions (2 more made while profiling "
                          "was off left out)"),
              std::string::npos)
        << report;
}

// `ember-cli bench` profiles its timed runs only: with -d 3 -p 8 -n 4 -r 2, 2 prompts and 8
// decode steps; the warm-up's prompt and 4 steps and the six evaluations of the -d context are
// left out.
TEST_F(Forward, BenchProfilesTheTimedRunsOnly) {
    if (!std::filesystem::exists(cli())) GTEST_SKIP() << "no " << cli();
    auto r = ember::test::run_cli(
        cli(),
        {"bench", "-m", ember::test::stories_model(), "-d", "3", "-p", "8", "-n", "4", "-r", "2",
         "--backend", "vulkan", "--device", test_device()},
        "EMBER_VULKAN_PROFILE=1");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const char* want :
         {"bench: the GPU profile below covers the timed runs only (2 x pp8, 2 x tg4)",
          "GPU profile, prompt batches: 2 submissions (7 more made while profiling was off left "
          "out)",
          "GPU profile, decode steps: 8 submissions (4 more made while profiling was off left "
          "out)"})
        EXPECT_NE(r.err.find(want), std::string::npos) << want << "\n" << r.err;
}

}  // namespace
}  // namespace ember::vulkan::test
