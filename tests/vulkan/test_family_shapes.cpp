// Files of each family in shapes other than the reference models' (tests/vulkan/
// test_families_e2e.cpp): head sizes that are not embedding / heads and not powers of two, odd
// head counts, GQA ratios 1, 3, 5 and 7, one KV head, partial rotary, sliding windows shorter
// and longer than the context, Gemma 3 with a global layer in the middle, soft-caps of other
// values, vocabularies that are not multiples of 32, widths that are not multiples of 32, tied
// and untied outputs, F32 and F16 weights (the reference models' types), and quantized mixes
// whose decode takes the fused kernels of F16 arithmetic. Each runs on Vulkan (no "unsupported"
// error where the CPU runs it) and matches the CPU on the same file (a quantized one: on its F32
// twin): a prompt as one batch, then single tokens, each step's logits within 2e-3 relative L2
// for F32 and F16 (the bar the reference models are held to), and the greedy choice of every step
// where the CPU's top two logits are not close.
//
// The files are `ember-cli mkmodel` ones (random weights, the converter's tensor names and keys
// for each architecture), then metadata changed where mkmodel has no option for a variation.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "gguf/gguf.h"
#include "gguf/writer.h"
#include "small_models.h"
#include "test_util.h"
#include "vk_test_util.h"

namespace fs = std::filesystem;

namespace ember::vulkan::test {
namespace {

// A metadata key's new value (F32 or U32), or none: the key is dropped.
struct Key {
    std::string name;
    enum { U32, F32, Drop } kind = U32;
    double value = 0;
};

struct ShapeCase {
    std::string name;
    const char* preset;              // mkmodel's architecture and rope settings
    std::vector<std::string> shape;  // mkmodel options: --embd, --heads, ...
    std::vector<Key> keys;           // metadata changed after mkmodel
    const char* type = "f32";
    bool no_longrope = false;  // drop Phi-3 LongRoPE's factors and keys (mkmodel's preset has them)
};

void PrintTo(const ShapeCase& c, std::ostream* os) {
    *os << c.name;
}

// The file `from` with `keys` changed, written to `to`; without LongRoPE's tensors and keys where
// `no_longrope`.
Status rewrite_keys(const std::string& from, const std::string& to, const std::vector<Key>& keys,
                    bool no_longrope) {
    EMBER_ASSIGN_OR_RETURN(auto file, gguf::File::open(from));
    gguf::Writer w;
    auto changed = [&](const std::string& k) {
        return std::any_of(keys.begin(), keys.end(), [&](const Key& x) { return x.name == k; });
    };
    auto longrope = [&](const std::string& name) {
        return no_longrope && (name.find("rope.scaling.") != std::string::npos ||
                               name.rfind("rope_factors_", 0) == 0);
    };
    for (const auto& kv : file->metadata())
        if (kv.key != "general.alignment" && !changed(kv.key) && !longrope(kv.key))
            w.set_value(kv.key, kv.value);
    for (const Key& k : keys) {
        if (k.kind == Key::U32) w.set_u32(k.name, uint32_t(k.value));
        if (k.kind == Key::F32) w.set_f32(k.name, float(k.value));
    }
    w.set_alignment(uint32_t(file->alignment()));
    for (const auto& t : file->tensors()) {
        if (longrope(t.name)) continue;
        const uint8_t* src = file->tensor_data(t);
        w.add_tensor(t.name, t.type, std::vector<uint64_t>(t.ne, t.ne + t.n_dims),
                     std::vector<uint8_t>(src, src + t.n_bytes));
    }
    return w.write(to);
}

// Top-1 minus top-2 of a row of logits, and the top-1's index.
std::pair<int, float> top_margin(std::span<const float> v) {
    const int i = int(std::max_element(v.begin(), v.end()) - v.begin());
    float second = -INFINITY;
    for (size_t j = 0; j < v.size(); ++j)
        if (int(j) != i) second = std::max(second, v[j]);
    return {i, v[size_t(i)] - second};
}

class FamilyShapes : public VulkanTest, public ::testing::WithParamInterface<ShapeCase> {
protected:
    void SetUp() override {
        VulkanTest::SetUp();
        if (!no_device_reason().empty()) GTEST_SKIP() << "no Vulkan device: " << no_device_reason();
        if (!fs::exists(cli()))
            GTEST_SKIP() << "no ember-cli at " << cli() << " ($EMBER_CLI_PATH names one)";
        const ShapeCase& c = GetParam();
        dir = ember::test::temp_dir() / ("shapes-" + c.name);
        fs::create_directories(dir);
        const std::string made = (dir / "made.gguf").string();
        path = (dir / "model.gguf").string();
        // The case's shape options override make_small_model's test sizes (every case gives them).
        std::vector<std::string> extra = c.shape;
        extra.insert(extra.end(), {"--ctx", "1024"});
        const auto r = make_small_model(made, c.preset, c.type, "11", extra);
        ASSERT_EQ(r.exit_code, 0) << r.err;
        auto st = rewrite_keys(made, path, c.keys, c.no_longrope);
        ASSERT_TRUE(st.ok()) << st.error().message;
        quantized = std::string(c.type) != "f32" && std::string(c.type) != "f16";
        reference = quantized ? (dir / "twin-f32.gguf").string() : path;
        if (quantized) {
            st = write_dequantized_twin(path, reference);
            ASSERT_TRUE(st.ok()) << st.error().message;
        }
    }
    void TearDown() override {
        std::error_code ec;
        fs::remove_all(dir, ec);
        VulkanTest::TearDown();
    }
    fs::path dir;
    std::string path, reference;  // the file, and the one the CPU runs (its F32 twin if quantized)
    bool quantized = false;

