// Quantized files of each family (ember-cli mkmodel's presets, shrunk: 2 to 6 layers, a 256-wide
// embedding, a 512-token vocabulary) on Vulkan against the CPU, through the public API: the
// Q4_K_M mix as llama.cpp makes it (Q4_K; Q6_K for the output and for attn_v / ffn_down on the
// layers llama.cpp picks; Q5_K for Phi-3's fused qkv; Q5_0 / Q8_0 where a row is not a multiple
// of 256) and Q4_0. A prompt runs as one batch (the prompt path), then single tokens (the fused
// decode path); the logits of each step and the greedy continuation are compared.
//
// The reference is the CPU on a twin file whose matrices are the same quantized weights
// dequantized to F32: the device multiplies the dequantized weights in floating point, so the two
// differ only by summation order and by the F16 rounding of activations where the device takes
// F16 dot products. The CPU on the quantized file itself rounds every activation to 8 bits
// (Q8_0 / Q8_K blocks) before its integer dot products; that is a second, looser comparison.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "gguf/gguf.h"
#include "gguf/writer.h"
#include "model/llama.h"
#include "quant/quant.h"
#include "small_models.h"
#include "test_util.h"
#include "vk_test_util.h"
#include "vulkan/forward.h"

namespace fs = std::filesystem;

