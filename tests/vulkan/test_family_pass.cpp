// Every model of ${EMBER_SHARED_DIR}/models/arch (tiny random-weight files of each family) run
// through the Vulkan family pass (vulkan/family_pass.h) on the test device, against its Hugging
// Face reference: logits within 2e-3 relative L2 and the greedy continuation identical, with
// prompts as one batch and every position of one sequence decoded token by token, as
// tests/families does on the CPU. The folder is listed, so other files are checked the same way.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <span>

#include "gguf/gguf.h"
#include "test_util.h"
#include "vk_test_util.h"
#include "vulkan/family_pass.h"

namespace fs = std::filesystem;

namespace ember::vulkan::test {
namespace {

std::vector<std::string> arch_models() {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(ember::test::shared_path("models/arch"), ec))
        if (e.path().extension() == ".gguf") out.push_back(e.path().string());
    std::sort(out.begin(), out.end());
    if (out.empty()) out.push_back("");  // one skipped test says the folder is missing
    return out;
}

double rel_l2(std::span<const float> got, const nlohmann::json& want) {
    double num = 0, den = 0;
    for (size_t i = 0; i < want.size(); ++i) {
        const double w = want[i].get<double>(), g = got[i];
        if (!std::isfinite(g)) return INFINITY;
        num += (g - w) * (g - w);
        den += w * w;
    }
    return std::sqrt(num / std::max(den, 1e-30));
}

constexpr int kCtx = 128, kBatch = 64;

// A model on the device with the buffers of one session.
class FamilyPass : public VulkanTest, public ::testing::WithParamInterface<std::string> {
protected:
    void SetUp() override {
        VulkanTest::SetUp();
        const std::string path = GetParam();
        if (path.empty()) GTEST_SKIP() << "no models in models/arch";
        if (!no_device_reason().empty()) GTEST_SKIP() << "no Vulkan device: " << no_device_reason();
        std::ifstream f(path.substr(0, path.size() - 5) + ".reference.json");
        ASSERT_TRUE(f) << "no reference for " << path;
        ref = nlohmann::json::parse(f);
        auto file = gguf::File::open(path);
        ASSERT_TRUE(file.ok()) << file.error().message;
        gguf = std::move(file).value();
        auto m = load_model(*gguf);
        ASSERT_TRUE(m.ok()) << m.error().message;
        model = std::move(m).value();
        ASSERT_TRUE(family_pass_supports(model).ok());
        Context& ctx = shared_context();
        auto store = WeightStore::upload(ctx, family_tensors(model), nullptr, nullptr);
        ASSERT_TRUE(store.ok()) << store.error().message;
        weights = std::move(store).value();
        auto fm = bind_family_model(model, *weights);
        ASSERT_TRUE(fm.ok()) << fm.error().message;
        dev = std::move(fm).value();

        const FamilySizes s = family_sizes(model.hp);
        auto buf = [&](uint64_t floats) {
            bufs.push_back(std::make_unique<HostBuffer>(ctx, size_t(floats)));
            return bufs.back()->range();
        };
        b.x = buf(kBatch * s.embd), b.xb = buf(kBatch * s.embd), b.tmp = buf(kBatch * s.embd);
        b.qkv = buf(kBatch * s.qkv), b.att = buf(kBatch * s.att), b.gu = buf(kBatch * s.gu);
        b.h = buf(kBatch * s.h), b.logits = buf(s.logits);
        logits = bufs.back().get();
        b.step = buf(2 + kBatch);
        step = bufs.back().get();
        alloc_caches(kBatch);
    }

    // K and V caches for batches of up to `batch` tokens: sliding-window layers get rings.
    void alloc_caches(int batch) {
        b.k_cache.clear(), b.v_cache.clear(), b.kv_ring.clear();
        for (uint32_t l = 0; l < model.hp.n_layer; ++l) {
            const uint32_t rows = family_cache_rows(model.hp, l, kCtx, batch);
            b.kv_ring.push_back(rows < uint32_t(kCtx) ? rows : 0);
            for (auto* c : {&b.k_cache, &b.v_cache}) {
                bufs.push_back(std::make_unique<HostBuffer>(
                    shared_context(), size_t(rows) * model.hp.n_kv_dim() / 2 + 1));
                c->push_back(bufs.back()->range());
            }
        }
    }

