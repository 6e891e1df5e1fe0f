// The family stages (vulkan/stages_family.h) with batches smaller than a
// runner's: the models of ${EMBER_SHARED_DIR}/models/arch that have
// sliding-window layers, whose K/V caches are then rings of window + batch - 1
// rows that wrap many times over the reference's longest sequence, whose last
// logits must still be within 2e-3 of the reference. (test_families_e2e.cpp
// checks every model through the public API, where batches are too large for
// the rings to wrap.)
#include <algorithm>
#include <nlohmann/json.hpp>
#include <span>

#include "arch_models.h"
#include "gguf/gguf.h"
#include "test_util.h"
#include "vk_test_util.h"
#include "vulkan/forward.h"
#include "vulkan/stages_family.h"

namespace ember::vulkan::test {
namespace {

class FamilyStages : public VulkanTest, public ::testing::WithParamInterface<std::string> {
protected:
    void SetUp() override {
        VulkanTest::SetUp();
        const std::string path = GetParam();
        if (path.empty()) GTEST_SKIP() << "no models in models/arch";
        if (!no_device_reason().empty()) GTEST_SKIP() << "no Vulkan device: " << no_device_reason();
        ASSERT_NO_FATAL_FAILURE(ember::test::read_arch_reference(path, ref));
        auto file = gguf::File::open(path);
        ASSERT_TRUE(file.ok()) << file.error().message;
        gguf = std::move(file).value();
        auto m = load_model(*gguf);
        ASSERT_TRUE(m.ok()) << m.error().message;
        model = std::move(m).value();
        ASSERT_TRUE(uses_family_stages(model.hp) || !ref["spec"].contains("sliding_window"));
        Context& ctx = shared_context();
        auto store = WeightStore::upload(ctx, model_tensors(model), nullptr, nullptr);
        ASSERT_TRUE(store.ok()) << store.error().message;
        weights = std::move(store).value();
        plan = make_plan(ctx.adapter());
        auto dm = bind_device_model(
            model, [&](const Tensor& t) { return weights->find(t); }, ctx.adapter(), plan);
        ASSERT_TRUE(dm.ok()) << dm.error().message;
        dev = std::move(dm).value();
    }

    // Buffers for batches of up to `batch` tokens and a context of kCtx.
    void allocate(int batch) {
        const Dims d = dims_of(model.hp);
        auto buf = [&](uint64_t words) {
            bufs.push_back(std::make_unique<HostBuffer>(shared_context(), size_t(words)));
            return bufs.back()->range();
        };
        const uint64_t B = uint64_t(batch);
        b.x = buf(B * d.E), b.xb = buf(B * d.E), b.tmp = buf(B * d.E);
        b.q = buf(B * d.Dq), b.k = buf(B * d.Dkv), b.v = buf(B * d.Dkv), b.att = buf(B * d.Dq);
        b.g = buf(B * d.F), b.u = buf(B * d.F);
        const uint64_t wide = family_wide_floats(model.hp);
        if (wide) b.wide = buf(B * wide);
        b.logits = buf(d.V), b.result = buf(1);
        b.step = buf(2 + B);
        step = bufs.back().get();
        b.readback = buf(d.V);
        readback = bufs.back().get();
        for (uint32_t l = 0; l < model.hp.n_layer; ++l) {
            const uint32_t ring = family_kv_ring(model.hp, l, kCtx, batch);
            b.kv_ring.push_back(ring);
            b.k_cache.push_back(buf(uint64_t(ring ? ring : kCtx) * d.Dkv / 2 + 1));
            b.v_cache.push_back(buf(uint64_t(ring ? ring : kCtx) * d.Dkv / 2 + 1));
        }
    }

    // The logits after tokens at positions [pos, pos + size).
    const float* eval(std::span<const int32_t> tokens, int pos) {
        step->words()[0] = uint32_t(pos);
        step->words()[1] = uint32_t(tokens.size());
        std::copy(tokens.begin(), tokens.end(), step->words() + 2);
        const Step s{int(tokens.size()), Output::Logits, false};
        Status st = run_ops(shared_context(), plan, [&](Recorder& r) {
            return record_stages(r, dev, b, s, forward_stages(r, dev, s));
        });
        EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message);
        for (auto& hb : bufs) EXPECT_TRUE(hb->guard_intact());
        return readback->f32();
    }

    // Runs each reference sequence of at least `min_tokens` tokens up to its last
    // logits position in batches of `batch` tokens, the last one partial, or with
    // `first_partial` the first one (the rest then whole), and checks the last
    // logits. Skips a model without sliding-window layers.
    void check_in_batches(int batch, int min_tokens, bool first_partial) {
        allocate(batch);
        if (std::none_of(b.kv_ring.begin(), b.kv_ring.end(), [](uint32_t r) { return r > 0; }))
            GTEST_SKIP() << "no sliding-window layer";
        for (const auto& seq : ref["sequences"]) {
            const auto ids = seq["ids"].get<std::vector<int32_t>>();
            const int last = seq["logits_positions"].back().get<int>(), n = last + 1;
            if (n < min_tokens) continue;
            const float* got = nullptr;
            int done = 0;
            if (first_partial && n % batch > 0) {
                done = n % batch;
                got = eval(std::span(ids).subspan(0, done), 0);
            }
            for (; done < n; done += batch)
                got = eval(std::span(ids).subspan(done, std::min(batch, n - done)), done);
            const nlohmann::json& want = seq["logits"].back();
            EXPECT_LE(ember::test::rel_l2_to(std::span(got, want.size()), want), 2e-3)
                << seq["name"].get<std::string>() << " position " << last;
        }
    }

    static constexpr int kCtx = 128;
    nlohmann::json ref;
    std::unique_ptr<gguf::File> gguf;
    LlamaModel model;
    std::unique_ptr<WeightStore> weights;
    Plan plan;
    DeviceModel dev;
    Buffers b;
    std::vector<std::unique_ptr<HostBuffer>> bufs;
    HostBuffer *step = nullptr, *readback = nullptr;
};

TEST_P(FamilyStages, SlidingLayersKeepOnlyTheirWindow) {
    check_in_batches(4, 0, false);
}

// Batches of 16 (which take the tensor-core attention where the device has it,
// except in layers of F32 weights such as these models'): the sliding-window
// layers' rings (window + 15 rows) wrap between batches (sequences of one batch
// are left out), and the first batch's window is shorter than the batch.
TEST_P(FamilyStages, PromptBatchesOf16OverRings) {
    check_in_batches(16, 2 * 16, true);
}

INSTANTIATE_TEST_SUITE_P(Arch, FamilyStages, ::testing::ValuesIn(ember::test::arch_models()),
                         ember::test::arch_test_name);

}  // namespace
}  // namespace ember::vulkan::test
