// Every model of ${EMBER_SHARED_DIR}/models/arch (tiny random-weight files of each family,
// converted as llama.cpp converts real checkpoints) against its Hugging Face reference on the
// CPU: logits and the greedy continuation. The folder is listed, not named file by file, so
// files of other shapes and seeds are checked the same way.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "arch_models.h"
#include "ember/ember.h"
#include "gguf/gguf.h"
#include "model/llama.h"
#include "test_util.h"
#ifdef EMBER_HAVE_VULKAN
#include "vulkan/vulkan_backend.h"
#endif

using ember::test::shared_path;

namespace {

struct Diff {
    double max_abs = 0.0, rel_l2 = 0.0;
};
Diff compare(std::span<const float> got, const nlohmann::json& want) {
    Diff d;
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < want.size(); i++) {
        const double w = want[i].get<double>(), g = got[i];
        d.max_abs = std::max(d.max_abs, std::abs(g - w));
        num += (g - w) * (g - w);
        den += w * w;
    }
    d.rel_l2 = std::sqrt(num / std::max(den, 1e-30));
    if (!std::isfinite(d.max_abs) ||
        std::any_of(got.begin(), got.end(), [](float v) { return !std::isfinite(v); }))
        d.max_abs = d.rel_l2 = INFINITY;
    return d;
}

int32_t argmax(std::span<const float> v) {
    return int32_t(std::max_element(v.begin(), v.end()) - v.begin());
}

class ArchReference : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        path = GetParam();
        if (path.empty()) GTEST_SKIP() << "no models in " << shared_path("models/arch");
        ASSERT_NO_FATAL_FAILURE(ember::test::read_arch_reference(path, ref));
        ember::LoadParams p;
        p.backend = ember::BackendKind::Cpu;
        p.n_threads = 2;
        p.n_ctx = ember::test::arch_ctx(path);
        auto m = ember::Model::load(path, p);
        ASSERT_TRUE(m.ok()) << m.error().code << ": " << m.error().message;
        model = std::move(m).value();
    }
    // F32 files match within 1e-4 absolute; others (F16) within 2e-3 relative L2 of their
    // own reference.
    void expect_close(std::span<const float> got, const nlohmann::json& want,
                      const std::string& what) {
        ASSERT_EQ(got.size(), want.size()) << what;
        const Diff d = compare(got, want);
        if (model->info().quantization == "F32")
            EXPECT_LE(d.max_abs, 1e-4) << what << " (relative L2 " << d.rel_l2 << ")";
        else
            EXPECT_LE(d.rel_l2, 2e-3) << what << " (max abs " << d.max_abs << ")";
    }

    std::string path;
    nlohmann::json ref;
    std::unique_ptr<ember::Model> model;
};

TEST_P(ArchReference, InfoMatchesTheSpec) {
    const ember::ModelInfo& info = model->info();
    EXPECT_EQ(info.architecture, ref.value("gguf_architecture", info.architecture));
    const nlohmann::json& spec = ref["spec"];
    auto check = [&](const char* key, uint32_t got) {
        if (spec.contains(key)) EXPECT_EQ(got, spec[key].get<uint32_t>()) << key;
    };
    check("hidden", info.n_embd);
    check("layers", info.n_layer);
    check("heads", info.n_head);
    check("kv_heads", info.n_head_kv);
    check("ffn", info.n_ff);
    check("head_dim", info.head_dim);
    if (spec.contains("sliding_window") && ref.contains("swa_layers")) {
        uint32_t n_swa = 0;
        for (const auto& b : ref["swa_layers"]) n_swa += b.get<bool>() ? 1 : 0;
        EXPECT_EQ(info.n_swa_layers, n_swa);
        if (n_swa > 0) check("sliding_window", info.sliding_window);
    }
    const auto archs = ember::supported_architectures();
    EXPECT_NE(std::find(archs.begin(), archs.end(), info.architecture), archs.end());
}

// Each sequence is evaluated in batches that end at the positions with reference logits:
// one prompt batch for the last-position sequences, token by token for the one with every
// position, so both the prefill and the decode paths are compared.
TEST_P(ArchReference, LogitsMatchReference) {
    for (const auto& seq : ref["sequences"]) {
        const auto ids = seq["ids"].get<std::vector<int32_t>>();
        const auto positions = seq["logits_positions"].get<std::vector<int>>();
        ASSERT_EQ(positions.size(), seq["logits"].size());
        auto session = ember::Session::create(*model);
        ASSERT_TRUE(session.ok()) << session.error().message;
        int done = 0;
        for (size_t i = 0; i < positions.size(); i++) {
            const int p = positions[i];
            ASSERT_GE(p, done);
            ASSERT_LT(p, int(ids.size()));
            auto logits = (*session)->eval(std::span(ids).subspan(done, p + 1 - done));
            ASSERT_TRUE(logits.ok()) << logits.error().message;
            expect_close(*logits, seq["logits"][i],
                         seq["name"].get<std::string>() + " position " + std::to_string(p));
            done = p + 1;
        }
    }
}

TEST_P(ArchReference, GreedyContinuationMatches) {
    const auto prompt = ref["greedy"]["prompt_ids"].get<std::vector<int32_t>>();
    const auto want = ref["greedy"]["new_tokens"].get<std::vector<int32_t>>();
    auto session = ember::Session::create(*model);
    ASSERT_TRUE(session.ok()) << session.error().message;
    auto logits = (*session)->eval(prompt);
    ASSERT_TRUE(logits.ok()) << logits.error().message;
    std::vector<int32_t> got;
    for (size_t i = 0; i < want.size(); i++) {
        got.push_back(argmax(*logits));
        if (i + 1 == want.size()) break;
        logits = (*session)->eval(std::span(&got.back(), 1));
        ASSERT_TRUE(logits.ok()) << logits.error().message;
    }
    EXPECT_EQ(got, want);
}

// The Vulkan backend runs every family here (tests/vulkan/test_families_e2e.cpp compares them
// with the references on lavapipe); what it cannot read is still refused before anything is
// uploaded, with a reason: here a norm that is not F32.
TEST_P(ArchReference, VulkanAcceptsEveryFamily) {
    auto file = ember::gguf::File::open(path);
    ASSERT_TRUE(file.ok()) << file.error().message;
    auto m = ember::load_model(**file);
    ASSERT_TRUE(m.ok()) << m.error().message;
#ifdef EMBER_HAVE_VULKAN
    ember::Status st = ember::vulkan::check_model_supported(*m);
    EXPECT_TRUE(st.ok()) << st.error().message;
    m->layers[0].attn_norm.type = ember::GgmlType::F16;
    st = ember::vulkan::check_model_supported(*m);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().code, "vulkan.unsupported_model");
    EXPECT_NE(st.error().message.find("attn_norm"), std::string::npos) << st.error().message;
#endif
}

INSTANTIATE_TEST_SUITE_P(Models, ArchReference, ::testing::ValuesIn(ember::test::arch_models()),
                         ember::test::arch_test_name);

}  // namespace
