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

    // A memory type allowed by type_bits with all `required` flags, preferring `preferred`
    // and then types without any `avoided` flag (see pick_memory_type).
    Result<uint32_t> memory_type(uint32_t type_bits, VkMemoryPropertyFlags required,
                                 VkMemoryPropertyFlags preferred,
                                 VkMemoryPropertyFlags avoided = 0) const;
    bool is_host_coherent(uint32_t memory_type) const;
    bool is_host_cached(uint32_t memory_type) const;
    // Submissions whose fence nobody has seen signal yet. Memory freed while this is not zero
    // may still be in use by the device (counted by memory_freed_in_flight(), for tests).
    int in_flight() const { return m_in_flight.load(std::memory_order_relaxed); }
    void add_in_flight(int delta) const { m_in_flight.fetch_add(delta, std::memory_order_relaxed); }

private:
    Device() = default;
    std::shared_ptr<Instance> m_instance;  // outlives the device
    Adapter m_adapter;
    VkDevice m_device = VK_NULL_HANDLE;
    VkQueue m_queue = VK_NULL_HANDLE;
    mutable std::atomic<int> m_in_flight{0};
};

// The memory type for memory_type(): the first allowed type with all `required` flags, ranked
// by having the `preferred` flags, then by having none of the `avoided` ones; -1 if none has
// the required flags. Host buffers avoid DEVICE_LOCAL: on a GPU with resizable BAR a host-visible
// type is often also device-local, and GPU memory taken there is not in the model's estimate.
int pick_memory_type(const VkPhysicalDeviceMemoryProperties& mem, uint32_t type_bits,
                     VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred,
                     VkMemoryPropertyFlags avoided);

// A fence that knows whether work submitted with it is still in flight. No wall-clock limit
// decides success: a slow or busy adapter (lavapipe on a loaded machine) is waited for, with a
// log line now and then; only a lost device, another Vulkan error or a cancel ends a wait
// early, and then the work may still be running: drain() (also run by the destructor) waits
// for it before anything it uses may be freed or recorded again.
class Fence : public Owned<VkFence> {
public:
    Fence() = default;
    Fence(Fence&& o) noexcept;
    Fence& operator=(Fence&& o) noexcept;
    ~Fence() { drain(); }
    static Result<Fence> create(const Device& device);

    // Called once work was submitted with this fence.
    void submitted();
    bool pending() const { return m_pending; }
    // Waits until the device signals the fence, checking `cancel` (when given) between slices
    // of the wait; resets the fence once signalled. `what` names the work in progress lines.
    Status wait_and_reset(const std::atomic<bool>* cancel = nullptr, const char* what = "the GPU");
    // Waits for pending work whatever it takes (no cancel), or until the device is lost.
    void drain();

private:
    Fence(const Device& device, VkFence f) : Owned(device.handle(), f), m_owner(&device) {}
    void done();
    const Device* m_owner = nullptr;
    bool m_pending = false;
};

// How often memory was freed while work was still in flight on its device (a bug; tests check
// that error paths never do it).
uint64_t memory_freed_in_flight();
void count_memory_freed_in_flight();

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
    uint64_t n = 0, n_between = 0;  // submissions, and intervals summed in between_us
    double last_done = -1;          // steady-clock us when the last wait ended (-1: none yet)
};
// A cancel (`cancel` set) returns "vulkan.cancelled" with the work possibly in flight (see
// Fence).
Status submit_and_wait(const Device& device, VkCommandBuffer cmd, Fence& fence,
                       SubmitTimes* times = nullptr, const std::atomic<bool>* cancel = nullptr);

}  // namespace ember::vulkan
