// The logical device with its compute queue, and the small objects used to drive it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "vulkan/handle.h"
#include "vulkan/instance.h"

namespace ember::vulkan {

class Device {
public:
    // Creates the device with the features Ember's shaders use (16/8-bit storage, push
    // descriptors) and one compute queue. The adapter must be `usable`.
    static Result<std::unique_ptr<Device>> create(std::shared_ptr<Instance> instance,
                                                  const Adapter& adapter);
    ~Device();
    Device(const Device&) = delete;
    Device& operator=(const Device&) = delete;

    VkDevice handle() const { return m_device; }
    VkQueue queue() const { return m_queue; }
    const Adapter& adapter() const { return m_adapter; }
    const VkPhysicalDeviceLimits& limits() const { return m_adapter.props.limits; }

    // A memory type allowed by type_bits with all `required` flags, preferring `preferred`.
    Result<uint32_t> memory_type(uint32_t type_bits, VkMemoryPropertyFlags required,
                                 VkMemoryPropertyFlags preferred) const;
    bool is_host_coherent(uint32_t memory_type) const;
    bool is_host_cached(uint32_t memory_type) const;
    // EMBER_VULKAN_PIPELINE_STATS=1 on a driver with VK_KHR_pipeline_executable_properties:
    // pipelines are created with their compiler statistics, printed to stderr (diagnostics).
    bool pipeline_stats() const { return m_pipeline_stats; }
    // EMBER_VULKAN_TIMELINE (a file) on a device with shader clocks: the fused decode's Q4_0
    // mat-vecs of the middle layer write timestamps (forward.cpp).
    bool timeline() const { return m_timeline; }

private:
    Device() = default;
    std::shared_ptr<Instance> m_instance;  // outlives the device
    Adapter m_adapter;
    VkDevice m_device = VK_NULL_HANDLE;
    VkQueue m_queue = VK_NULL_HANDLE;
    bool m_pipeline_stats = false;
    bool m_timeline = false;
};

class Fence : public Owned<VkFence> {
public:
    using Owned::Owned;
    static Result<Fence> create(const Device& device);
    // Waits for the fence, polling `cancel` meanwhile; resets it afterwards.
    Status wait_and_reset(uint64_t timeout_ns = 60ull * 1000 * 1000 * 1000);
};

class CommandPool : public Owned<VkCommandPool> {
public:
    using Owned::Owned;
    static Result<CommandPool> create(const Device& device);
    // Command buffers are freed with the pool.
    Result<VkCommandBuffer> allocate();
};

// Submits one recorded command buffer and waits for it.
// Host time around submissions (EMBER_VULKAN_PROFILE=span), summed: in vkQueueSubmit, waiting
// for the fence, and from one wait's end to the next submission (the caller's own work).
struct SubmitTimes {
    double submit_us = 0, wait_us = 0, between_us = 0;
    uint64_t n = 0;
    double last_done = -1;  // steady-clock us when the last wait ended
};
Status submit_and_wait(const Device& device, VkCommandBuffer cmd, Fence& fence,
                       SubmitTimes* times = nullptr);

}  // namespace ember::vulkan
