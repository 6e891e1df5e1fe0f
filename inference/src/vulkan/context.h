// Everything one Vulkan device needs to run Ember's kernels: instance, device, pipelines, and
// the limits that shape how tensors are placed.
#pragma once

#include <memory>
#include <string>

#include "vulkan/device.h"
#include "vulkan/memory.h"
#include "vulkan/pipeline.h"

namespace ember::vulkan {

struct ContextOptions {
    std::string device;  // "" = auto, an index or a name substring
    bool disk_pipeline_cache = true;
    uint64_t max_range_override = 0;  // tests: pretend maxStorageBufferRange is this small
};

class Context {
public:
    static Result<std::unique_ptr<Context>> create(const ContextOptions& opt);
    // Only selects and describes the adapter (no device is created).
    static Result<Adapter> pick_adapter(const std::string& device);

    Device& device() { return *m_device; }
    const Device& device() const { return *m_device; }
    const Adapter& adapter() const { return m_device->adapter(); }
    Pipelines& pipelines() { return *m_pipelines; }

    // Largest range one descriptor may bind, and the offset alignment of bound ranges.
    VkDeviceSize max_range() const { return m_max_range; }
    VkDeviceSize range_alignment() const { return m_alignment; }
    // Size of one sub-allocation block (<= maxMemoryAllocationSize).
    VkDeviceSize block_limit() const { return m_block_limit; }

    // A command buffer and fence for one-off work (tests, small transfers).
    Result<VkCommandBuffer> begin_oneoff();
    Status end_oneoff_and_wait(VkCommandBuffer cmd);

private:
    Context() = default;
    std::shared_ptr<Instance> m_instance;
    std::unique_ptr<Device> m_device;
    std::unique_ptr<Pipelines> m_pipelines;
    CommandPool m_pool;
    Fence m_fence;
    VkCommandBuffer m_oneoff = VK_NULL_HANDLE;
    VkDeviceSize m_max_range = 0, m_alignment = 256, m_block_limit = 0;
};

// Maximum range for pieces given limits and an optional test override.
VkDeviceSize effective_max_range(const VkPhysicalDeviceLimits& limits, uint64_t override_bytes);
VkDeviceSize effective_alignment(const VkPhysicalDeviceLimits& limits);
VkDeviceSize effective_block_limit(const Adapter& adapter, VkDeviceSize max_range);

}  // namespace ember::vulkan
