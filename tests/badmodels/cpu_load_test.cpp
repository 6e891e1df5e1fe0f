// Loading on the CPU backend (issue 48): progress counts the bytes checked and repacked tensor by
// tensor up to 1, and a cancel mid-load returns "model.cancelled" with nothing of it kept.
#include <malloc.h>

#include <algorithm>
#include <atomic>

#include "bad_model_util.h"

namespace ember::test {
namespace {

LoadParams cpu_params() {
    LoadParams lp;
    lp.backend = BackendKind::Cpu;
    lp.n_ctx = 64;
    lp.n_threads = 2;
    return lp;
}

// Four layers of Q8_0 (repacked where the kernels have a packed path), ffn matrices of 8.5 MiB
// each so that their check runs in slices.
std::string cpu_model(const std::string& name) {
    TinyModel m = TinyModel::make(GgmlType::Q8_0, 1024, 4096);
    for (uint32_t l = 1; l < 4; l++) {  // distinct bytes per layer: each is read and repacked
        for (const std::string suffix : {"attn_norm.weight", "attn_q.weight", "attn_k.weight",
                                         "attn_v.weight", "attn_output.weight", "ffn_norm.weight",
                                         "ffn_gate.weight", "ffn_up.weight", "ffn_down.weight"}) {
            TensorSpec t = m.tensor("blk.0." + suffix);
            t.name = "blk." + std::to_string(l) + "." + suffix;
            if (t.type != GgmlType::F32)
                t.bytes = random_bytes(t.type, t.dims[0], t.dims[1], 0.1f, 100 * l + t.name.size());
            m.tensors.push_back(std::move(t));
        }
    }
    m.n_layer = 4;
    return m.write(name);
}

// Heap bytes in use (glibc; 0 where a sanitizer's allocator answers instead).
size_t heap_in_use() {
    const struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

TEST(CpuLoad, ProgressIsMonotonicAndReachesOne) {
    const std::string path = cpu_model("cpu-progress.gguf");
    std::vector<float> seen;
    LoadParams lp = cpu_params();
    lp.progress = [&](float p) {
        seen.push_back(p);
        return true;
    };
    auto model = Model::load(path, lp);
    ASSERT_TRUE(model.ok()) << model.error().message;
    ASSERT_EQ((*model)->backend().kind, BackendKind::Cpu);
    EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
    ASSERT_FALSE(seen.empty());
    EXPECT_GE(seen.front(), 0.0f);
    EXPECT_EQ(seen.back(), 1.0f);
    // One report per tensor at least (4 layers of 9, and 3 more), spread through the middle
    // rather than jumping from the file's 5 % to the end.
    EXPECT_GE(seen.size(), 39u);
    EXPECT_GT(std::count_if(seen.begin(), seen.end(), [](float p) { return p > 0.3f && p < 0.9f; }),
              10);
    // No step over a fifth of the load: each of the 16 big matrices is about 5 % of it.
    for (size_t i = 1; i < seen.size(); i++)
        EXPECT_LT(seen[i] - seen[i - 1], 0.2f) << "from " << seen[i - 1] << " to " << seen[i];
}

// The flag, or the progress callback saying no, stops the load part way with "model.cancelled";
// what the cancelled load allocated is freed, and the next load works.
TEST(CpuLoad, CancelMidLoadFreesEverything) {
    const std::string path = cpu_model("cpu-cancel.gguf");
    {  // once whole, so that what lives for the process (pools, tables) is allocated
        auto model = Model::load(path, cpu_params());
        ASSERT_TRUE(model.ok()) << model.error().message;
    }
    const size_t before = heap_in_use();
    expect_load_cancels_midway(path, cpu_params(), [&] {
        // The repacked copies of half the model (MiBs) would show; allow small caches.
        if (before) {
            EXPECT_LT(heap_in_use(), before + (256u << 10)) << "the cancelled load leaked";
        }
    });
    auto model = Model::load(path, cpu_params());
    ASSERT_TRUE(model.ok()) << model.error().message;
    auto s = Session::create(**model);
    ASSERT_TRUE(s.ok()) << s.error().message;
    auto logits = (*s)->eval(std::vector<int32_t>{1, 5, 9, 100});
    ASSERT_TRUE(logits.ok()) << logits.error().message;
    for (float v : *logits) ASSERT_TRUE(std::isfinite(v));
}

// A NaN in the last slice of a large matrix, found as the CPU load checks it, is reported with its
// tensor and block, and the load stops there.
TEST(CpuLoad, NonFiniteWeightStopsTheLoad) {
    TinyModel m = TinyModel::make(GgmlType::Q8_0, 1024, 4096);
    set_u16(m.tensor("blk.0.ffn_up.weight").bytes, 130000 * sizeof(BlockQ8_0), kF16NaN);
    const std::string path = m.write("cpu-nan.gguf");
    float last = 0;
    LoadParams lp = cpu_params();
    lp.progress = [&](float p) {
        last = p;
        return true;
    };
    auto model = Model::load(path, lp);
    ASSERT_FALSE(model.ok());
    EXPECT_EQ(model.error().code, "model.nonfinite_weights") << model.error().message;
    EXPECT_NE(model.error().message.find("'blk.0.ffn_up.weight'"), std::string::npos)
        << model.error().message;
    EXPECT_NE(model.error().message.find("block 130000"), std::string::npos)
        << model.error().message;
    EXPECT_LT(last, 1.0f);
}

}  // namespace
}  // namespace ember::test
