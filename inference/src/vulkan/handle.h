// A move-only owner of one device-level Vulkan handle; the named classes (Fence, Pipeline, ...)
// derive from it and add a factory that returns Result.
#pragma once

#include <utility>

#include "vulkan/vk.h"

namespace ember::vulkan {

template <class H>
struct Destroyer;
#define EMBER_DESTROYER(H, fn)                                      \
    template <>                                                     \
    struct Destroyer<H> {                                           \
        static void destroy(VkDevice d, H h) { fn(d, h, nullptr); } \
    }
EMBER_DESTROYER(VkFence, vkDestroyFence);
EMBER_DESTROYER(VkCommandPool, vkDestroyCommandPool);
EMBER_DESTROYER(VkBuffer, vkDestroyBuffer);
EMBER_DESTROYER(VkShaderModule, vkDestroyShaderModule);
EMBER_DESTROYER(VkDescriptorSetLayout, vkDestroyDescriptorSetLayout);
EMBER_DESTROYER(VkPipelineLayout, vkDestroyPipelineLayout);
EMBER_DESTROYER(VkPipeline, vkDestroyPipeline);
EMBER_DESTROYER(VkPipelineCache, vkDestroyPipelineCache);
EMBER_DESTROYER(VkQueryPool, vkDestroyQueryPool);
#undef EMBER_DESTROYER

template <class H>
class Owned {
public:
    Owned() = default;
    Owned(VkDevice device, H handle) : m_device(device), m_handle(handle) {}
    ~Owned() { reset(); }
    Owned(Owned&& o) noexcept : m_device(o.m_device), m_handle(take_handle(o.m_handle)) {}
    Owned& operator=(Owned&& o) noexcept {
        if (this != &o) {
            reset();
            m_device = o.m_device;
            m_handle = take_handle(o.m_handle);
        }
        return *this;
    }
    Owned(const Owned&) = delete;
    Owned& operator=(const Owned&) = delete;

    H handle() const { return m_handle; }
    VkDevice device() const { return m_device; }
    explicit operator bool() const { return m_handle != VK_NULL_HANDLE; }
    void reset() {
        if (m_handle != VK_NULL_HANDLE) Destroyer<H>::destroy(m_device, take_handle(m_handle));
    }

private:
    VkDevice m_device = VK_NULL_HANDLE;
    H m_handle = VK_NULL_HANDLE;
};

}  // namespace ember::vulkan
