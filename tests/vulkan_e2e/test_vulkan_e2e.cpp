// Vulkan against the CPU and the reference, through Model/Session and ember-cli, on lavapipe.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ember/ember.h"
#include "run_cli.h"
#include "test_util.h"

namespace {

using nlohmann::json;
const char* kDevice = "llvmpipe";  // tests choose the CPU-type adapter explicitly

bool have_lavapipe() {
    auto devs = ember::list_devices();
    if (!devs) return false;
    for (const auto& d : *devs)
        if (d.name.find(kDevice) != std::string::npos) return true;
    return false;
}

std::unique_ptr<ember::Model> load(const std::string& path, ember::BackendKind kind) {
    ember::LoadParams p;
    p.backend = kind;
    p.device = kind == ember::BackendKind::Vulkan ? kDevice : "";
    p.n_ctx = 64;
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

json read_json(const std::string& path) {
    std::ifstream f(path);
    return json::parse(f);
}

TEST(VulkanE2E, Stories260KMatchesReference) {
    if (!have_lavapipe()) GTEST_SKIP() << "no lavapipe device";
    auto ref = read_json(ember::test::shared_path("models/stories260K.reference.json"));
    for (const auto& c : ref["cases"]) {
        std::string ids;
        for (int id : c["prompt_ids"]) ids += (ids.empty() ? "" : ",") + std::to_string(id);
        auto r = ember::test::run_cli(ember::test::cli_path(),
                                      {"logits", "-m", ember::test::stories_model(), "--ids", ids,
                                       "--backend", "vulkan", "--device", kDevice, "--json"});
        ASSERT_EQ(r.exit_code, 0) << r.err;
        json j = json::parse(r.out);
        EXPECT_EQ(j["backend"], "vulkan");
        double max_err = 0;
        for (size_t i = 0; i < j["logits"].size(); i++)
            max_err = std::max(max_err, std::abs(j["logits"][i].get<double>() -
                                                 c["logits_after_prompt"][i].get<double>()));
        EXPECT_LT(max_err, 1e-2) << c["prompt"];

        auto g = ember::test::run_cli(
            ember::test::cli_path(),
            {"generate", "-m", ember::test::stories_model(), "-p", c["prompt"], "-n", "32",
             "--temp", "0", "--backend", "vulkan", "--device", kDevice, "--json"});
        ASSERT_EQ(g.exit_code, 0) << g.err;
        json gj = json::parse(g.out);
        EXPECT_EQ(gj["backend"], "vulkan");
        EXPECT_EQ(gj["tokens"], c["greedy_32"]) << c["prompt"];
        EXPECT_GT(gj["gpu_mem_used"].get<uint64_t>(), 0u);
        EXPECT_GT(gj["gpu_mem_budget"].get<uint64_t>(), 0u);
    }
}

struct ShapeCase {
    const char* name;
    int heads, kv_heads;
};

// Synthetic models written by ember-cli mkmodel in every weight type (--pure: the output layer
// too), one GQA and one MHA shape:
// Vulkan logits against CPU logits after a prompt and after each of a few decode steps.
class SyntheticModels : public ::testing::TestWithParam<std::tuple<std::string, ShapeCase>> {};

TEST_P(SyntheticModels, VulkanMatchesCpu) {
    if (!have_lavapipe()) GTEST_SKIP() << "no lavapipe device";
    const auto& [type, shape] = GetParam();
    const auto dir = ember::test::temp_dir();
    const std::string path = (dir / (type + "-" + shape.name + ".gguf")).string();
    auto r = ember::test::run_cli(ember::test::cli_path(), {"mkmodel",
                                                            "-o",
                                                            path,
                                                            "--embd",
                                                            "256",
                                                            "--layers",
                                                            "2",
                                                            "--heads",
                                                            std::to_string(shape.heads),
                                                            "--kv-heads",
                                                            std::to_string(shape.kv_heads),
                                                            "--ffn",
                                                            "768",
                                                            "--vocab",
                                                            "320",
                                                            "--type",
                                                            type,
                                                            "--pure",
                                                            "--seed",
                                                            "11"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto cpu = load(path, ember::BackendKind::Cpu);
    auto vk = load(path, ember::BackendKind::Vulkan);
    ASSERT_TRUE(cpu && vk);
    ASSERT_EQ(vk->backend().kind, ember::BackendKind::Vulkan) << vk->backend().fallback_reason;
    // 4- and 5-bit types get 1e-3; the rest 1e-4 (the bounds).
    const bool low_bit = type.rfind("q4", 0) == 0 || type.rfind("q5", 0) == 0;
    const double tol = low_bit ? 1e-3 : 1e-4;
    auto sc = ember::Session::create(*cpu);
    auto sv = ember::Session::create(*vk);
    ASSERT_TRUE(sc.ok() && sv.ok());
    std::vector<int32_t> prompt = {1, 17, 250, 3, 99, 300, 42, 7};
    auto lc = (*sc)->eval(prompt);
    std::vector<float> c(lc->begin(), lc->end());
    auto lv = (*sv)->eval(prompt);
    ASSERT_TRUE(lc.ok() && lv.ok());
    EXPECT_LT(nmse(*lv, c), tol) << type << " " << shape.name << " after the prompt";
    for (int32_t t : {5, 77, 310}) {
        auto a = (*sc)->eval(std::span<const int32_t>(&t, 1));
        std::vector<float> ca(a->begin(), a->end());
        auto b = (*sv)->eval(std::span<const int32_t>(&t, 1));
        ASSERT_TRUE(a.ok() && b.ok());
        EXPECT_LT(nmse(*b, ca), tol) << type << " " << shape.name << " decode";
    }
    std::filesystem::remove(path);
}

INSTANTIATE_TEST_SUITE_P(
    AllTypes, SyntheticModels,
    ::testing::Combine(::testing::Values("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0",
                                         "q5_1", "q4_k", "q5_k", "q6_k"),
                       ::testing::Values(ShapeCase{"gqa", 8, 2}, ShapeCase{"mha", 4, 4})),
    [](const auto& info) { return std::get<0>(info.param) + "_" + std::get<1>(info.param).name; });

}  // namespace
