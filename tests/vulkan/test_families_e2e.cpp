// Every model of ${EMBER_SHARED_DIR}/models/arch (tiny random-weight files of
// each family) loaded with the Vulkan backend on lavapipe through the public
// API, against its Hugging Face reference as tests/families checks the CPU:
// logits within 2e-3 relative L2 at every reference position (prompts as one
// batch, one sequence token by token) and the greedy continuation identical.
// The folder is listed, so other files of these families are checked the same
// way.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <span>

#include "arch_models.h"
#include "ember/ember.h"
#include "small_models.h"
#include "test_util.h"
#include "vk_test_util.h"

namespace ember::vulkan::test {
namespace {

class FamiliesOnVulkan : public VulkanTest, public ::testing::WithParamInterface<std::string> {
protected:
    void SetUp() override {
        VulkanTest::SetUp();
        path = GetParam();
        if (path.empty()) GTEST_SKIP() << "no models in models/arch";
        if (!no_device_reason().empty()) GTEST_SKIP() << "no Vulkan device: " << no_device_reason();
        ASSERT_NO_FATAL_FAILURE(ember::test::read_arch_reference(path, ref));
        model = load_on(path, BackendKind::Vulkan, ember::test::arch_ctx(path));
        ASSERT_TRUE(model);
        ASSERT_EQ(model->backend().kind, BackendKind::Vulkan);
    }
    std::string path;
    nlohmann::json ref;
    std::unique_ptr<Model> model;
};

TEST_P(FamiliesOnVulkan, LogitsMatchReference) {
    for (const auto& seq : ref["sequences"]) {
        const auto ids = seq["ids"].get<std::vector<int32_t>>();
        const auto positions = seq["logits_positions"].get<std::vector<int>>();
        auto session = Session::create(*model);
        ASSERT_TRUE(session.ok()) << session.error().message;
        int done = 0;
        for (size_t i = 0; i < positions.size(); ++i) {
            const int p = positions[i];
            ASSERT_LT(p, int(ids.size()));
            auto logits = (*session)->eval(std::span(ids).subspan(done, p + 1 - done));
            ASSERT_TRUE(logits.ok()) << logits.error().message;
            const nlohmann::json& want = seq["logits"][i];
            ASSERT_EQ(logits->size(), want.size());
            EXPECT_LE(ember::test::rel_l2_to(*logits, want), 2e-3)
                << seq["name"].get<std::string>() << " position " << p;
            done = p + 1;
        }
    }
}

TEST_P(FamiliesOnVulkan, GreedyContinuationMatches) {
    const auto prompt = ref["greedy"]["prompt_ids"].get<std::vector<int32_t>>();
    const auto want = ref["greedy"]["new_tokens"].get<std::vector<int32_t>>();
    auto session = Session::create(*model);
    ASSERT_TRUE(session.ok()) << session.error().message;
    auto logits = (*session)->eval(prompt);
    ASSERT_TRUE(logits.ok()) << logits.error().message;
    std::vector<int32_t> got;
    for (size_t i = 0; i < want.size(); ++i) {
        got.push_back(int32_t(std::max_element(logits->begin(), logits->end()) - logits->begin()));
        if (i + 1 == want.size()) break;
        logits = (*session)->eval(std::span(&got.back(), 1));
        ASSERT_TRUE(logits.ok()) << logits.error().message;
    }
    EXPECT_EQ(got, want);
}

INSTANTIATE_TEST_SUITE_P(Arch, FamiliesOnVulkan, ::testing::ValuesIn(ember::test::arch_models()),
                         ember::test::arch_test_name);

}  // namespace
}  // namespace ember::vulkan::test
