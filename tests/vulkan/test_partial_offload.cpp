// Partial offload (issue 48): a model split at every layer boundary, its first layers on the CPU
// and the rest with the output on the device, gives the logits of the all-device and the all-CPU
// runs within the backend-consistency tolerance and the same greedy continuation; the split the
// GPU memory limit leads to is the one the fit estimate announces.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "run_cli.h"
#include "session/offload.h"
#include "test_util.h"
#include "vk_test_util.h"

namespace ember::vulkan::test {
namespace {

// Between Vulkan and the CPU on the same weights: their sums run in another order, and the
// device keeps the KV cache in F16 (test_forward's tolerances for F32 weights are 1e-5).
constexpr double kTol = 1e-4;
constexpr int kSteps = 12;

struct Run {
    std::vector<float> logits;    // after the prompt
    std::vector<int32_t> greedy;  // kSteps tokens, each through eval_argmax
    std::vector<float> last;      // logits after the greedy tokens (decode path)
    // Long prompts (session/offload.cpp's kWholePromptTokens and more: a split runs every layer
    // on the device): after the first, after decode steps and a second one (which attends to
    // the CPU's decode rows), and after decode steps again (which attend to the prompts' rows).
    std::vector<float> long1, long2, long_last;
    std::vector<int32_t> long_greedy;
    BackendInfo backend;
};

LoadParams params(BackendKind kind, int n_gpu_layers) {
    LoadParams p;
    p.backend = kind;
    p.device = test_device();
    p.n_threads = 2;
    p.n_ctx = 192;
    p.n_gpu_layers = n_gpu_layers;
    return p;
}

// The greedy token of a step's logits.
int32_t greedy(std::span<const float> logits) {
    return int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

// n greedy steps through eval_argmax from token `next`, each appended to `out`; the token after.
int32_t decode_greedy(Session& session, int32_t next, int n, std::vector<int32_t>& out) {
    for (int i = 0; i < n; ++i) {
        out.push_back(next);
        std::vector<int32_t> one = {next};
        auto am = session.eval_argmax(one);
        EXPECT_TRUE(am.ok()) << am.error().message;
        if (!am.ok()) return -1;
        next = *am;
    }
    return next;
}

// The prompt as one batch, then greedy decoding one token at a time, then the logits of one
// more decoded token.
void run(const std::string& path, const LoadParams& p, Run& out) {
    auto model = Model::load(path, p);
    ASSERT_TRUE(model.ok()) << model.error().message;
    out.backend = (*model)->backend();
    auto session = Session::create(**model);
    ASSERT_TRUE(session.ok()) << session.error().message;
    std::vector<int32_t> prompt = (*model)->tokenize("Once upon a time, there was a", true, false);
    ASSERT_GT(prompt.size(), 2u);
    auto logits = (*session)->eval(prompt);
    ASSERT_TRUE(logits.ok()) << logits.error().message;
    out.logits.assign(logits->begin(), logits->end());
    int32_t next = decode_greedy(**session, greedy(out.logits), kSteps, out.greedy);
    ASSERT_GE(next, 0);
    std::vector<int32_t> one = {next};
    auto l = (*session)->eval(one);
    ASSERT_TRUE(l.ok()) << l.error().message;
    out.last.assign(l->begin(), l->end());

    // A fresh session: long prompt, decode, long prompt, decode.
    auto s2 = Session::create(**model);
    ASSERT_TRUE(s2.ok()) << s2.error().message;
    const std::vector<int32_t> text = (*model)->tokenize(
        "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
        "park with her dog, and every day they ran to the big tree by the pond.",
        true, false);
    ASSERT_GE(text.size(), 40u);
    auto l1 = (*s2)->eval(text);
    ASSERT_TRUE(l1.ok()) << l1.error().message;
    out.long1.assign(l1->begin(), l1->end());
    next = decode_greedy(**s2, greedy(out.long1), 4, out.long_greedy);
    ASSERT_GE(next, 0);
    std::vector<int32_t> more = text;
    more.erase(more.begin());  // no second BOS
    more.insert(more.begin(), next);
    auto l2 = (*s2)->eval(more);
    ASSERT_TRUE(l2.ok()) << l2.error().message;
    out.long2.assign(l2->begin(), l2->end());
    next = decode_greedy(**s2, greedy(out.long2), 4, out.long_greedy);
    ASSERT_GE(next, 0);
    std::vector<int32_t> t1 = {next};
    auto l3 = (*s2)->eval(t1);
    ASSERT_TRUE(l3.ok()) << l3.error().message;
    out.long_last.assign(l3->begin(), l3->end());
}

void check_every_split(const std::string& path) {
    Run gpu, cpu;
    ASSERT_NO_FATAL_FAILURE(run(path, params(BackendKind::Vulkan, -1), gpu));
    ASSERT_EQ(gpu.backend.kind, BackendKind::Vulkan) << gpu.backend.fallback_reason;
    EXPECT_EQ(gpu.backend.n_gpu_layers, 0u) << "a model that fits is not split";
    ASSERT_NO_FATAL_FAILURE(run(path, params(BackendKind::Cpu, -1), cpu));
    ASSERT_EQ(cpu.backend.kind, BackendKind::Cpu);
    EXPECT_LT(nmse(gpu.logits.data(), cpu.logits.data(), cpu.logits.size()), kTol);
    ASSERT_EQ(gpu.greedy, cpu.greedy) << "the backends disagree without a split";
    EXPECT_LT(nmse(gpu.long2.data(), cpu.long2.data(), cpu.long2.size()), kTol);

    auto m = Model::load(path, params(BackendKind::Cpu, -1));
    ASSERT_TRUE(m.ok()) << m.error().message;
    const uint32_t n_layer = (*m)->info().n_layer;
    ASSERT_GE(n_layer, 2u);
    for (uint32_t k = 1; k < n_layer; ++k) {
        SCOPED_TRACE("layers on the GPU: " + std::to_string(k) + " of " + std::to_string(n_layer));
        Run split;
        ASSERT_NO_FATAL_FAILURE(run(path, params(BackendKind::Vulkan, int(k)), split));
        ASSERT_EQ(split.backend.kind, BackendKind::Vulkan) << split.backend.fallback_reason;
        EXPECT_EQ(split.backend.n_gpu_layers, k);
        EXPECT_EQ(split.backend.n_layers, n_layer);
        const std::string says = std::to_string(k) + " of " + std::to_string(n_layer) +
                                 " layers on the GPU, " + std::to_string(n_layer - k) +
                                 " on the CPU";
        EXPECT_NE(split.backend.split.find(says), std::string::npos) << split.backend.split;
        const size_t V = cpu.logits.size();
        ASSERT_EQ(split.logits.size(), V);
        EXPECT_LT(nmse(split.logits.data(), gpu.logits.data(), V), kTol) << "prompt vs all-GPU";
        EXPECT_LT(nmse(split.logits.data(), cpu.logits.data(), V), kTol) << "prompt vs all-CPU";
        EXPECT_EQ(split.greedy, gpu.greedy);
        EXPECT_LT(nmse(split.last.data(), gpu.last.data(), V), kTol) << "decode vs all-GPU";
        EXPECT_LT(nmse(split.last.data(), cpu.last.data(), V), kTol) << "decode vs all-CPU";
        // Long prompts: every layer on the device, the CPU's K/V rows exchanged both ways.
        EXPECT_NE(split.backend.split.find("prompts of"), std::string::npos) << split.backend.split;
        for (const auto& [mine, name] :
             {std::pair{&Run::long1, "long prompt"}, std::pair{&Run::long2, "second long prompt"},
              std::pair{&Run::long_last, "decode after long prompts"}}) {
            ASSERT_EQ((split.*mine).size(), V) << name;
            EXPECT_LT(nmse((split.*mine).data(), (gpu.*mine).data(), V), kTol)
                << name << " vs all-GPU";
            EXPECT_LT(nmse((split.*mine).data(), (cpu.*mine).data(), V), kTol)
                << name << " vs all-CPU";
        }
        EXPECT_EQ(split.long_greedy, gpu.long_greedy);
    }
}

class PartialOffload : public VulkanTest {};

TEST_F(PartialOffload, StoriesSplitAtEveryLayerMatchesGpuAndCpu) {
    EMBER_VK_REQUIRE_DEVICE();
    check_every_split(ember::test::stories_model());
}

// A family on its own stages (per-head q/k norms, biases, sliding windows): Qwen 3 and Gemma 2.
TEST_F(PartialOffload, FamilySplitAtEveryLayerMatchesGpuAndCpu) {
    EMBER_VK_REQUIRE_DEVICE();
    for (const char* name : {"qwen3.gguf", "gemma2.gguf"}) {
        const std::string path = ember::test::shared_path(std::string("models/arch/") + name);
        if (!std::filesystem::exists(path)) GTEST_SKIP() << "no " << path;
        SCOPED_TRACE(name);
        check_every_split(path);
    }
}

// The GPU memory limit: a budget just under the whole model's need splits it, as the fit estimate
// says beforehand; a budget too small for one layer runs it all on the CPU, saying why.
TEST_F(PartialOffload, MemoryLimitSplitsAsTheEstimateSays) {
    EMBER_VK_REQUIRE_DEVICE();
    const std::string path = ember::test::stories_model();
    auto whole = ember::estimate_fit(path, 64, test_device());
    ASSERT_TRUE(whole.ok()) << whole.error().message;
    ASSERT_EQ(whole->verdict, ember::FitEstimate::Verdict::FitsGpu) << whole->message;
    EXPECT_EQ(whole->gpu_layers, whole->n_layers);

    FitLimits limits;
    limits.gpu_mem_limit = whole->total - 1;
    auto part = ember::estimate_fit(path, 64, test_device(), limits);
    ASSERT_TRUE(part.ok()) << part.error().message;
    EXPECT_EQ(part->verdict, ember::FitEstimate::Verdict::DoesNotFit);
    ASSERT_GE(part->gpu_layers, 1u) << part->message;
    ASSERT_LT(part->gpu_layers, part->n_layers) << part->message;
    EXPECT_EQ(part->total, whole->total) << "the whole model's need";
    EXPECT_LE(part->split_gpu_bytes, limits.gpu_mem_limit);
    EXPECT_GT(part->split_gpu_bytes, 0u);
    EXPECT_NE(part->message.find("partly fits: " + std::to_string(part->gpu_layers) + " of "),
              std::string::npos)
        << part->message;
    // What whole prompts on the device cost in host RAM (offload.h host_copy_bytes).
    EXPECT_NE(part->message.find("of host RAM"), std::string::npos) << part->message;

    LoadParams p = params(BackendKind::Auto, -1);
    p.n_ctx = 64;
    p.gpu_mem_limit = limits.gpu_mem_limit;
    auto model = Model::load(path, p);
    ASSERT_TRUE(model.ok()) << model.error().message;
    EXPECT_EQ((*model)->backend().kind, BackendKind::Vulkan);
    EXPECT_EQ((*model)->backend().n_gpu_layers, part->gpu_layers);
    EXPECT_NE((*model)->backend().split.find("the GPU budget is"), std::string::npos)
        << (*model)->backend().split;

    // Not even one layer and the output: the CPU runs it all.
    p.gpu_mem_limit = 1024;
    auto cpu = Model::load(path, p);
    ASSERT_TRUE(cpu.ok()) << cpu.error().message;
    EXPECT_EQ((*cpu)->backend().kind, BackendKind::Cpu);
    EXPECT_EQ((*cpu)->backend().fallback_code, "vulkan.does_not_fit");
    EXPECT_EQ((*cpu)->backend().n_gpu_layers, 0u);
}

// The host copy for whole prompts is kept only where the RAM holds it beside the CPU layers'
// own need; else the load goes on without it (prompts then run split, as short ones do).
TEST(PartialOffloadMemory, HostCopyOnlyWhereTheRamHoldsIt) {
    CpuMemoryNeed need;
    need.kv_cache = 300;
    need.buffers = 200;
    EXPECT_EQ(affordable_host_copy(need, 1000, 1500), 1000u);
    EXPECT_EQ(affordable_host_copy(need, 1000, 1499), 0u);
    EXPECT_EQ(affordable_host_copy(need, 0, 100), 0u);
}

// The CPU side of a split watches the cancel flag: a short prompt (its first layers on the CPU)
// ends with "cpu.cancelled" and the session goes on once the flag is down.
TEST_F(PartialOffload, CpuLayersWatchTheCancelFlag) {
    EMBER_VK_REQUIRE_DEVICE();
    auto model = Model::load(ember::test::stories_model(), params(BackendKind::Vulkan, 2));
    ASSERT_TRUE(model.ok()) << model.error().message;
    ASSERT_EQ((*model)->backend().n_gpu_layers, 2u) << (*model)->backend().split;
    auto session = Session::create(**model);
    ASSERT_TRUE(session.ok()) << session.error().message;
    std::atomic<bool> cancel{true};
    (*session)->set_cancel(&cancel);
    const std::vector<int32_t> prompt = (*model)->tokenize("Once upon a time", true, false);
    auto stopped = (*session)->eval(prompt);
    ASSERT_FALSE(stopped.ok());
    EXPECT_EQ(stopped.error().code, "cpu.cancelled") << stopped.error().message;
    cancel = false;
    auto again = (*session)->eval(prompt);
    EXPECT_TRUE(again.ok()) << again.error().message;
    (*session)->set_cancel(nullptr);
}

// A split load reports the CPU layers' repack too (progress climbs past the upload's share to 1,
// never back) and stops on the cancel flag while the CPU layers are prepared.
TEST_F(PartialOffload, SplitLoadReportsAndCancelsItsCpuPart) {
    EMBER_VK_REQUIRE_DEVICE();
    LoadParams p = params(BackendKind::Vulkan, 2);  // of 5: the CPU prepares 3 layers
    std::vector<float> seen;
    p.progress = [&](float f) {
        seen.push_back(f);
        return true;
    };
    auto model = Model::load(ember::test::stories_model(), p);
    ASSERT_TRUE(model.ok()) << model.error().message;
    ASSERT_EQ((*model)->backend().n_gpu_layers, 2u) << (*model)->backend().split;
    ASSERT_FALSE(seen.empty());
    EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
    EXPECT_FLOAT_EQ(seen.back(), 1.0f);
    // Reports between the upload's end (0.05 + 0.95 * 2/5 = 0.43) and 1: the CPU part's.
    const size_t during_cpu =
        std::count_if(seen.begin(), seen.end(), [](float f) { return f > 0.45f && f < 0.99f; });
    std::string all;
    for (float f : seen) all += std::to_string(f) + " ";
    EXPECT_GE(during_cpu, 2u) << all;

    std::atomic<bool> cancel{false};
    p.cancel = &cancel;
    p.progress = [&](float f) {
        if (f > 0.45f) cancel = true;  // once the CPU layers are being prepared
        return true;
    };
    auto stopped = Model::load(ember::test::stories_model(), p);
    ASSERT_FALSE(stopped.ok());
    EXPECT_EQ(stopped.error().code, "model.cancelled") << stopped.error().message;
}

// `ember-cli bench`'s text says the split too (its JSON has "split"): a prompt of 40 tokens runs
// every layer on the device, the 2 decode steps start on the CPU.
TEST_F(PartialOffload, BenchTextSaysTheSplit) {
    EMBER_VK_REQUIRE_DEVICE();
    // A test binary carried elsewhere finds ember-cli through $EMBER_CLI_PATH, or skips.
    if (!std::filesystem::exists(cli())) GTEST_SKIP() << "no " << cli();
    auto r = ember::test::run_cli(
        cli(), {"bench", "-m", ember::test::stories_model(), "-p", "40", "-n", "2", "-r", "1",
                "--backend", "vulkan", "--device", test_device(), "--gpu-layers", "2", "--threads",
                "2", "--ctx", "64"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("split: 2 of 5 layers on the GPU, 3 on the CPU"), std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("pp40:"), std::string::npos) << r.out;
}

TEST(ByteSize, ParsesUnitsAndRefusesTheRest) {
    EXPECT_EQ(*parse_byte_size("6G"), 6ull << 30);
    EXPECT_EQ(*parse_byte_size("512M"), 512ull << 20);
    EXPECT_EQ(*parse_byte_size("1.5GiB"), 3ull << 29);
    EXPECT_EQ(*parse_byte_size("800000000"), 800000000ull);
    EXPECT_EQ(*parse_byte_size("2 gb"), 2ull << 30);
    for (const char* bad : {"", "G", "6X", "-1G", "1.2.3G", "1e30G"})
        EXPECT_FALSE(parse_byte_size(bad).ok()) << bad;
}

}  // namespace
}  // namespace ember::vulkan::test
