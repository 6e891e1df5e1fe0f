// The rope variants beyond plain and linear scaling on Vulkan, against the CPU backend through
// Model/Session, on small files written by ember-cli mkmodel: Qwen's YaRN (rope.scaling.type
// yarn over a long original context) and Phi-3's LongRoPE (rope_factors_long/short and
// rope.scaling.attn_factor), the latter at a context above its original one (the long factors)
// and at one within it (the short factors), as LlamaModel::rope_factors picks them.
#include <gtest/gtest.h>

#include <filesystem>
#include <span>

#include "ember/ember.h"
#include "run_cli.h"
#include "test_util.h"

namespace {

const char* kDevice = "llvmpipe";  // tests choose the CPU-type adapter explicitly

bool have_lavapipe() {
    auto devs = ember::list_devices();
    if (!devs) return false;
    for (const auto& d : *devs)
        if (d.name.find(kDevice) != std::string::npos) return true;
    return false;
}

std::unique_ptr<ember::Model> load(const std::string& path, ember::BackendKind kind, int n_ctx) {
    ember::LoadParams p;
    p.backend = kind;
    p.device = kind == ember::BackendKind::Vulkan ? kDevice : "";
    p.n_ctx = n_ctx;
    auto m = ember::Model::load(path, p);
    EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().message);
    return m.ok() ? std::move(m).value() : nullptr;
}

double nmse(std::span<const float> a, std::span<const float> ref) {
    double num = 0, den = 0;
    for (size_t i = 0; i < ref.size(); i++) {
        num += (double(a[i]) - ref[i]) * (double(a[i]) - ref[i]);
        den += double(ref[i]) * ref[i];
    }
    return num / std::max(den, 1e-30);
}

struct RopeCase {
    const char* name;
    std::vector<std::string> shape;  // mkmodel's options after -o
    int n_ctx;                       // the runners' context
};

class RopeVariants : public ::testing::TestWithParam<RopeCase> {};

// Logits after a prompt (one batch: the prompt path) and after each of a few decoded tokens.
TEST_P(RopeVariants, VulkanMatchesCpu) {
    if (!have_lavapipe()) GTEST_SKIP() << "no lavapipe device";
    const RopeCase& c = GetParam();
    const std::string path = (ember::test::temp_dir() / (std::string(c.name) + ".gguf")).string();
    std::vector<std::string> args = {"mkmodel", "-o", path};
    args.insert(args.end(), c.shape.begin(), c.shape.end());
    auto r = ember::test::run_cli(ember::test::cli_path(), args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto cpu = load(path, ember::BackendKind::Cpu, c.n_ctx);
    auto vk = load(path, ember::BackendKind::Vulkan, c.n_ctx);
    ASSERT_TRUE(cpu && vk);
    ASSERT_EQ(vk->backend().kind, ember::BackendKind::Vulkan) << vk->backend().fallback_reason;
    auto sc = ember::Session::create(*cpu);
    auto sv = ember::Session::create(*vk);
    ASSERT_TRUE(sc.ok() && sv.ok());
    const std::vector<int32_t> prompt = {1, 17, 250, 3, 99, 300, 42, 7, 180, 64};
    auto lc = (*sc)->eval(prompt);
    ASSERT_TRUE(lc.ok()) << lc.error().message;
    const std::vector<float> want(lc->begin(), lc->end());
    auto lv = (*sv)->eval(prompt);
    ASSERT_TRUE(lv.ok()) << lv.error().message;
    EXPECT_LT(nmse(*lv, want), 1e-5) << c.name << " after the prompt";
    for (int32_t t : {5, 77, 310}) {
        auto a = (*sc)->eval(std::span<const int32_t>(&t, 1));
        ASSERT_TRUE(a.ok()) << a.error().message;
        const std::vector<float> ca(a->begin(), a->end());
        auto b = (*sv)->eval(std::span<const int32_t>(&t, 1));
        ASSERT_TRUE(b.ok()) << b.error().message;
        EXPECT_LT(nmse(*b, ca), 1e-5) << c.name << " decode";
    }
    std::filesystem::remove(path);
}

// Small shapes of the presets: head size 32, F32 weights, a 320-token vocabulary.
std::vector<std::string> small(const char* preset, std::vector<std::string> extra) {
    std::vector<std::string> s = {"--preset", preset, "--embd", "128", "--layers",  "2",
                                  "--heads",  "4",    "--ffn",  "256", "--vocab",   "320",
                                  "--type",   "f32",  "--seed", "5",   "--threads", "1"};
    s.insert(s.end(), extra.begin(), extra.end());
    return s;
}

INSTANTIATE_TEST_SUITE_P(
    Rope, RopeVariants,
    ::testing::Values(
        // YaRN factor 4 over an original context of 4096: the ramp runs over pairs 3 to 8.
        RopeCase{"qwen2_yarn",
                 small("qwen2.5-0.5b", {"--kv-heads", "2", "--ctx", "4096", "--yarn", "4"}), 64},
        // LongRoPE with an original context of 32 in a 256-token model (attn_factor 1.26):
        // the long factors at a context of 64, the short ones at 16.
        RopeCase{"phi3_longrope_long",
                 small("phi3.5-mini", {"--kv-heads", "4", "--ctx", "256", "--orig-ctx", "32"}), 64},
        RopeCase{"phi3_longrope_short",
                 small("phi3.5-mini", {"--kv-heads", "4", "--ctx", "256", "--orig-ctx", "32"}),
                 16}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
