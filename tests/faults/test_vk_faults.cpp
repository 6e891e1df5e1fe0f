// Vulkan faults injected through EMBER_FAULT (see inference/src/vulkan/fault.h) on the lavapipe
// software device: each ctest entry sets one fault, and the matching test checks what the
// engine does with it. Run bare, every test skips.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "ember/ember.h"
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

// Fails the test if the validation layer (when on) reported errors, such as objects still
// alive at vkDestroyDevice, during it.
class VkFault : public ::testing::Test {
protected:
    void SetUp() override { m_errors = validation_error_count(); }
    void TearDown() override {
        EXPECT_EQ(validation_error_count(), m_errors)
            << "the validation layer reported errors (leaked objects?)";
    }
    uint64_t m_errors = 0;
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
TEST_F(VkFault, DeviceLostDuringGenerationIsAnErrorAndAFreshLoadWorks) {
    REQUIRE_FAULT("vk_device_lost");
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
        ASSERT_EQ(fault::fired(fault::Kind::DeviceLost), 1u) << "the fault did not fire";
        ASSERT_FALSE(g.ok()) << "generation went on after the device was lost";
        EXPECT_EQ(g.error().code, "vulkan.device_lost") << g.error().message;
        EXPECT_NE(g.error().message.find("VK_ERROR_DEVICE_LOST"), std::string::npos);
        // The tokens before the loss were streamed; none after it.
        EXPECT_LT(callbacks, 16);

        // The device stays lost for this model: eval reports it again, it does not hang or crash.
        (*s)->reset();
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
    EXPECT_EQ(fault::fired(fault::Kind::DeviceLost), 1u + 2u);  // the two evals above
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
