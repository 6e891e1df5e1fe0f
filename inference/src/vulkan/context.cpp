#include "vulkan/context.h"

#include <algorithm>

namespace ember::vulkan {

VkDeviceSize effective_max_range(const VkPhysicalDeviceLimits& limits, uint64_t override_bytes) {
    // Ranges stay a multiple of 256 so that piece sizes keep the bound ranges aligned.
    VkDeviceSize r = limits.maxStorageBufferRange;
    if (override_bytes) r = std::min<VkDeviceSize>(r, override_bytes);
    return r / 256 * 256;
}

VkDeviceSize effective_alignment(const VkPhysicalDeviceLimits& limits) {
    return std::max<VkDeviceSize>(256, limits.minStorageBufferOffsetAlignment);
}

VkDeviceSize effective_block_limit(const Adapter& adapter, VkDeviceSize max_range) {
    // At most maxMemoryAllocationSize; at least one full range must fit in a block.
    VkDeviceSize limit = std::min<VkDeviceSize>(adapter.max_allocation, VkDeviceSize(2) << 30);
    return std::max(limit, max_range);
}

Result<Adapter> Context::pick_adapter(const std::string& device) {
    EMBER_ASSIGN_OR_RETURN(auto instance, Instance::get());
    EMBER_ASSIGN_OR_RETURN(auto adapters, enumerate_adapters(instance));
    EMBER_ASSIGN_OR_RETURN(size_t i, choose_adapter(adapters, device));
    return adapters[i];
}

Result<std::unique_ptr<Context>> Context::create(const ContextOptions& opt) {
    std::unique_ptr<Context> c(new Context());
    EMBER_ASSIGN_OR_RETURN(c->m_instance, Instance::get());
    EMBER_ASSIGN_OR_RETURN(auto adapters, enumerate_adapters(c->m_instance));
    EMBER_ASSIGN_OR_RETURN(size_t i, choose_adapter(adapters, opt.device));
    EMBER_ASSIGN_OR_RETURN(c->m_device, Device::create(c->m_instance, adapters[i]));
    EMBER_ASSIGN_OR_RETURN(c->m_pipelines,
                           Pipelines::create(*c->m_device, opt.disk_pipeline_cache));
    EMBER_ASSIGN_OR_RETURN(c->m_pool, CommandPool::create(*c->m_device));
    EMBER_ASSIGN_OR_RETURN(c->m_fence, Fence::create(*c->m_device));
    EMBER_ASSIGN_OR_RETURN(c->m_oneoff, c->m_pool.allocate());
    const auto& lim = c->m_device->limits();
    c->m_max_range = effective_max_range(lim, opt.max_range_override);
    c->m_alignment = effective_alignment(lim);
    c->m_block_limit = effective_block_limit(c->adapter(), c->m_max_range);
    return c;
}

Result<VkCommandBuffer> Context::begin_oneoff() {
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    EMBER_VK_TRY(vkResetCommandBuffer(m_oneoff, 0), "vkResetCommandBuffer");
    EMBER_VK_TRY(vkBeginCommandBuffer(m_oneoff, &bi), "vkBeginCommandBuffer");
    return m_oneoff;
}

Status Context::end_oneoff_and_wait(VkCommandBuffer cmd) {
    EMBER_VK_TRY(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
    return submit_and_wait(*m_device, cmd, m_fence);
}

}  // namespace ember::vulkan
