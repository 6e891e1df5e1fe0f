#include "vk_test_util.h"

#include "vulkan/instance.h"

namespace ember::vulkan::test {

std::string no_device_reason() {
    static std::string reason = [] {
        auto devs = list_devices();
        if (!devs.ok()) return devs.error().message;
        if (devs->empty()) return std::string("the loader lists no device");
        return std::string();
    }();
    return reason;
}

Context& shared_context() {
    static std::unique_ptr<Context> ctx = [] {
        ContextOptions o;
        o.device = test_device();
        o.disk_pipeline_cache = false;
        auto c = Context::create(o);
        if (!c.ok()) {
            ADD_FAILURE() << "cannot create a context on '" << o.device
                          << "': " << c.error().message;
            std::abort();
        }
        return std::move(c).value();
    }();
    return *ctx;
}

void VulkanTest::SetUp() {
    m_errors_before = validation_error_count();
}

void VulkanTest::TearDown() {
    EXPECT_EQ(validation_error_count(), m_errors_before)
        << "the Vulkan validation layer reported errors";
}

}  // namespace ember::vulkan::test
