// Device memory, buffers, a sub-allocating arena and the staging uploader.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "vulkan/device.h"

namespace ember::vulkan {

// A bindable part of a buffer.
struct BufferRange {
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceSize offset = 0;
    VkDeviceSize size = 0;
    BufferRange sub(VkDeviceSize off, VkDeviceSize n) const { return {buffer, offset + off, n}; }
};

// One VkDeviceMemory allocation, counted in the adapter's own-allocation accounting.
class Memory {
public:
    Memory() = default;
    static Result<Memory> allocate(const Device& device, VkDeviceSize size, uint32_t memory_type);
    ~Memory() { reset(); }
    Memory(Memory&& o) noexcept { *this = std::move(o); }
    Memory& operator=(Memory&& o) noexcept;
    Memory(const Memory&) = delete;
    Memory& operator=(const Memory&) = delete;

    VkDeviceMemory handle() const { return m_memory; }
    VkDeviceSize size() const { return m_size; }
    Result<void*> map();
    void reset();

private:
    const Device* m_device = nullptr;
    VkDeviceMemory m_memory = VK_NULL_HANDLE;
    VkDeviceSize m_size = 0;
    void* m_mapped = nullptr;
};

// Records one global memory barrier: writes of `src_access` in `src_stage` become visible to
// `dst_access` in `dst_stage`.
void memory_barrier(VkCommandBuffer cmd, VkPipelineStageFlags src_stage, VkAccessFlags src_access,
                    VkPipelineStageFlags dst_stage, VkAccessFlags dst_access);

enum class BufferKind {
    DeviceLocal,  // storage, transfer source and destination
    Upload,       // host-visible, coherent: staging and per-step inputs (also indirect grids)
    Readback,     // host-visible, coherent, preferably cached: results (copies, shader stores)
    HostStorage,  // host-visible storage buffer (tests bind it directly; also indirect grids)
};

// A VkBuffer with its own memory; host-visible kinds stay mapped.
class Buffer {
public:
    Buffer() = default;
    static Result<Buffer> create(const Device& device, VkDeviceSize size, BufferKind kind);
    VkBuffer handle() const { return m_buffer.handle(); }
    VkDeviceSize size() const { return m_size; }
    void* mapped() const { return m_mapped; }
    // Mapped memory that the host reads through its caches (worth reading in place).
    bool host_cached() const { return m_host_cached; }
    BufferRange range() const { return {handle(), 0, m_size}; }
    BufferRange range(VkDeviceSize offset, VkDeviceSize size) const {
        return {handle(), offset, size};
    }

private:
    Owned<VkBuffer> m_buffer;
    Memory m_memory;
    VkDeviceSize m_size = 0;
    void* m_mapped = nullptr;
    bool m_host_cached = false;
};

// Places many ranges in a few big device-local buffers (no more than maxMemoryAllocationSize
// each): reserve() while planning, allocate() once, then get().
class Arena {
public:
    Arena(VkDeviceSize block_limit, VkDeviceSize alignment)
        : m_block_limit(block_limit), m_align(alignment) {}
    // A range of `size` bytes (rounded up to 4), which must not exceed the block limit.
    size_t reserve(VkDeviceSize size);
    Status allocate(const Device& device, BufferKind kind);
    BufferRange get(size_t slot) const;
    // The host's view of a slot of a host-visible arena (null for a device-local one).
    uint8_t* mapped(size_t slot) const;
    VkDeviceSize total_bytes() const;  // what allocate() takes
    size_t n_blocks() const { return m_block_sizes.size(); }

private:
    struct Slot {
        size_t block;
        VkDeviceSize offset, size;
    };
    VkDeviceSize m_block_limit, m_align;
    std::vector<Slot> m_slots;
    std::vector<VkDeviceSize> m_block_sizes;
    std::vector<Buffer> m_blocks;
};

// Copies host data into device-local buffers through a few host-visible staging slots, each
// with its own command buffer and fence: while the device copies one slot, the host fills the
// next (a slot is waited for only when it comes round again). Destroy it before the
// destination buffers: after an error or a cancel its copies may still be in flight until then.
class Uploader {
public:
    // n_slots slots of slot_bytes each. cancel (may be null): a wait for the copies ends early,
    // with "vulkan.cancelled".
    static Result<Uploader> create(const Device& device, VkDeviceSize slot_bytes, int n_slots = 3,
                                   const std::atomic<bool>* cancel = nullptr);
    // Host memory for `size` bytes (at most slot_bytes()) that will be copied to dst: fill it
    // before the next stage(), upload() or flush().
    Result<uint8_t*> stage(BufferRange dst, VkDeviceSize size);
    Status upload(BufferRange dst, const void* src, VkDeviceSize size);
    Status flush();  // submits pending copies and waits for all of them
    VkDeviceSize slot_bytes() const { return m_slot_bytes; }

private:
    struct Slot {
        Buffer staging;
        VkCommandBuffer cmd = VK_NULL_HANDLE;
        Fence fence;
        VkDeviceSize used = 0;
        bool recording = false;
    };
    Uploader() = default;
    Status submit_current();  // submits the current slot (no wait) and moves to the next one
    const Device* m_device = nullptr;
    const std::atomic<bool>* m_cancel = nullptr;
    VkDeviceSize m_slot_bytes = 0;
    CommandPool m_pool;
    // (After the pool: a slot's fence drains its copies before the pool frees its buffer.)
    std::vector<Slot> m_slots;
    size_t m_current = 0;
};

inline VkDeviceSize align_up(VkDeviceSize v, VkDeviceSize a) {
    return (v + a - 1) / a * a;
}

}  // namespace ember::vulkan