    // prompt in one batch, then `decode` single tokens: the CPU's greedy choices fed to both,
    // the logits of every step compared, and the device's choice the CPU's wherever the CPU's
    // margin leaves room for the F16 rounding of activations and of the K/V cache.
    void compare(int n_ctx, std::vector<int32_t> prompt, int decode) {
        const std::string& name = GetParam().name;
        auto vk = load_on(path, BackendKind::Vulkan, n_ctx);
        auto cpu = load_on(reference, BackendKind::Cpu, n_ctx);
        ASSERT_TRUE(vk && cpu);
        // F32 and F16 files: the reference models' bar. Quantized ones against their F32 twin:
        // the device's F16 activations over larger matrices in the decode steps
        // (test_quant_families.cpp's bar; 0.7e-3 to 1.8e-3 measured), and in a prompt of 8 or
        // more tokens the int8 dot products' 8-bit activations where the device has them
        // (lavapipe: 1.8e-3 to 7.3e-3 measured).
        const double decode_bar = quantized ? 3e-3 : 2e-3, prompt_bar = quantized ? 1.5e-2 : 2e-3;
        auto sv = Session::create(*vk), sc = Session::create(*cpu);
        ASSERT_TRUE(sv.ok() && sc.ok());
        std::vector<int32_t> step = std::move(prompt);
        double worst = 0;
        for (int i = 0; i <= decode; ++i) {
            auto lv = (*sv)->eval(step);
            ASSERT_TRUE(lv.ok()) << name << " step " << i << ": " << lv.error().message;
            const std::vector<float> v(lv->begin(), lv->end());
            auto lc = (*sc)->eval(step);
            ASSERT_TRUE(lc.ok()) << lc.error().message;
            const std::vector<float> want(lc->begin(), lc->end());
            ASSERT_EQ(v.size(), want.size());
            const double err = rel_l2(v, want);
            EXPECT_LE(err, i ? decode_bar : prompt_bar) << name << " step " << i;
            worst = std::max(worst, err);
            const auto [top, margin] = top_margin(want);
            if (margin > 0.02f) {
                EXPECT_EQ(top_margin(v).first, top)
                    << name << " step " << i << " margin " << margin;
            }
            step = {int32_t(top)};
        }
        RecordProperty("worst_rel_l2", std::to_string(worst));
    }
};

// 20 tokens (a prompt attention on tensor cores where the device has them: 16 or more queries),
// then 8 decode steps. (Ids below 260, the smallest vocabulary here.)
TEST_P(FamilyShapes, VulkanMatchesCpu) {
    compare(64,
            {1, 200, 17, 42, 259, 101, 77, 13, 208, 5, 96, 150, 211, 3, 64, 128, 33, 250, 199, 7},
            8);
}

// Sliding-window layers keep rings of window + batch - 1 rows where that is less than the
// context (a batch is up to 512 tokens): a context of 600 and a 560-token prompt, whose batches
// (sized by time on lavapipe) wrap the rings, then decode steps that read across the wrap.
class FamilyRings : public FamilyShapes {};

TEST_P(FamilyRings, LongPromptWrapsTheRings) {
    std::vector<int32_t> prompt = {1};
    for (int i = 1; i < 560; ++i) prompt.push_back(int32_t(3 + (i * 97) % 250));
    compare(600, prompt, 4);
}

using K = Key;
const std::vector<ShapeCase> kCases = {
    // Mistral-like: head size 24 given by key_length (not 80 / 5), five query heads on one KV
    // head (GQA 5), an FFN of 200 (not a multiple of 32), untied.
    {"llama_hd24_gqa5",
     "mistral-nemo-12b",
     {"--embd", "80", "--heads", "5", "--kv-heads", "1", "--head-dim", "24", "--ffn", "200",
      "--layers", "2"},
     {}},
    // Llama 3 with rope_freqs, three query heads a KV head (GQA 3), heads of 20; F16 weights.
    {"llama3_gqa3_f16",
     "llama3.1-8b",
     {"--embd", "120", "--heads", "6", "--kv-heads", "2", "--ffn", "160", "--layers", "2"},
     {},
     "f16"},
    // Plain Llama whose K/V rows (18) are no multiple of 4: not the fused QKV kernel.
    {"llama_kv18",
     "llama2-7b",
     {"--embd", "54", "--heads", "3", "--kv-heads", "1", "--ffn", "96", "--layers", "2"},
     {}},
    // Qwen 2 with biases, seven query heads on one KV head (GQA 7), heads of 16, a vocabulary
    // of 300.
    {"qwen2_gqa7",
     "qwen2.5-7b",
     {"--embd", "112", "--heads", "7", "--kv-heads", "1", "--ffn", "224", "--layers", "2",
      "--vocab", "300"},
     {}},
    // Qwen 2 in F16, tied, heads of 40 (no power of two).
    {"qwen2_hd40_f16",
     "qwen2.5-0.5b",
     {"--embd", "160", "--heads", "4", "--kv-heads", "2", "--ffn", "256", "--layers", "2"},
     {},
     "f16"},
    // Qwen 3 with q/k norms: heads of 80 (key_length), 3 query heads a KV head.
    {"qwen3_hd80_gqa3",
     "qwen3-8b",
     {"--embd", "96", "--heads", "6", "--kv-heads", "2", "--head-dim", "80", "--ffn", "192",
      "--layers", "2"},
     {}},
    // Qwen 3 with one head and no GQA: heads of 128.
    {"qwen3_one_head",
     "qwen3-8b",
     {"--embd", "64", "--heads", "1", "--kv-heads", "1", "--head-dim", "128", "--ffn", "96",
      "--layers", "2"},
     {}},
    // Gemma 2: three heads of 48 (GQA 1), window 5 (shorter than the context), soft-caps 20
    // and 15, 5 layers.
    {"gemma2_window5",
     "gemma2-9b",
     {"--embd", "72", "--heads", "3", "--kv-heads", "3", "--head-dim", "48", "--ffn", "144",
      "--layers", "5"},
     {{"gemma2.attention.sliding_window", K::U32, 5},
      {"gemma2.attn_logit_softcapping", K::F32, 20},
      {"gemma2.final_logit_softcapping", K::F32, 15}}},
    // Gemma 2 without soft-cap keys (the defaults 50 and 30) and a window longer than the
    // context.
    {"gemma2_default_caps",
     "gemma2-9b",
     {"--embd", "64", "--heads", "2", "--kv-heads", "1", "--head-dim", "64", "--ffn", "128",
      "--layers", "2"},
     {{"gemma2.attention.sliding_window", K::U32, 100},
      {"gemma2.attn_logit_softcapping", K::Drop},
      {"gemma2.final_logit_softcapping", K::Drop}}},
    // Gemma 2 with heads of 512 (F16): past the tensor cores' head sizes (prompt attention on
    // the scalar kernel there), 64 threads a position in the split decode attention.
    {"gemma2_hd512_f16",
     "gemma2-9b",
     {"--embd", "64", "--heads", "2", "--kv-heads", "1", "--head-dim", "512", "--ffn", "96",
      "--layers", "2"},
     {},
     "f16"},
    // Gemma 3 with 8 layers: local 0-4, global 5, local 6-7; window 6; heads of 32, 5 query
    // heads on one KV head.
    {"gemma3_8layers",
     "gemma3-4b",
     {"--embd", "96", "--heads", "5", "--kv-heads", "1", "--head-dim", "32", "--ffn", "160",
      "--layers", "8"},
     {{"gemma3.attention.sliding_window", K::U32, 6}}},
    // Gemma 3 with heads of 112 and a window longer than the context.
    {"gemma3_hd112",
     "gemma3-4b",
     {"--embd", "64", "--heads", "2", "--kv-heads", "2", "--head-dim", "112", "--ffn", "128",
      "--layers", "6"},
     {{"gemma3.attention.sliding_window", K::U32, 512}}},
    // Phi-3: heads of 20 with partial rotary (12 of 20 dimensions), a window of 7.
    {"phi3_partial_rope",
     "phi3.5-mini",
     {"--embd", "100", "--heads", "5", "--kv-heads", "5", "--ffn", "136", "--layers", "2"},
     {{"phi3.rope.dimension_count", K::U32, 12}, {"phi3.attention.sliding_window", K::U32, 7}},
     "f32",
     true},
    // Llama with partial rotary (16 of 24 dimensions): the family stages.
    {"llama_partial_rope",
     "llama2-7b",
     {"--embd", "96", "--heads", "4", "--kv-heads", "2", "--ffn", "160", "--layers", "2"},
     {{"llama.rope.dimension_count", K::U32, 16}}},
    // Llama with heads of 96 (384 / 4, no key_length): the family stages too.
    {"llama_hd96",
     "llama2-7b",
     {"--embd", "384", "--heads", "4", "--kv-heads", "2", "--ffn", "512", "--layers", "2"},
     {},
     "q4_k_m"},
    // Phi-3 with GQA 3, a window of 0 (Phi-4's: none) and a vocabulary of 333 (untied).
    {"phi3_gqa3",
     "phi3.5-mini",
     {"--embd", "96", "--heads", "6", "--kv-heads", "2", "--ffn", "160", "--layers", "2", "--vocab",
      "333"},
     {{"phi3.attention.sliding_window", K::U32, 0}},
     "f32",
     true},
    // Quantized (Q4_K_M and Q5_K_M mixes, Q6_K): the fused decode kernels of F16 arithmetic
    // (subgroup mode, Q/K/V heads finished in the mat-vec where their rows allow) with head sizes
    // of 6, 18, 40 and 48, rows that fall back to Q5_0 / Q8_0, GQA 1, 3 and 7.
    {"qwen2_q4km_hd40",
     "qwen2.5-7b",
     {"--embd", "288", "--heads", "6", "--kv-heads", "2", "--head-dim", "40", "--ffn", "352",
      "--layers", "2"},
     {},
     "q4_k_m"},
    {"llama3_q4km_hd18",
     "llama3.1-8b",
     {"--embd", "256", "--heads", "6", "--kv-heads", "2", "--head-dim", "18", "--ffn", "256",
      "--layers", "2"},
     {},
     "q4_k_m"},
    {"gemma2_q4km_hd48",
     "gemma2-9b",
     {"--embd", "256", "--heads", "3", "--kv-heads", "3", "--head-dim", "48", "--ffn", "512",
      "--layers", "3"},
     {{"gemma2.attention.sliding_window", K::U32, 5}},
     "q4_k_m"},
    {"gemma3_q5km_hd6",
     "gemma3-4b",
     {"--embd", "256", "--heads", "8", "--kv-heads", "2", "--head-dim", "6", "--ffn", "256",
      "--layers", "6"},
     {{"gemma3.attention.sliding_window", K::U32, 4}},
     "q5_k_m"},
    {"qwen2_q6k_gqa7",
     "qwen2.5-7b",
     {"--embd", "256", "--heads", "7", "--kv-heads", "1", "--head-dim", "32", "--ffn", "512",
      "--layers", "2"},
     {},
     "q6_k"},
    {"phi3_q4km_partial_rope",
     "phi3.5-mini",
     {"--embd", "160", "--heads", "5", "--kv-heads", "5", "--ffn", "320", "--layers", "2"},
     {{"phi3.rope.dimension_count", K::U32, 16}},
     "q4_k_m",
     true},
};

// Every layer of Phi-3 slides; Gemma 2 every other one; Gemma 3 five of six (and its Q/K/V heads
// dispatch stores K and V into the rings in Q4_K_M).
const std::vector<ShapeCase> kRingCases = {
    {"gemma2_window6",
     "gemma2-9b",
     {"--embd", "64", "--heads", "2", "--kv-heads", "1", "--head-dim", "32", "--ffn", "96",
      "--layers", "2"},
     {{"gemma2.attention.sliding_window", K::U32, 6}}},
    {"gemma3_q4km_window9",
     "gemma3-4b",
     {"--embd", "256", "--heads", "4", "--kv-heads", "2", "--head-dim", "64", "--ffn", "256",
      "--layers", "6"},
     {{"gemma3.attention.sliding_window", K::U32, 9}},
     "q4_k_m"},
    {"phi3_window5",
     "phi3.5-mini",
     {"--embd", "64", "--heads", "2", "--kv-heads", "2", "--ffn", "96", "--layers", "2"},
     {{"phi3.attention.sliding_window", K::U32, 5}},
     "f32",
     true},
};

INSTANTIATE_TEST_SUITE_P(Shapes, FamilyRings, ::testing::ValuesIn(kRingCases),
                         [](const auto& info) { return info.param.name; });

INSTANTIATE_TEST_SUITE_P(Shapes, FamilyShapes, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace ember::vulkan::test
