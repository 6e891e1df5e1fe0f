// Q4_K_M files of each family, as people download them (mkmodel's presets of the real models,
// shrunk: few layers, a small embedding and vocabulary, llama.cpp's per-tensor types; one with
// YaRN, and Phi-3.5's LongRoPE at a context past its original one), load and generate on the CPU: a
// prompt in one batch gives the logits the same prompt gives token by token, and greedy decoding
// continues from there with finite logits.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "gguf/gguf.h"
#include "run_cli.h"
#include "test_util.h"

namespace fs = std::filesystem;

namespace {

struct Case {
    const char* preset;
    const char* arch;  // general.architecture of the file
    std::vector<std::string> overrides;
    int n_ctx;  // Phi-3.5: beyond its original 4096, so LongRoPE's long factors are used
    const char* rope_scaling = "";  // rope.scaling.type the file must have, if any
};

const std::vector<Case> kCases = {
    {"qwen2.5-7b", "qwen2", {"--layers", "2"}, 256},
    // Qwen 2.5's long context: YaRN factor 4 over its 32768 tokens.
    {"qwen2.5-7b", "qwen2", {"--layers", "2", "--yarn", "4"}, 256, "yarn"},
    {"qwen3-8b", "qwen3", {"--layers", "2", "--head-dim", "96"}, 256},
    {"gemma2-9b", "gemma2", {"--layers", "2", "--head-dim", "96"}, 256},
    {"gemma3-4b", "gemma3", {"--layers", "6", "--head-dim", "96"}, 256},
    {"phi3.5-mini", "phi3", {"--layers", "2"}, 4352},
    {"mistral-nemo-12b", "llama", {"--layers", "2", "--head-dim", "96"}, 256},
    {"llama3.1-8b", "llama", {"--layers", "2"}, 256},
};

double rel_l2(std::span<const float> a, std::span<const float> b) {
    double num = 0, den = 0;
    for (size_t i = 0; i < a.size(); i++) {
        num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
        den += double(b[i]) * b[i];
    }
    return std::sqrt(num / std::max(den, 1e-30));
}

bool all_finite(std::span<const float> v) {
    for (float x : v)
        if (!std::isfinite(x)) return false;
    return true;
}

class Q4KMFile : public ::testing::TestWithParam<Case> {};

TEST_P(Q4KMFile, LoadsAndGeneratesOnTheCpu) {
    const Case& c = GetParam();
    const fs::path dir = ember::test::temp_dir() / (std::string("q4km-") + c.preset);
    fs::create_directories(dir);
    const std::string path = (dir / "model.gguf").string();
    std::vector<std::string> args = {"mkmodel", "-o",         path,        "--preset", c.preset,
                                     "--type",  "q4_k_m",     "--embd",    "256",      "--heads",
                                     "4",       "--kv-heads", "2",         "--ffn",    "512",
                                     "--vocab", "512",        "--threads", "1"};
    args.insert(args.end(), c.overrides.begin(), c.overrides.end());
    const auto made = ember::test::run_cli(ember::test::cli_path(), args);
    ASSERT_EQ(made.exit_code, 0) << made.err;

    // The file is a Q4_K_M mix of the family: most matrices Q4_K.
    auto file = ember::gguf::File::open(path);
    ASSERT_TRUE(file.ok()) << file.error().message;
    EXPECT_EQ((*file)->get_string("general.architecture"), std::string(c.arch));
    if (*c.rope_scaling)
        EXPECT_EQ((*file)->get_string(std::string(c.arch) + ".rope.scaling.type"),
                  std::string(c.rope_scaling));
    int q4k = 0;
    for (const auto& t : (*file)->tensors()) q4k += t.type == ember::GgmlType::Q4_K;
    EXPECT_GT(q4k, 0);

    ember::LoadParams p;
    p.backend = ember::BackendKind::Cpu;
    p.n_threads = 2;
    p.n_ctx = c.n_ctx;
    auto model = ember::Model::load(path, p);
    ASSERT_TRUE(model.ok()) << model.error().code << ": " << model.error().message;
    EXPECT_EQ((*model)->info().architecture, std::string(c.arch));

    const std::vector<int32_t> prompt = {1, 300, 17, 42, 259, 401, 77};
    auto batch = ember::Session::create(**model);
    ASSERT_TRUE(batch.ok()) << batch.error().message;
    auto logits = (*batch)->eval(prompt);
    ASSERT_TRUE(logits.ok()) << logits.error().message;
    std::vector<float> last(logits->begin(), logits->end());
    ASSERT_EQ(last.size(), 512u);
    ASSERT_TRUE(all_finite(last));

    auto single = ember::Session::create(**model);
    ASSERT_TRUE(single.ok()) << single.error().message;
    std::vector<float> stepped;
    for (int32_t t : prompt) {
        auto l = (*single)->eval(std::span(&t, 1));
        ASSERT_TRUE(l.ok()) << l.error().message;
        stepped.assign(l->begin(), l->end());
    }
    EXPECT_LE(rel_l2(stepped, last), 1e-3);

    // Greedy decoding: 8 tokens, each in the vocabulary, logits finite throughout.
    for (int i = 0; i < 8; i++) {
        const int32_t next = int32_t(std::max_element(last.begin(), last.end()) - last.begin());
        ASSERT_LT(next, 512);
        auto l = (*batch)->eval(std::span(&next, 1));
        ASSERT_TRUE(l.ok()) << l.error().message;
        last.assign(l->begin(), l->end());
        ASSERT_TRUE(all_finite(last)) << "token " << i;
    }
    fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Families, Q4KMFile, ::testing::ValuesIn(kCases), [](const auto& info) {
    std::string n = std::string(info.param.preset) + (*info.param.rope_scaling ? "_" : "") +
                    info.param.rope_scaling;
    for (auto& ch : n)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
    return n;
});

}  // namespace
