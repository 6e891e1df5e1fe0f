#include "vulkan/memory.h"

#include <algorithm>
#include <cstring>

#include "vulkan/fault.h"

namespace ember::vulkan {

Result<Memory> Memory::allocate(const Device& device, VkDeviceSize size, uint32_t memory_type) {
    VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    ai.allocationSize = size;
    ai.memoryTypeIndex = memory_type;
    Memory m;
    EMBER_VK_TRY(EMBER_FAULT_OR(Alloc, device.handle(),
                                vkAllocateMemory(device.handle(), &ai, nullptr, &m.m_memory)),
                 "vkAllocateMemory of " + std::to_string(size) + " bytes");
    m.m_device = &device;
    m.m_size = size;
    account_allocation(device.adapter().uuid, int64_t(size));
    return m;
}

Memory& Memory::operator=(Memory&& o) noexcept {
    if (this != &o) {
        reset();
        m_device = o.m_device;
        m_memory = take_handle(o.m_memory);
        m_size = std::exchange(o.m_size, 0);
        m_mapped = std::exchange(o.m_mapped, nullptr);
    }
    return *this;
}

void Memory::reset() {
    if (!m_memory) return;
    // Error paths and teardown wait for their fences first (Fence::drain).
    if (m_device->in_flight() > 0) count_memory_freed_in_flight();
    if (m_mapped) vkUnmapMemory(m_device->handle(), m_memory);
    vkFreeMemory(m_device->handle(), take_handle(m_memory), nullptr);
    account_allocation(m_device->adapter().uuid, -int64_t(m_size));
    m_mapped = nullptr;
    m_size = 0;
}

Result<void*> Memory::map() {
    if (!m_mapped)
        EMBER_VK_TRY(vkMapMemory(m_device->handle(), m_memory, 0, VK_WHOLE_SIZE, 0, &m_mapped),
                     "vkMapMemory");
    return m_mapped;
}

Result<Buffer> Buffer::create(const Device& device, VkDeviceSize size, BufferKind kind) {
    VkBufferCreateInfo ci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    ci.size = std::max<VkDeviceSize>(size, 4);
    ci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    VkMemoryPropertyFlags required = 0, preferred = 0;
    // Host-visible kinds stay out of device-local memory where the device lets them (see
    // pick_memory_type): the budget counts them as host memory.
    const VkMemoryPropertyFlags avoided =
        kind == BufferKind::DeviceLocal ? 0 : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    switch (kind) {
        case BufferKind::DeviceLocal:
            ci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT |
                       VK_BUFFER_USAGE_TRANSFER_SRC_BIT;
            required = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
            break;
        case BufferKind::Upload:
            ci.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                       VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT;
            required = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
            break;
        case BufferKind::Readback:
            // (Storage too: the decode step's output projection writes its logits here.)
            ci.usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
            required = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
            preferred = VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
            break;
        case BufferKind::HostStorage:
            ci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT |
                       VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT;
            required = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
            break;
    }
    VkBuffer vb = VK_NULL_HANDLE;
    EMBER_VK_TRY(vkCreateBuffer(device.handle(), &ci, nullptr, &vb),
                 "vkCreateBuffer of " + std::to_string(size) + " bytes");
    Buffer b;
    b.m_buffer = Owned<VkBuffer>(device.handle(), vb);
    b.m_size = size;
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(device.handle(), vb, &req);
    EMBER_ASSIGN_OR_RETURN(uint32_t type,
                           device.memory_type(req.memoryTypeBits, required, preferred, avoided));
    EMBER_ASSIGN_OR_RETURN(b.m_memory, Memory::allocate(device, req.size, type));
    EMBER_VK_TRY(vkBindBufferMemory(device.handle(), vb, b.m_memory.handle(), 0),
                 "vkBindBufferMemory");
    if (kind != BufferKind::DeviceLocal) {
        EMBER_ASSIGN_OR_RETURN(b.m_mapped, b.m_memory.map());
        b.m_host_cached = device.is_host_cached(type);
    }
    return b;
}

size_t Arena::reserve(VkDeviceSize size) {
    size = align_up(std::max<VkDeviceSize>(size, 4), 4);
    assert(size <= m_block_limit);
    if (m_block_sizes.empty() || align_up(m_block_sizes.back(), m_align) + size > m_block_limit)
        m_block_sizes.push_back(0);
    VkDeviceSize off = align_up(m_block_sizes.back(), m_align);
    m_slots.push_back({m_block_sizes.size() - 1, off, size});
    m_block_sizes.back() = off + size;
    return m_slots.size() - 1;
}

Status Arena::allocate(const Device& device, BufferKind kind) {
    for (VkDeviceSize s : m_block_sizes) {
        EMBER_ASSIGN_OR_RETURN(Buffer b, Buffer::create(device, s, kind));
        m_blocks.push_back(std::move(b));
    }
    return {};
}

uint8_t* Arena::mapped(size_t slot) const {
    const Slot& s = m_slots[slot];
    auto* base = static_cast<uint8_t*>(m_blocks[s.block].mapped());
    return base ? base + s.offset : nullptr;
}

BufferRange Arena::get(size_t slot) const {
    const Slot& s = m_slots[slot];
    return {m_blocks[s.block].handle(), s.offset, s.size};
}

VkDeviceSize Arena::total_bytes() const {
    VkDeviceSize t = 0;
    for (VkDeviceSize s : m_block_sizes) t += s;
    return t;
}

Result<Uploader> Uploader::create(const Device& device, VkDeviceSize slot_bytes, int n_slots,
                                  const std::atomic<bool>* cancel) {
    Uploader u;
    u.m_device = &device;
    u.m_cancel = cancel;
    u.m_slot_bytes = slot_bytes;
    EMBER_ASSIGN_OR_RETURN(u.m_pool, CommandPool::create(device));
    u.m_slots.resize(size_t(std::max(1, n_slots)));
    for (Slot& s : u.m_slots) {
        EMBER_ASSIGN_OR_RETURN(s.staging, Buffer::create(device, slot_bytes, BufferKind::Upload));
        EMBER_ASSIGN_OR_RETURN(s.cmd, u.m_pool.allocate());
        EMBER_ASSIGN_OR_RETURN(s.fence, Fence::create(device));
    }
    return u;
}

Result<uint8_t*> Uploader::stage(BufferRange dst, VkDeviceSize size) {
    if (size > m_slot_bytes)
        return make_error("vulkan.internal", "staging " + std::to_string(size) +
                                                 " bytes at once, more than a slot's " +
                                                 std::to_string(m_slot_bytes));
    if (m_slots[m_current].recording && m_slots[m_current].used + size > m_slot_bytes)
        EMBER_TRY(submit_current());
    Slot& s = m_slots[m_current];
    if (!s.recording) {
        // The slot's last copies must be done before its memory is written again.
        EMBER_TRY(s.fence.wait_and_reset(m_cancel, "the weight upload"));
        EMBER_VK_TRY(vkResetCommandBuffer(s.cmd, 0), "vkResetCommandBuffer (upload)");
        VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
        bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
        EMBER_VK_TRY(vkBeginCommandBuffer(s.cmd, &bi), "vkBeginCommandBuffer (upload)");
        s.recording = true;
        s.used = 0;
    }
    uint8_t* host = static_cast<uint8_t*>(s.staging.mapped()) + s.used;
    if (size > 0) {
        VkBufferCopy region{s.used, dst.offset, size};
        vkCmdCopyBuffer(s.cmd, s.staging.handle(), dst.buffer, 1, &region);
    }
    s.used = std::min(align_up(s.used + size, 16), m_slot_bytes);
    return host;
}

Status Uploader::upload(BufferRange dst, const void* src, VkDeviceSize size) {
    const auto* p = static_cast<const uint8_t*>(src);
    for (VkDeviceSize done = 0; done < size;) {
        const VkDeviceSize n = std::min(size - done, m_slot_bytes);
        EMBER_ASSIGN_OR_RETURN(uint8_t * host, stage(dst.sub(done, n), n));
        std::memcpy(host, p + done, n);
        done += n;
    }
    return {};
}

void memory_barrier(VkCommandBuffer cmd, VkPipelineStageFlags src_stage, VkAccessFlags src_access,
                    VkPipelineStageFlags dst_stage, VkAccessFlags dst_access) {
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = src_access;
    mb.dstAccessMask = dst_access;
    vkCmdPipelineBarrier(cmd, src_stage, dst_stage, 0, 1, &mb, 0, nullptr, 0, nullptr);
}

Status Uploader::submit_current() {
    Slot& s = m_slots[m_current];
    if (s.recording) {
        // Make the copies visible to the compute shaders that read the weights later.
        memory_barrier(s.cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT);
        EMBER_VK_TRY(vkEndCommandBuffer(s.cmd), "vkEndCommandBuffer (upload)");
        s.recording = false;
        VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
        si.commandBufferCount = 1;
        si.pCommandBuffers = &s.cmd;
        EMBER_VK_TRY(EMBER_FAULT_OR(DeviceLost, m_device->handle(),
                                    vkQueueSubmit(m_device->queue(), 1, &si, s.fence.handle())),
                     "vkQueueSubmit (upload)");
        s.fence.submitted();
    }
    m_current = (m_current + 1) % m_slots.size();
    return {};
}

Status Uploader::flush() {
    EMBER_TRY(submit_current());
    for (Slot& s : m_slots) EMBER_TRY(s.fence.wait_and_reset(m_cancel, "the weight upload"));
    return {};
}

}  // namespace ember::vulkan
