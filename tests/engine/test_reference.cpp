// The foundation's acceptance checks on the real stories260K model (CPU backend).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ember/ember.h"
#include "test_util.h"

namespace {

using ember::test::shared_path;

struct RefCase {
    std::string prompt;
    std::vector<int32_t> prompt_ids, greedy;
    std::vector<double> logits;
};

std::vector<RefCase> load_reference() {
    std::ifstream f(shared_path("models/stories260K.reference.json"));
    EXPECT_TRUE(f.good()) << "missing ../shared/models/stories260K.reference.json";
    nlohmann::json j = nlohmann::json::parse(f);
    std::vector<RefCase> cases;
    for (const auto& c : j["cases"]) {
        cases.push_back({c["prompt"], c["prompt_ids"].get<std::vector<int32_t>>(),
                         c["greedy_32"].get<std::vector<int32_t>>(),
                         c["logits_after_prompt"].get<std::vector<double>>()});
    }
    return cases;
}

std::unique_ptr<ember::Model> load_cpu_model() {
    ember::LoadParams p;
    p.backend = ember::BackendKind::Cpu;
    auto m = ember::Model::load(ember::test::stories_model(), p);
    EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().message);
    return m.ok() ? std::move(m).value() : nullptr;
}

TEST(Reference, TokenizesPrompts) {
    auto model = load_cpu_model();
    ASSERT_TRUE(model);
    for (const auto& c : load_reference())
        EXPECT_EQ(model->tokenize(c.prompt, true, false), c.prompt_ids) << c.prompt;
}

TEST(Reference, LogitsAfterPrompt) {
    auto model = load_cpu_model();
    ASSERT_TRUE(model);
    const auto cases = load_reference();
    ASSERT_EQ(cases.size(), 4u);
    for (const auto& c : cases) {
        auto session = ember::Session::create(*model);
        ASSERT_TRUE(session.ok());
        auto logits = (*session)->eval(c.prompt_ids);
        ASSERT_TRUE(logits.ok()) << logits.error().message;
        ASSERT_EQ(logits->size(), c.logits.size());
        double max_err = 0;
        for (size_t i = 0; i < c.logits.size(); i++)
            max_err = std::max(max_err, std::abs(double((*logits)[i]) - c.logits[i]));
        EXPECT_LT(max_err, 1e-3) << c.prompt;
    }
}

TEST(Reference, Greedy32) {
    auto model = load_cpu_model();
    ASSERT_TRUE(model);
    for (const auto& c : load_reference()) {
        auto session = ember::Session::create(*model);
        ASSERT_TRUE(session.ok());
        ember::GenerateParams gp;
        gp.max_tokens = 32;
        gp.sampling.temperature = 0;
        gp.sampling.repeat_penalty = 1.0f;
        gp.stop_at_eog = false;
        auto st = ember::generate(**session, c.prompt_ids, gp, nullptr);
        ASSERT_TRUE(st.ok()) << st.error().message;
        EXPECT_EQ(st->tokens, c.greedy) << c.prompt;
    }
}

// Prefill in one batch and token-by-token decode must agree.
TEST(Reference, BatchEqualsIncremental) {
    auto model = load_cpu_model();
    ASSERT_TRUE(model);
    const auto c = load_reference()[1];
    auto a = ember::Session::create(*model);
    auto b = ember::Session::create(*model);
    ASSERT_TRUE(a.ok() && b.ok());
    auto la = (*a)->eval(c.prompt_ids);
    ASSERT_TRUE(la.ok());
    std::vector<float> batch(la->begin(), la->end());
    std::span<const float> lb;
    for (int32_t t : c.prompt_ids) {
        auto r = (*b)->eval(std::span<const int32_t>(&t, 1));
        ASSERT_TRUE(r.ok());
        lb = *r;
    }
    for (size_t i = 0; i < batch.size(); i++) EXPECT_NEAR(batch[i], lb[i], 1e-4f);
}

TEST(Reference, ContextFullIsAnError) {
    ember::LoadParams p;
    p.backend = ember::BackendKind::Cpu;
    p.n_ctx = 8;
    auto m = ember::Model::load(ember::test::stories_model(), p);
    ASSERT_TRUE(m.ok());
    auto s = ember::Session::create(**m);
    ASSERT_TRUE(s.ok());
    std::vector<int32_t> ids(9, 1);
    auto r = (*s)->eval(ids);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, "session.context_full");
    std::vector<int32_t> bad = {1, 100000};
    auto r2 = (*s)->eval(bad);
    ASSERT_FALSE(r2.ok());
    EXPECT_EQ(r2.error().code, "session.bad_token");
}

}  // namespace
