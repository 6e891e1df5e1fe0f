// Every model of ${EMBER_SHARED_DIR}/models/arch (tiny random-weight files of
// each family) loaded with the Vulkan backend on lavapipe through the public
// API, against its Hugging Face reference as tests/families checks the CPU:
// logits within 2e-3 relative L2 at every reference position (prompts as one
// batch, one sequence token by token) and the greedy continuation identical.
// The folder is listed, so other files of these families are checked the same
// way.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <span>

#include "ember/ember.h"
#include "test_util.h"
#include "vk_test_util.h"

namespace fs = std::filesystem;

namespace ember::vulkan::test {
namespace {

std::vector<std::string> arch_models() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto &e :
       fs::directory_iterator(ember::test::shared_path("models/arch"), ec))
    if (e.path().extension() == ".gguf")
      out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  if (out.empty())
    out.push_back(""); // one skipped test says the folder is missing
  return out;
}

double rel_l2(std::span<const float> got, std::span<const double> want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (!std::isfinite(got[i]))
      return INFINITY;
    num += (got[i] - want[i]) * (got[i] - want[i]);
    den += want[i] * want[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

std::unique_ptr<Model> load(const std::string &path, BackendKind kind,
                            int n_ctx) {
  LoadParams p;
  p.backend = kind;
  p.device = test_device();
  p.n_threads = 2;
  p.n_ctx = n_ctx;
  auto m = Model::load(path, p);
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().message);
  if (!m.ok())
    return nullptr;
  EXPECT_EQ((*m)->backend().kind, kind) << (*m)->backend().fallback_reason;
  return std::move(m).value();
}

class FamiliesOnVulkan : public VulkanTest,
                         public ::testing::WithParamInterface<std::string> {
protected:
  void SetUp() override {
    VulkanTest::SetUp();
    path = GetParam();
    if (path.empty())
      GTEST_SKIP() << "no models in models/arch";
    if (!no_device_reason().empty())
      GTEST_SKIP() << "no Vulkan device: " << no_device_reason();
    std::ifstream f(path.substr(0, path.size() - 5) + ".reference.json");
    ASSERT_TRUE(f) << "no reference for " << path;
    ref = nlohmann::json::parse(f);
    model = load(path, BackendKind::Vulkan, 128);
    ASSERT_TRUE(model);
    ASSERT_EQ(model->backend().kind, BackendKind::Vulkan);
  }
  std::string path;
  nlohmann::json ref;
  std::unique_ptr<Model> model;
};

TEST_P(FamiliesOnVulkan, LogitsMatchReference) {
  for (const auto &seq : ref["sequences"]) {
    const auto ids = seq["ids"].get<std::vector<int32_t>>();
    const auto positions = seq["logits_positions"].get<std::vector<int>>();
    auto session = Session::create(*model);
    ASSERT_TRUE(session.ok()) << session.error().message;
    int done = 0;
    for (size_t i = 0; i < positions.size(); ++i) {
      const int p = positions[i];
      ASSERT_LT(p, int(ids.size()));
      auto logits =
          (*session)->eval(std::span(ids).subspan(done, p + 1 - done));
      ASSERT_TRUE(logits.ok()) << logits.error().message;
      const auto want = seq["logits"][i].get<std::vector<double>>();
      ASSERT_EQ(logits->size(), want.size());
      EXPECT_LE(rel_l2(*logits, want), 2e-3)
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
    got.push_back(int32_t(std::max_element(logits->begin(), logits->end()) -
                          logits->begin()));
    if (i + 1 == want.size())
      break;
    logits = (*session)->eval(std::span(&got.back(), 1));
    ASSERT_TRUE(logits.ok()) << logits.error().message;
  }
  EXPECT_EQ(got, want);
}

std::string test_name(const ::testing::TestParamInfo<std::string> &info) {
  if (info.param.empty())
    return "none";
  std::string s = fs::path(info.param).stem().string();
  for (char &c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)))
      c = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Arch, FamiliesOnVulkan,
                         ::testing::ValuesIn(arch_models()), test_name);

} // namespace
} // namespace ember::vulkan::test