    // The logits after tokens at positions [pos, pos + size).
    std::vector<float> eval(std::span<const int32_t> tokens, int pos) {
        EXPECT_LE(tokens.size(), size_t(kBatch));
        step->words()[0] = uint32_t(pos);
        step->words()[1] = uint32_t(tokens.size());
        std::copy(tokens.begin(), tokens.end(), step->words() + 2);
        Status st = run_ops(shared_context(), [&](Recorder& r) {
            return record_family_forward(r, dev, b, int(tokens.size()));
        });
        EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message);
        for (auto& hb : bufs) EXPECT_TRUE(hb->guard_intact());
        return std::vector<float>(logits->f32(), logits->f32() + model.hp.n_vocab);
    }

    nlohmann::json ref;
    std::unique_ptr<gguf::File> gguf;
    LlamaModel model;
    std::unique_ptr<WeightStore> weights;
    FamilyModel dev;
    FamilyBuffers b;
    std::vector<std::unique_ptr<HostBuffer>> bufs;
    HostBuffer *logits = nullptr, *step = nullptr;
};

TEST_P(FamilyPass, LogitsMatchReference) {
    for (const auto& seq : ref["sequences"]) {
        const auto ids = seq["ids"].get<std::vector<int32_t>>();
        const auto positions = seq["logits_positions"].get<std::vector<int>>();
        int done = 0;
        for (size_t i = 0; i < positions.size(); ++i) {
            const int p = positions[i];
            ASSERT_LT(p, int(ids.size()));
            auto got = eval(std::span(ids).subspan(done, p + 1 - done), done);
            const double d = rel_l2(got, seq["logits"][i]);
            EXPECT_LE(d, 2e-3) << seq["name"].get<std::string>() << " position " << p;
            done = p + 1;
        }
    }
}

// Sliding-window layers keep only window + batch - 1 positions: with batches of 4 tokens the
// rings wrap many times over the longest sequence, whose last logits still match.
TEST_P(FamilyPass, SlidingLayersKeepOnlyTheirWindow) {
    const int batch = 4;
    alloc_caches(batch);
    if (std::none_of(b.kv_ring.begin(), b.kv_ring.end(), [](uint32_t r) { return r > 0; }))
        GTEST_SKIP() << "no sliding-window layer";
    for (const auto& seq : ref["sequences"]) {
        const auto ids = seq["ids"].get<std::vector<int32_t>>();
        const auto positions = seq["logits_positions"].get<std::vector<int>>();
        const int last = positions.back();
        std::vector<float> got;
        for (int done = 0; done <= last; done += batch)
            got = eval(std::span(ids).subspan(done, std::min(batch, last + 1 - done)), done);
        EXPECT_LE(rel_l2(got, seq["logits"].back()), 2e-3)
            << seq["name"].get<std::string>() << " position " << last;
    }
}

TEST_P(FamilyPass, GreedyContinuationMatches) {
    const auto prompt = ref["greedy"]["prompt_ids"].get<std::vector<int32_t>>();
    const auto want = ref["greedy"]["new_tokens"].get<std::vector<int32_t>>();
    auto logits_now = eval(prompt, 0);
    std::vector<int32_t> got;
    for (size_t i = 0; i < want.size(); ++i) {
        got.push_back(
            int32_t(std::max_element(logits_now.begin(), logits_now.end()) - logits_now.begin()));
        if (i + 1 == want.size()) break;
        logits_now = eval(std::span(&got.back(), 1), int(prompt.size() + i));
    }
    EXPECT_EQ(got, want);
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
    if (info.param.empty()) return "none";
    std::string s = fs::path(info.param).stem().string();
    for (char& c : s)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    return s;
}

INSTANTIATE_TEST_SUITE_P(Arch, FamilyPass, ::testing::ValuesIn(arch_models()), test_name);

}  // namespace
}  // namespace ember::vulkan::test