namespace ember::vulkan::test {
namespace {

struct QuantCase {
    std::string name;
    const char* preset;
    const char* type;                 // mkmodel --type
    std::vector<std::string> extra;   // shape options beyond the common small ones
    std::vector<GgmlType> must_have;  // types the file must hold (what the case is for)
};

// Test names and failure messages show the case's name, not its bytes.
void PrintTo(const QuantCase& c, std::ostream* os) {
    *os << c.name;
}

// Bars in relative L2 over the vocabulary's logits.
// Against the dequantized twin: a device mat-vec with F16 activations rounds each input to 11
// bits (relative error up to 2^-12, ~2.8e-4 RMS per element after the norm), and the K/V cache is
// F16; over a few layers of random weights, whose gains are about 1, that stays near 1e-3 (5e-4
// to 1e-3 measured on lavapipe). 3e-3 is 10x below what one wrong block costs (a misplaced
// scale, a high bit of Q5_0 or Q6_K read from the wrong place: 3e-2 and more).
constexpr double kTwinBar = 3e-3;
// Against the CPU on the same quantized file: the CPU rounds every mat-vec's activations to 8
// bits (Q8_0 / Q8_K blocks, absmax-scaled: ~2e-3 RMS relative per element), which puts it 5e-3
// to 1e-2 from the twin; 3e-2 over that.
constexpr double kSameFileBar = 3e-2;
// Some steps of random-weight models are ill-conditioned (a near-zero vector normed by q/k or
// post-norms multiplies every rounding error): there, the CPU's own 8-bit path strays from the
// twin several times further than elsewhere (4e-2 at one step of the Gemma 3 Q4_0 file). The
// bars scale with that measure of the step: the device within a quarter of the CPU's own error
// of the twin, and within twice it of the CPU.
double twin_bar(double cpu_err) {
    return std::max(kTwinBar, 0.25 * cpu_err);
}
double same_file_bar(double cpu_err) {
    return std::max(kSameFileBar, 2.0 * cpu_err);
}

int argmax(std::span<const float> v) {
    return int(std::max_element(v.begin(), v.end()) - v.begin());
}

class QuantFamilies : public VulkanTest, public ::testing::WithParamInterface<QuantCase> {
protected:
    void SetUp() override {
        VulkanTest::SetUp();
        if (!no_device_reason().empty()) GTEST_SKIP() << "no Vulkan device: " << no_device_reason();
        if (!fs::exists(cli()))
            GTEST_SKIP() << "no ember-cli at " << cli() << " ($EMBER_CLI_PATH names one)";
        const QuantCase& c = GetParam();
        dir = ember::test::temp_dir() / ("quantfam-" + c.name);
        fs::create_directories(dir);
        path = (dir / "model.gguf").string();
        twin = (dir / "twin-f32.gguf").string();
        const auto made = make_small_model(path, c.preset, c.type, "7", c.extra);
        ASSERT_EQ(made.exit_code, 0) << made.err;
        auto st = write_dequantized_twin(path, twin);
        ASSERT_TRUE(st.ok()) << st.error().message;
    }
    void TearDown() override {
        std::error_code ec;
        fs::remove_all(dir, ec);
        VulkanTest::TearDown();
    }
    fs::path dir;
    std::string path, twin;
};

// The file holds the types the case is for, and its decode step runs on the fused mat-vecs and
// the family's split attention.
TEST_P(QuantFamilies, FileHasTheMixAndDecodesOnFusedKernels) {
    const QuantCase& c = GetParam();
    auto file = gguf::File::open(path);
    ASSERT_TRUE(file.ok()) << file.error().message;
    std::set<GgmlType> types;
    for (const auto& t : (*file)->tensors()) types.insert(t.type);
    for (GgmlType t : c.must_have)
        EXPECT_TRUE(types.count(t)) << c.name << " has no " << type_traits(t)->name << " tensor";
    auto model = load_model(**file);
    ASSERT_TRUE(model.ok()) << model.error().message;
    const Adapter& a = shared_context().adapter();
    const std::string text = describe_plan(*model, a, make_plan(a));
    const size_t d0 = text.find("decode step"), d1 = text.find("prompt batch of");
    ASSERT_NE(d0, std::string::npos) << text;
    const std::string decode = text.substr(d0, d1 - d0);
    EXPECT_NE(decode.find("matvec_fused"), std::string::npos) << decode;
    EXPECT_EQ(decode.find("matmul q/k/v"), std::string::npos) << decode;
}

// A prompt in one batch, then single tokens: the logits of each step against the CPU on the
// dequantized twin (tight) and on the same file (8-bit activations there), then greedy decoding
// from the prompt gives the same tokens as the CPU on the twin.
TEST_P(QuantFamilies, VulkanMatchesCpu) {
    const QuantCase& c = GetParam();
    const int n_ctx = 64;
    auto vk = load_on(path, BackendKind::Vulkan, n_ctx);
    auto cpu = load_on(twin, BackendKind::Cpu, n_ctx);
    auto cpu_q = load_on(path, BackendKind::Cpu, n_ctx);
    ASSERT_TRUE(vk && cpu && cpu_q);
    ASSERT_EQ(vk->backend().kind, BackendKind::Vulkan);
    auto sv = Session::create(*vk), sc = Session::create(*cpu), sq = Session::create(*cpu_q);
    ASSERT_TRUE(sv.ok() && sc.ok() && sq.ok());

    // 7 tokens: one partial tile of the prompt matmuls (lavapipe runs them slowly).
    const std::vector<int32_t> prompt = {1, 300, 17, 42, 259, 401, 77};
    std::vector<std::vector<int32_t>> steps = {prompt, {5}, {310}, {499}};
    for (size_t i = 0; i < steps.size(); ++i) {
        auto lv = (*sv)->eval(steps[i]);
        ASSERT_TRUE(lv.ok()) << lv.error().message;
        const std::vector<float> v(lv->begin(), lv->end());
        auto lc = (*sc)->eval(steps[i]);
        ASSERT_TRUE(lc.ok()) << lc.error().message;
        const std::vector<float> want(lc->begin(), lc->end());
        auto lq = (*sq)->eval(steps[i]);
        ASSERT_TRUE(lq.ok()) << lq.error().message;
        const std::vector<float> q(lq->begin(), lq->end());
        ASSERT_EQ(v.size(), want.size());
        const char* what = i == 0 ? "the prompt" : "decode step";
        const double e_twin = rel_l2(v, want), e_same = rel_l2(v, q), e_cpu = rel_l2(q, want);
        EXPECT_LE(e_twin, twin_bar(e_cpu))
            << c.name << ": " << what << " " << i << " vs the F32 twin (CPU: " << e_cpu << ")";
        EXPECT_LE(e_same, same_file_bar(e_cpu))
            << c.name << ": " << what << " " << i << " vs the CPU (CPU vs twin: " << e_cpu << ")";
        RecordProperty("rel_l2_twin_" + std::to_string(i), std::to_string(e_twin));
        RecordProperty("rel_l2_same_" + std::to_string(i), std::to_string(e_same));
    }

    // Greedy from the prompt, fresh sessions: 6 tokens.
    auto greedy = [&](Model& m) {
        std::vector<int32_t> out;
        auto s = Session::create(m);
        EXPECT_TRUE(s.ok());
        if (!s.ok()) return out;
        auto l = (*s)->eval(prompt);
        for (int i = 0; i < 6 && l.ok(); ++i) {
            out.push_back(argmax(*l));
            l = (*s)->eval(std::span(&out.back(), 1));
        }
        EXPECT_TRUE(l.ok()) << l.error().message;
        return out;
    };
    const auto gv = greedy(*vk), gc = greedy(*cpu);
    EXPECT_EQ(gv, gc) << c.name << ": greedy continuation on Vulkan vs the CPU on the F32 twin";
}

// Common: 256-wide embedding, 4 heads of 64, 2 K/V heads, FFN 512, 512 tokens. A head size of 96
// makes Q's rows 384 wide, so attn_output falls back to Q5_0 (Q4_K_M) as llama.cpp does; an FFN
// of 384 makes ffn_down Q5_0, or Q8_0 on the layers where Q4_K_M gives it Q6_K.
const std::vector<QuantCase> kCases = [] {
    using G = GgmlType;
    std::vector<QuantCase> v = {
        {"qwen2_q4km",
         "qwen2.5-7b",
         "q4_k_m",
         {"--layers", "2", "--ffn", "384"},
         {G::Q4_K, G::Q6_K, G::Q5_0, G::Q8_0}},
        {"qwen3_q4km",
         "qwen3-8b",
         "q4_k_m",
         {"--layers", "2", "--head-dim", "96"},
         {G::Q4_K, G::Q6_K, G::Q5_0}},
        {"gemma2_q4km",
         "gemma2-9b",
         "q4_k_m",
         {"--layers", "2", "--head-dim", "96"},
         {G::Q4_K, G::Q6_K, G::Q5_0}},
        {"gemma3_q4km",
         "gemma3-4b",
         "q4_k_m",
         {"--layers", "6", "--ffn", "384"},
         {G::Q4_K, G::Q6_K, G::Q5_0, G::Q8_0}},
        {"phi3_q4km", "phi3.5-mini", "q4_k_m", {"--layers", "2"}, {G::Q4_K, G::Q5_K, G::Q6_K}},
        {"llama3_q4km", "llama3.1-8b", "q4_k_m", {"--layers", "2"}, {G::Q4_K, G::Q6_K}},
        {"mistral_q4km",
         "mistral-nemo-12b",
         "q4_k_m",
         {"--layers", "2", "--head-dim", "128"},
         {G::Q4_K, G::Q6_K}},
    };
    for (const char* p : {"qwen2.5-7b", "qwen3-8b", "gemma2-9b", "gemma3-4b", "phi3.5-mini",
                          "llama3.1-8b", "mistral-nemo-12b"}) {
        const std::string family = std::string(p).substr(0, std::string(p).find_first_of(".-"));
        v.push_back({family + "_q4_0",
                     p,
                     "q4_0",
                     {"--layers", std::string(p) == "gemma3-4b" ? "6" : "2"},
                     {G::Q4_0}});
    }
    return v;
}();

INSTANTIATE_TEST_SUITE_P(Families, QuantFamilies, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace ember::vulkan::test
