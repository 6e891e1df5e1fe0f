// Adapters, device choice, error mapping, pipeline cache.
#include <filesystem>

#include "ember/ember.h"
#include "test_util.h"
#include "vk_test_util.h"
#include "vulkan/bench/bandwidth.h"
#include "vulkan/device.h"
#include "vulkan/instance.h"
#include "vulkan/pipeline.h"

namespace ember::vulkan::test {
namespace {

class Devices : public VulkanTest {};

TEST_F(Devices, ListsAdaptersWithDetails) {
    EMBER_VK_REQUIRE_DEVICE();
    auto devs = list_devices();
    ASSERT_TRUE(devs.ok());
    ASSERT_FALSE(devs->empty());
    for (const auto& d : *devs) {
        std::printf(
            "device %d: %s (%s, %s, driver %s, Vulkan %s, %llu MiB device-local, budget %llu MiB "
            "by %s, "
            "subgroup %u)%s%s\n",
            d.index, d.name.c_str(), d.type.c_str(), d.vendor.c_str(), d.driver_version.c_str(),
            d.api_version.c_str(), (unsigned long long)(d.device_local_bytes >> 20),
            (unsigned long long)(d.budget_bytes >> 20), d.budget_source.c_str(), d.subgroup_size,
            d.suitable ? "" : " not suitable: ", d.unsuitable_reason.c_str());
        EXPECT_FALSE(d.name.empty());
        EXPECT_FALSE(d.driver_version.empty());
        EXPECT_GT(d.device_local_bytes, 0u) << d.name;
        EXPECT_GT(d.budget_bytes, 0u) << d.name;
        EXPECT_TRUE(d.budget_source == "VK_EXT_memory_budget" || d.budget_source == "heap size")
            << d.budget_source;
        EXPECT_GE(d.subgroup_size, 1u);
        if (d.type == "cpu") {
            EXPECT_FALSE(d.suitable);
            EXPECT_EQ(d.unsuitable_code, "cpu_adapter");
        }
        if (!d.suitable) {
            EXPECT_FALSE(d.unsuitable_reason.empty());
        }
    }
}

TEST_F(Devices, LavapipeIsACpuAdapterWithoutMemoryBudget) {
    EMBER_VK_REQUIRE_DEVICE();
    auto devs = list_devices();
    ASSERT_TRUE(devs.ok());
    bool found = false;
    for (const auto& d : *devs) {
        if (d.name.find("llvmpipe") == std::string::npos) continue;
        found = true;
        EXPECT_EQ(d.type, "cpu");
        EXPECT_EQ(d.vendor, "Mesa");
        EXPECT_EQ(d.budget_source, "heap size");
        EXPECT_EQ(d.budget_bytes, d.device_local_bytes);
    }
    if (!found) GTEST_SKIP() << "no lavapipe device";
}

TEST_F(Devices, ChoosesByIndexNameOrRefuses) {
    EMBER_VK_REQUIRE_DEVICE();
    auto inst = Instance::get();
    ASSERT_TRUE(inst.ok());
    auto adapters = enumerate_adapters(*inst);
    ASSERT_TRUE(adapters.ok());

    auto by_index = choose_adapter(*adapters, "0");
    if ((*adapters)[0].usable) {
        ASSERT_TRUE(by_index.ok()) << by_index.error().message;
        EXPECT_EQ(*by_index, 0u);
    }
    auto bad_index = choose_adapter(*adapters, "99");
    ASSERT_FALSE(bad_index.ok());
    EXPECT_EQ(bad_index.error().code, "vulkan.device_not_found");
    auto bad_name = choose_adapter(*adapters, "no such gpu");
    ASSERT_FALSE(bad_name.ok());
    EXPECT_EQ(bad_name.error().code, "vulkan.device_not_found");
    EXPECT_NE(bad_name.error().message.find((*adapters)[0].info.name), std::string::npos);

    // A CPU adapter is taken when named, never automatically.
    auto by_name = choose_adapter(*adapters, "LLVMPIPE");
    bool any_suitable = false;
    for (const auto& a : *adapters) any_suitable |= a.info.suitable;
    auto autopick = choose_adapter(*adapters, "");
    if (any_suitable) {
        ASSERT_TRUE(autopick.ok());
        EXPECT_TRUE((*adapters)[*autopick].info.suitable);
    } else {
        ASSERT_FALSE(autopick.ok());
        EXPECT_EQ(autopick.error().code, "vulkan.no_suitable_device");
        EXPECT_NE(autopick.error().message.find("software"), std::string::npos)
            << autopick.error().message;
    }
    if (by_name.ok()) {
        EXPECT_EQ((*adapters)[*by_name].info.type, "cpu");
    }
}

// A large-BAR GPU's memory types as RADV lists them: host buffers must not pick the
// device-local host-visible type, which the GPU budget would not count.
TEST(MemoryTypes, HostBuffersAvoidDeviceLocalWhereTheyCan) {
    constexpr VkMemoryPropertyFlags kLocal = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT,
                                    kVisible = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                               VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                                    kCached = VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
    VkPhysicalDeviceMemoryProperties mem{};
    mem.memoryTypeCount = 4;
    mem.memoryTypes[0].propertyFlags = kLocal;
    mem.memoryTypes[1].propertyFlags = kLocal | kVisible;
    mem.memoryTypes[2].propertyFlags = kVisible;
    mem.memoryTypes[3].propertyFlags = kVisible | kCached;
    EXPECT_EQ(pick_memory_type(mem, 0xF, kVisible, 0, kLocal), 2);
    EXPECT_EQ(pick_memory_type(mem, 0xF, kVisible, kCached, kLocal), 3);
    EXPECT_EQ(pick_memory_type(mem, 0xF, kLocal, 0, 0), 0);
    // Nothing else allowed (an integrated GPU: all memory is device-local): take it.
    EXPECT_EQ(pick_memory_type(mem, 0x3, kVisible, 0, kLocal), 1);
    // The preferred flags rank above the avoided ones; none with the required flags: -1.
    mem.memoryTypes[1].propertyFlags = kLocal | kVisible | kCached;
    EXPECT_EQ(pick_memory_type(mem, 0x7, kVisible, kCached, kLocal), 1);
    EXPECT_EQ(pick_memory_type(mem, 0x1, kVisible, 0, kLocal), -1);
}

TEST(VulkanErrors, EveryResultMapsToACode) {
    EXPECT_EQ(vk_error(VK_ERROR_OUT_OF_DEVICE_MEMORY, "x").code, "vulkan.out_of_memory");
    EXPECT_EQ(vk_error(VK_ERROR_DEVICE_LOST, "x").code, "vulkan.device_lost");
    EXPECT_EQ(vk_error(VK_ERROR_OUT_OF_HOST_MEMORY, "x").code, "vulkan.out_of_host_memory");
    EXPECT_EQ(vk_error(VK_ERROR_EXTENSION_NOT_PRESENT, "x").code, "vulkan.missing_feature");
    Error e = vk_error(VK_ERROR_DEVICE_LOST, "vkQueueSubmit");
    EXPECT_NE(e.message.find("vkQueueSubmit"), std::string::npos);
    EXPECT_NE(e.message.find("VK_ERROR_DEVICE_LOST"), std::string::npos);
    EXPECT_EQ(vk_error(VkResult(-12345), "x").code, "vulkan.error");
}

TEST_F(Devices, PipelineCacheIsWrittenAndReloaded) {
    EMBER_VK_REQUIRE_DEVICE();
    // A folder of this test alone; the environment's own cache folder comes back afterwards,
    // for the tests after this one in the same process (test_vulkan_validation). The adapters
    // are enumerated first: lavapipe places Mesa's shader cache under XDG_CACHE_HOME then, for
    // the whole process, and this folder is removed at the end ("Failed to create .../
    // mesa_shader_cache/.. for shader cache (No such file or directory)" in later tests).
    ASSERT_TRUE(Context::pick_adapter(test_device()).ok());
    const auto dir = std::filesystem::temp_directory_path() /
                     ("ember-vk-cache-" + std::to_string(::getpid()) + "-" +
                      ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const char* old = std::getenv("XDG_CACHE_HOME");
    const std::string previous = old ? old : "";
    ::setenv("XDG_CACHE_HOME", dir.c_str(), 1);
    std::filesystem::path file;
    for (int round = 0; round < 2; ++round) {
        ContextOptions o;
        o.device = test_device();
        auto ctx = Context::create(o);
        ASSERT_TRUE(ctx.ok()) << ctx.error().message;
        file = (*ctx)->pipelines().cache().file();
        EXPECT_EQ(file.parent_path(), dir / "ember");
        EXPECT_EQ((*ctx)->pipelines().cache().loaded_from_disk(), round == 1);
        auto k = (*ctx)->pipelines().get("add_f32_f32", 2, 12, 256);
        ASSERT_TRUE(k.ok()) << k.error().message;
        ASSERT_TRUE((*ctx)->pipelines().save_cache().ok());
        if (round == 1 && (*ctx)->adapter().has_creation_feedback)
            std::printf("pipeline cache hits on the second start: %d of %d\n",
                        (*ctx)->pipelines().n_cache_hits(), (*ctx)->pipelines().n_created());
        EXPECT_TRUE(std::filesystem::exists(file));
    }
    // No temporary file is left behind by the atomic write.
    int n_files = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir / "ember"))
        n_files += e.is_regular_file();
    EXPECT_EQ(n_files, 1);
    if (old)
        ::setenv("XDG_CACHE_HOME", previous.c_str(), 1);
    else
        ::unsetenv("XDG_CACHE_HOME");
    std::filesystem::remove_all(dir);
}

// The read-bandwidth measurement runs every size it is given (rounded down to 16 bytes),
// rotating through its buffer; the numbers depend on the machine, so only their sanity is
// checked here.
TEST(ReadBandwidth, MeasuresEverySize) {
    EMBER_VK_REQUIRE_DEVICE();
    Context& ctx = shared_context();
    uint64_t before = validation_error_count();
    auto r = measure_read_bandwidth(ctx, {4096, 1000003, 3u << 20}, 3, 8u << 20);
    ASSERT_TRUE(r.ok()) << r.error().message;
    ASSERT_EQ(r->size(), 3u);
    EXPECT_EQ((*r)[0].bytes, 4096u);
    EXPECT_EQ((*r)[1].bytes, 1000000u);
    EXPECT_EQ((*r)[2].bytes, 3u << 20);
    for (const auto& b : *r) {
        EXPECT_GT(b.us_per_dispatch, 0.0);
        EXPECT_GT(b.gb_s, 0.0);
        EXPECT_NEAR(b.gb_s, double(b.bytes) / (b.us_per_dispatch * 1000.0), 1e-6 * b.gb_s);
    }
    EXPECT_EQ(validation_error_count(), before);
}

// Proves that the validation run can fail: a deliberate misuse must be counted.
TEST(VulkanValidation, LayerReportsErrors) {
    const char* expect = std::getenv("EMBER_VULKAN_EXPECT_VALIDATION");
    if (!expect || std::string(expect) != "1") GTEST_SKIP() << "not the validation run";
    EMBER_VK_REQUIRE_DEVICE();
    Context& ctx = shared_context();
    uint64_t before = validation_error_count();
    VkBufferCreateInfo ci{};
    ci.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
    ci.size = 0;  // invalid: size must be greater than 0
    ci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
    VkBuffer b = VK_NULL_HANDLE;
    vkCreateBuffer(ctx.device().handle(), &ci, nullptr, &b);
    if (b) vkDestroyBuffer(ctx.device().handle(), b, nullptr);
    EXPECT_GT(validation_error_count(), before) << "the validation layer is not active";
}

// Run by the test_vulkan_no_driver ctest entry, whose loader sees no driver.
TEST(VulkanNoDriver, ListingFailsAndLoadingFallsBackToTheCpu) {
    const char* expect = std::getenv("EMBER_VULKAN_EXPECT_NO_DRIVER");
    if (!expect || std::string(expect) != "1") GTEST_SKIP() << "not the no-driver run";
    auto devs = list_devices();
    ASSERT_FALSE(devs.ok());
    EXPECT_EQ(devs.error().code.rfind("vulkan.", 0), 0u) << devs.error().code;
    EXPECT_FALSE(devs.error().message.empty());

    LoadParams lp;  // auto: Vulkan if possible
    auto model = Model::load(ember::test::stories_model(), lp);
    ASSERT_TRUE(model.ok()) << model.error().message;
    EXPECT_EQ((*model)->backend().kind, BackendKind::Cpu);
    EXPECT_EQ((*model)->backend().fallback_code, devs.error().code);
}

}  // namespace
}  // namespace ember::vulkan::test
