// Vulkan faults injected through EMBER_FAULT (see inference/src/vulkan/fault.h) on the lavapipe
// software device: each ctest entry sets one fault, and the matching test checks what the
// engine does with it. Run bare, every test skips.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ember/ember.h"
#include "session/model_impl.h"
#include "test_util.h"
#include "vulkan/context.h"
#include "vulkan/fault.h"
#include "vulkan/instance.h"

namespace ember::vulkan {
namespace {

const char* kDevice = "llvmpipe";

std::string fault_env() {
    const char* e = std::getenv("EMBER_FAULT");
    return e ? e : "";
}

bool validation_on() {
    const char* e = std::getenv("VK_INSTANCE_LAYERS");
    return e && std::string(e).find("VK_LAYER_KHRONOS_validation") != std::string::npos;
}

// Skips unless EMBER_FAULT starts with `prefix` and the lavapipe device exists.
#define REQUIRE_FAULT(prefix)                                                               \
    do {                                                                                    \
        if (fault_env().rfind(prefix, 0) != 0)                                              \
            GTEST_SKIP() << "EMBER_FAULT is '" << fault_env() << "', not " << prefix;       \
        auto devs = list_devices();                                                         \
        bool found = false;                                                                 \
        if (devs.ok())                                                                      \
            for (const auto& d : *devs) found |= d.name.find(kDevice) != std::string::npos; \
        if (!found) GTEST_SKIP() << "no Vulkan device named " << kDevice;                   \
    } while (0)

// Device memory the backend accounts to the lavapipe adapter.
uint64_t device_bytes() {
    auto a = Context::pick_adapter(kDevice);
    return a.ok() ? own_allocations(a->uuid) : 0;
}

LoadParams params(BackendKind kind = BackendKind::Auto) {
    LoadParams lp;
    lp.backend = kind;
    lp.device = kDevice;
    lp.n_ctx = 128;
    return lp;
}

// Greedy tokens after a fixed prompt; an error is returned as is.
Result<GenerateStats> run(Session& s, int max_tokens, int* callbacks = nullptr) {
    std::vector<int32_t> prompt = s.model().tokenize("Once upon a time", true, false);
    GenerateParams gp;
    gp.max_tokens = max_tokens;
    gp.sampling.temperature = 0;
    gp.stop_at_eog = false;
    return generate(s, prompt, gp, [&](int32_t, std::string_view) {
        if (callbacks) ++*callbacks;
        return true;
    });
}

// The engine's log lines of a test (warnings and errors).
struct LogCapture {
    static void on_log(LogLevel level, const char* message, void* user) {
        auto* self = static_cast<LogCapture*>(user);
        std::lock_guard lock(self->mutex);
        if (level >= LogLevel::Warn) self->text += std::string(message) + "\n";
    }
    LogCapture() { set_log_callback(on_log, this); }
    ~LogCapture() { set_log_callback(nullptr, nullptr); }
    std::string get() {
        std::lock_guard lock(mutex);
        return text;
    }
    std::mutex mutex;
    std::string text;
};

// Greedy tokens of the CPU backend (the reference a working device must give).
std::vector<int32_t> cpu_tokens(int max_tokens) {
    auto cpu = Model::load(test::stories_model(), params(BackendKind::Cpu));
    EXPECT_TRUE(cpu.ok()) << cpu.error().message;
    if (!cpu.ok()) return {};
    auto s = Session::create(**cpu);
    EXPECT_TRUE(s.ok());
    if (!s.ok()) return {};
    auto g = run(**s, max_tokens);
    EXPECT_TRUE(g.ok()) << g.error().message;
    return g.ok() ? g->tokens : std::vector<int32_t>{};
}

// Fails the test if the validation layer (when on) reported errors, such as objects still
// alive at vkDestroyDevice, during it, or if device memory was freed while work submitted
// before an error could still use it (vulkan::memory_freed_in_flight).
class VkFault : public ::testing::Test {
protected:
    void SetUp() override {
        m_errors = validation_error_count();
        m_freed_in_flight = memory_freed_in_flight();
    }
    void TearDown() override {
        EXPECT_EQ(validation_error_count(), m_errors)
            << "the validation layer reported errors (leaked objects?)";
        EXPECT_EQ(memory_freed_in_flight(), m_freed_in_flight)
            << "device memory was freed while submitted work could still use it";
    }
    uint64_t m_errors = 0, m_freed_in_flight = 0;
};

// EMBER_FAULT=vk_alloc:N. Depending on N the failing allocation is a weight block or the
// staging buffer (load: CPU fallback) or a session buffer (Session::create fails).
TEST_F(VkFault, AllocationFailureIsCleanAndFallsBackOrFails) {
    REQUIRE_FAULT("vk_alloc");
    const uint64_t before = device_bytes();
    auto model = Model::load(test::stories_model(), params());
    ASSERT_TRUE(model.ok()) << model.error().message;
    const BackendInfo& b = (*model)->backend();
    if (fault::fired(fault::Kind::Alloc) == 1) {
        // Failed during the upload: everything freed, the CPU runs the model and says why.
        EXPECT_EQ(b.kind, BackendKind::Cpu);
        EXPECT_EQ(b.fallback_code, "vulkan.out_of_memory");
        EXPECT_NE(b.fallback_reason.find("vkAllocateMemory"), std::string::npos)
            << b.fallback_reason;
        EXPECT_NE(b.fallback_reason.find("VK_ERROR_OUT_OF_DEVICE_MEMORY"), std::string::npos)
            << b.fallback_reason;
        EXPECT_EQ(device_bytes(), before) << "device memory of the failed upload was not freed";
        auto s = Session::create(**model);
        ASSERT_TRUE(s.ok()) << s.error().message;
        auto g = run(**s, 8);
        ASSERT_TRUE(g.ok()) << g.error().message;
        EXPECT_EQ(g->n_generated, 8);
    } else {
        // Not during the load: a session's buffers fail instead.
        ASSERT_EQ(b.kind, BackendKind::Vulkan) << b.fallback_reason;
        const uint64_t loaded = device_bytes();
        EXPECT_GT(loaded, before);
        auto s = Session::create(**model);
        ASSERT_EQ(fault::fired(fault::Kind::Alloc), 1u)
            << "the fault did not fire at load or session creation; is N too large?";
        ASSERT_FALSE(s.ok());
        EXPECT_EQ(s.error().code, "vulkan.out_of_memory") << s.error().message;
        EXPECT_EQ(device_bytes(), loaded) << "device memory of the failed session leaked";
        auto again = Session::create(**model);  // the fault fires once
        ASSERT_TRUE(again.ok()) << again.error().message;
        auto g = run(**again, 8);
        ASSERT_TRUE(g.ok()) << g.error().message;
    }
    model->reset();
    EXPECT_EQ(device_bytes(), before);

    // The device itself is fine: the next load uses it.
    auto next = Model::load(test::stories_model(), params(BackendKind::Vulkan));
    ASSERT_TRUE(next.ok()) << next.error().message;
    EXPECT_EQ((*next)->backend().kind, BackendKind::Vulkan) << (*next)->backend().fallback_reason;
    next->reset();
    EXPECT_EQ(device_bytes(), before);
}

// EMBER_FAULT=vk_device_lost:N: the N-th submission after the load reports a lost device.
// EMBER_FAULT=vk_wait_lost:N: the N-th wait after the load does, while the work still runs (so
// that teardown must wait for it before freeing).
TEST_F(VkFault, DeviceLostDuringGenerationIsAnErrorAndAFreshLoadWorks) {
    const bool at_wait = fault_env().rfind("vk_wait_lost", 0) == 0;
    if (at_wait)
        REQUIRE_FAULT("vk_wait_lost");
    else
        REQUIRE_FAULT("vk_device_lost");
    const fault::Kind kind = at_wait ? fault::Kind::WaitLost : fault::Kind::DeviceLost;
    const uint64_t before = device_bytes();
    std::vector<int32_t> want;
    {
        auto model = Model::load(test::stories_model(), params(BackendKind::Vulkan));
        ASSERT_TRUE(model.ok()) << model.error().message;
        ASSERT_EQ((*model)->backend().kind, BackendKind::Vulkan)
            << (*model)->backend().fallback_reason;
        auto s = Session::create(**model);
        ASSERT_TRUE(s.ok()) << s.error().message;
        int callbacks = 0;
        auto g = run(**s, 16, &callbacks);
        ASSERT_EQ(fault::fired(kind), 1u) << "the fault did not fire";
        ASSERT_FALSE(g.ok()) << "generation went on after the device was lost";
        EXPECT_EQ(g.error().code, "vulkan.device_lost") << g.error().message;
        EXPECT_NE(g.error().message.find("VK_ERROR_DEVICE_LOST"), std::string::npos);
        EXPECT_NE(g.error().message.find(at_wait ? "vkWaitForFences" : "vkQueueSubmit"),
                  std::string::npos)
            << g.error().message;
        // The tokens before the loss were streamed; none after it.
        EXPECT_LT(callbacks, 16);

        // The session goes at once, its last submission possibly still running (the fixture
        // checks that nothing was freed under it). The device stays lost for this model: a new
        // session's eval reports it again, it does not hang or crash.
        s->reset();
        s = Session::create(**model);
        ASSERT_TRUE(s.ok()) << s.error().message;
        std::vector<int32_t> one = {(*model)->bos()};
        auto e = (*s)->eval(one);
        ASSERT_FALSE(e.ok());
        EXPECT_EQ(e.error().code, "vulkan.device_lost");
        auto a = (*s)->eval_argmax(one);
        ASSERT_FALSE(a.ok());
        EXPECT_EQ(a.error().code, "vulkan.device_lost");
    }
    EXPECT_EQ(device_bytes(), before) << "device memory of the lost device was not freed";

    // Loading again creates a fresh device, which works and gives the usual greedy tokens.
    auto model = Model::load(test::stories_model(), params(BackendKind::Vulkan));
    ASSERT_TRUE(model.ok()) << model.error().message;
    ASSERT_EQ((*model)->backend().kind, BackendKind::Vulkan) << (*model)->backend().fallback_reason;
    auto s = Session::create(**model);
    ASSERT_TRUE(s.ok()) << s.error().message;
    auto g = run(**s, 16);
    ASSERT_TRUE(g.ok()) << g.error().message;
    EXPECT_EQ(g->n_generated, 16);

    auto cpu = Model::load(test::stories_model(), params(BackendKind::Cpu));
    ASSERT_TRUE(cpu.ok()) << cpu.error().message;
    auto cs = Session::create(**cpu);
    ASSERT_TRUE(cs.ok());
    auto cg = run(**cs, 16);
    ASSERT_TRUE(cg.ok()) << cg.error().message;
    EXPECT_EQ(g->tokens, cg->tokens) << "the fresh device computes something else";
    // The two evals above found the device lost at submission.
    EXPECT_EQ(fault::fired(fault::Kind::DeviceLost), at_wait ? 2u : 1u + 2u);
}

// EMBER_FAULT=vk_slow:N: from the N-th fence wait on, each wait sees its fence unsignalled for
// 12 s worth of waits (as on lavapipe on a loaded machine, or a slow integrated GPU). That is
// no error: the load and the generation wait, say that they do, and give the usual tokens.
TEST_F(VkFault, SlowDeviceIsWaitedForNotAnError) {
    REQUIRE_FAULT("vk_slow");
    LogCapture log;
    auto model = Model::load(test::stories_model(), params(BackendKind::Vulkan));
    ASSERT_TRUE(model.ok()) << model.error().message;
    ASSERT_EQ((*model)->backend().kind, BackendKind::Vulkan) << (*model)->backend().fallback_reason;
    auto s = Session::create(**model);
    ASSERT_TRUE(s.ok()) << s.error().message;
    auto g = run(**s, 16);
    ASSERT_TRUE(g.ok()) << g.error().message;
    EXPECT_EQ(g->n_generated, 16);
    EXPECT_GE(fault::fired(fault::Kind::Slow), 16u) << "the fault did not slow the decode steps";
    EXPECT_NE(log.get().find("still waiting for the GPU after"), std::string::npos) << log.get();
    EXPECT_EQ(g->tokens, cpu_tokens(16));
}

// EMBER_FAULT=vk_slow:1: a Stop pressed while generate() waits for a slow GPU (here when the
// engine logs that it is still waiting) ends that wait at once: generate returns "cancelled"
// without the token being computed, in the prompt or in a decode step, and the session goes on
// from what it had evaluated with the CPU's tokens.
TEST_F(VkFault, SlowDeviceCancelEndsTheWaitAtOnce) {
    REQUIRE_FAULT("vk_slow");
    auto model = Model::load(test::stories_model(), params(BackendKind::Vulkan));
    ASSERT_TRUE(model.ok()) << model.error().message;
    ASSERT_EQ((*model)->backend().kind, BackendKind::Vulkan) << (*model)->backend().fallback_reason;
    auto s = Session::create(**model);
    ASSERT_TRUE(s.ok()) << s.error().message;
    const std::vector<int32_t> want = cpu_tokens(8);
    ASSERT_EQ(want.size(), 8u);

    // The user presses Stop when the engine says it is still waiting (after 10 s of slices).
    struct Stop {
        std::atomic<bool> armed{false}, cancel{false};
        std::atomic<int> waits_cancelled{0};
        static void on_log(LogLevel, const char* message, void* user) {
            auto* self = static_cast<Stop*>(user);
            if (self->armed &&
                std::string(message).find("still waiting for the GPU") != std::string::npos) {
                EXPECT_NE(std::string(message).find("cancel stops the wait"), std::string::npos)
                    << "the wait does not see generate's cancel flag: " << message;
                self->cancel = true;
                ++self->waits_cancelled;
            }
        }
    } stop;
    set_log_callback(Stop::on_log, &stop);
    const std::vector<int32_t> prompt = (*model)->tokenize("Once upon a time", true, false);
    GenerateParams gp;
    gp.max_tokens = 8;
    gp.sampling.temperature = 0;
    gp.stop_at_eog = false;
    gp.cancel = &stop.cancel;

    // In the prompt: nothing generated, nothing evaluated.
    stop.armed = true;
    int streamed = 0;
    auto g = generate(**s, prompt, gp, [&](int32_t, std::string_view) { return ++streamed, true; });
    ASSERT_TRUE(g.ok()) << g.error().message;
    EXPECT_EQ(g->stop, StopReason::Cancelled);
    EXPECT_EQ(g->n_generated, 0);
    EXPECT_EQ(streamed, 0);
    EXPECT_EQ((*s)->n_past(), 0);
    EXPECT_EQ(stop.waits_cancelled, 1);

    // In the 4th decode step: Stop comes once the 3rd token is shown; that wait ends at once,
    // so no 4th token is computed or streamed.
    stop.armed = false;
    stop.cancel = false;
    streamed = 0;
    g = generate(**s, prompt, gp, [&](int32_t, std::string_view) {
        if (++streamed == 3) stop.armed = true;
        return true;
    });
    set_log_callback(nullptr, nullptr);
    ASSERT_TRUE(g.ok()) << g.error().message;
    EXPECT_EQ(g->stop, StopReason::Cancelled);
    EXPECT_EQ(streamed, 3) << "the token of the cancelled wait was still computed";
    ASSERT_EQ(g->tokens.size(), 3u);
    EXPECT_EQ(g->tokens, std::vector<int32_t>(want.begin(), want.begin() + 3));
    EXPECT_EQ((*s)->n_past(), int(prompt.size()) + 2);
    EXPECT_EQ(stop.waits_cancelled, 2);

    // Going on from the last token gives the CPU's next ones.
    gp.cancel = nullptr;
    gp.max_tokens = 5;
    const std::vector<int32_t> last = {g->tokens.back()};
    auto more = generate(**s, last, gp, nullptr);
    ASSERT_TRUE(more.ok()) << more.error().message;
    EXPECT_EQ(more->tokens, std::vector<int32_t>(want.begin() + 3, want.end()));
}

// EMBER_FAULT=vk_hang:N: the N-th wait after the load never sees its fence signal. Cancelled,
// the session goes at once, with its work treated as still running: the teardown waits for it
// before freeing anything (the fixture checks), and the model works on in a new session.
TEST_F(VkFault, HungWaitThenTeardownWaitsForTheWork) {
    REQUIRE_FAULT("vk_hang");
    auto model = Model::load(test::stories_model(), params(BackendKind::Vulkan));
    ASSERT_TRUE(model.ok()) << model.error().message;
    ASSERT_EQ((*model)->backend().kind, BackendKind::Vulkan) << (*model)->backend().fallback_reason;
    std::atomic<bool> cancel{false}, stop{false};
    std::thread user([&] {
        while (!stop && fault::fired(fault::Kind::Hang) == 0)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        cancel = true;
    });
    {
        auto runner = (*model)->impl().backend->create_runner(128);
        ASSERT_TRUE(runner.ok()) << runner.error().message;
        (*runner)->set_cancel(&cancel);
        const std::vector<int32_t> prompt = (*model)->tokenize("Once upon a time", true, false);
        std::vector<float> logits(static_cast<size_t>((*model)->n_vocab()));
        Status st = (*runner)->forward(prompt, 0, logits.data());
        for (int pos = int(prompt.size()); st.ok() && pos < 16; ++pos) {
            const std::vector<int32_t> one = {int32_t(pos)};
            st = (*runner)->forward(one, pos, logits.data());
        }
        stop = true;
        user.join();
        ASSERT_EQ(fault::fired(fault::Kind::Hang), 1u) << "the fault did not fire";
        ASSERT_FALSE(st.ok()) << "the hung wait was not cancelled";
        EXPECT_EQ(st.error().code, "vulkan.cancelled") << st.error().message;
    }
    auto s = Session::create(**model);
    ASSERT_TRUE(s.ok()) << s.error().message;
    auto g = run(**s, 16);
    ASSERT_TRUE(g.ok()) << g.error().message;
    EXPECT_EQ(g->tokens, cpu_tokens(16));
}

// EMBER_FAULT=vk_hang:N: the N-th wait after the load never sees its fence signal. The
// runner's cancel flag ends the wait with "vulkan.cancelled"; the work is then treated as
// still running, so the next evaluation and the teardown wait for it first (the fixture checks
// that no memory was freed under it), and the runner works on afterwards.
TEST_F(VkFault, HungWaitEndsWithCancelAndTheRunnerRecovers) {
    REQUIRE_FAULT("vk_hang");
    auto model = Model::load(test::stories_model(), params(BackendKind::Vulkan));
    ASSERT_TRUE(model.ok()) << model.error().message;
    ASSERT_EQ((*model)->backend().kind, BackendKind::Vulkan) << (*model)->backend().fallback_reason;
    BackendModel& backend = *(*model)->impl().backend;
    const std::vector<int32_t> prompt = (*model)->tokenize("Once upon a time", true, false);
    const size_t n_vocab = static_cast<size_t>((*model)->n_vocab());
    std::atomic<bool> cancel{false}, stop{false};
    // Cancels once the hang has begun, as a user pressing Stop would.
    std::thread user([&] {
        while (!stop && fault::fired(fault::Kind::Hang) == 0)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        cancel = true;
    });
    auto runner = backend.create_runner(128);
    ASSERT_TRUE(runner.ok()) << runner.error().message;
    (*runner)->set_cancel(&cancel);
    std::vector<float> logits(n_vocab);
    // Prompt, then decode steps until the hung one (vk_hang:N picks which).
    std::vector<std::pair<std::vector<int32_t>, int>> done;  // what was evaluated, and where
    Status st;
    int pos = 0;
    for (int step = 0; step < 8 && st.ok(); ++step) {
        std::vector<int32_t> in = step == 0 ? prompt : std::vector<int32_t>{int32_t(step + 10)};
        st = (*runner)->forward(in, pos, logits.data());
        if (st.ok()) done.emplace_back(in, pos), pos += int(in.size());
    }
    stop = true;
    user.join();
    ASSERT_EQ(fault::fired(fault::Kind::Hang), 1u) << "the fault did not fire";
    ASSERT_FALSE(st.ok()) << "the hung wait was not cancelled";
    EXPECT_EQ(st.error().code, "vulkan.cancelled") << st.error().message;

    // The same runner goes on from where it was, and computes what a fresh one does.
    cancel = false;
    std::vector<float> again(n_vocab), fresh(n_vocab);
    const std::vector<int32_t> next = {42};
    ASSERT_TRUE((*runner)->forward(next, pos, again.data()).ok());
    auto other = backend.create_runner(128);
    ASSERT_TRUE(other.ok()) << other.error().message;
    for (const auto& [in, at] : done) ASSERT_TRUE((*other)->forward(in, at, fresh.data()).ok());
    ASSERT_TRUE((*other)->forward(next, pos, fresh.data()).ok());
    double num = 0, den = 0;
    for (size_t i = 0; i < n_vocab; ++i) {
        num += double(again[i] - fresh[i]) * (again[i] - fresh[i]);
        den += double(fresh[i]) * fresh[i];
    }
    // (Not bit for bit: the fused decode attention adds with float atomics, in any order.)
    EXPECT_LT(num, 1e-7 * den) << "after the cancel, the runner computes something else";
    runner->reset();
    other->reset();
}

// EMBER_FAULT=vk_pipeline: no pipeline can be built, so the load falls back to the CPU.
TEST_F(VkFault, PipelineFailureFallsBackToCpuNamingTheShader) {
    REQUIRE_FAULT("vk_pipeline");
    const uint64_t before = device_bytes();
    for (BackendKind kind : {BackendKind::Auto, BackendKind::Vulkan}) {
        auto model = Model::load(test::stories_model(), params(kind));
        ASSERT_TRUE(model.ok()) << model.error().message;
        const BackendInfo& b = (*model)->backend();
        EXPECT_EQ(b.kind, BackendKind::Cpu);
        EXPECT_FALSE(b.fallback_code.empty());
        EXPECT_EQ(b.fallback_code.rfind("vulkan.", 0), 0u) << b.fallback_code;
        EXPECT_NE(b.fallback_reason.find("vkCreateComputePipelines"), std::string::npos)
            << b.fallback_reason;
        EXPECT_NE(b.fallback_reason.find("shader '"), std::string::npos) << b.fallback_reason;
        EXPECT_EQ(device_bytes(), before) << "the weights uploaded before the failure leaked";
        auto s = Session::create(**model);
        ASSERT_TRUE(s.ok()) << s.error().message;
        auto g = run(**s, 8);
        ASSERT_TRUE(g.ok()) << g.error().message;
    }
    EXPECT_GE(fault::fired(fault::Kind::Pipeline), 2u);
}

// The leak checks above rely on the validation layer reporting objects still alive when a
// device is destroyed: make sure it does, with a deliberately leaked allocation.
TEST_F(VkFault, ValidationLayerSeesALeakedAllocation) {
    if (!validation_on()) GTEST_SKIP() << "the validation layer is not on";
    REQUIRE_FAULT("");
    ContextOptions o;
    o.device = kDevice;
    o.disk_pipeline_cache = false;
    auto ctx = Context::create(o);
    ASSERT_TRUE(ctx.ok()) << ctx.error().message;
    const Device& dev = (*ctx)->device();
    auto type = dev.memory_type(~0u, 0, 0);
    ASSERT_TRUE(type.ok());
    VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    ai.allocationSize = 4096;
    ai.memoryTypeIndex = *type;
    VkDeviceMemory leaked = VK_NULL_HANDLE;
    ASSERT_EQ(vkAllocateMemory(dev.handle(), &ai, nullptr, &leaked), VK_SUCCESS);
    const uint64_t errors = validation_error_count();
    ctx->reset();
    EXPECT_GT(validation_error_count(), errors) << "a leaked VkDeviceMemory went unreported";
    m_errors = validation_error_count();  // expected errors: not a failure of this test
}

}  // namespace
}  // namespace ember::vulkan
