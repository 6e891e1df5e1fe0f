#include "vulkan/device.h"

#include <chrono>
#include <thread>
#include <utility>
#include <vector>

#include "common/log.h"
#include "vulkan/fault.h"

namespace ember::vulkan {

Result<std::unique_ptr<Device>> Device::create(std::shared_ptr<Instance> instance,
                                               const Adapter& adapter) {
    if (!adapter.usable)
        return make_error("vulkan.unsupported_device", "Vulkan device '" + adapter.info.name +
                                                           "' " + adapter.info.unsuitable_reason);
    std::unique_ptr<Device> dev(new Device());
    dev->m_instance = std::move(instance);
    dev->m_adapter = adapter;

    float priority = 1.0f;
    VkDeviceQueueCreateInfo qi{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    qi.queueFamilyIndex = adapter.queue_family;
    qi.queueCount = 1;
    qi.pQueuePriorities = &priority;

    std::vector<const char*> exts = {VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME};
    if (adapter.has_memory_budget) exts.push_back(VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
    if (adapter.has_creation_feedback)
        exts.push_back(VK_EXT_PIPELINE_CREATION_FEEDBACK_EXTENSION_NAME);

    VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    f12.storageBuffer8BitAccess = VK_TRUE;
    f12.shaderFloat16 = adapter.float16 ? VK_TRUE : VK_FALSE;
    VkPhysicalDeviceCooperativeMatrixFeaturesNV cm{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
    if (adapter.coopmat_nv) {
        exts.push_back(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
        cm.cooperativeMatrix = VK_TRUE;
        f12.shaderFloat16 = VK_TRUE;
        f12.vulkanMemoryModel = adapter.vulkan_memory_model ? VK_TRUE : VK_FALSE;
        f12.pNext = &cm;
    }
    VkPhysicalDeviceShaderAtomicFloatFeaturesEXT af{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT};
    VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
    f11.storageBuffer16BitAccess = VK_TRUE;
    f11.pNext = &f12;
    if (adapter.atomic_float_add) {
        exts.push_back(VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME);
        af.shaderBufferFloat32AtomicAdd = VK_TRUE;
        af.pNext = f11.pNext;
        f11.pNext = &af;
    }
    VkPhysicalDeviceShaderIntegerDotProductFeaturesKHR idot{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES_KHR};
    if (adapter.integer_dot) {
        exts.push_back(VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
        idot.shaderIntegerDotProduct = VK_TRUE;
        idot.pNext = f11.pNext;
        f11.pNext = &idot;
    }
    VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    f2.pNext = &f11;
    VkDeviceCreateInfo ci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    ci.pNext = &f2;
    ci.queueCreateInfoCount = 1;
    ci.pQueueCreateInfos = &qi;
    ci.enabledExtensionCount = uint32_t(exts.size());
    ci.ppEnabledExtensionNames = exts.data();
    EMBER_VK_TRY(vkCreateDevice(adapter.handle, &ci, nullptr, &dev->m_device),
                 "vkCreateDevice for '" + adapter.info.name + "'");
    vkGetDeviceQueue(dev->m_device, adapter.queue_family, 0, &dev->m_queue);
    return dev;
}

Device::~Device() {
    if (m_device) {
        fault::device_destroyed(m_device);
        vkDeviceWaitIdle(m_device);
        vkDestroyDevice(m_device, nullptr);
    }
}

int pick_memory_type(const VkPhysicalDeviceMemoryProperties& mem, uint32_t bits,
                     VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred,
                     VkMemoryPropertyFlags avoided) {
    int best = -1, best_rank = -1;
    for (uint32_t i = 0; i < mem.memoryTypeCount; ++i) {
        if (!(bits & (1u << i))) continue;
        const VkMemoryPropertyFlags f = mem.memoryTypes[i].propertyFlags;
        if ((f & required) != required) continue;
        const int rank = ((f & preferred) == preferred ? 2 : 0) + ((f & avoided) == 0 ? 1 : 0);
        if (rank > best_rank) best = int(i), best_rank = rank;
    }
    return best;
}

Result<uint32_t> Device::memory_type(uint32_t bits, VkMemoryPropertyFlags required,
                                     VkMemoryPropertyFlags preferred,
                                     VkMemoryPropertyFlags avoided) const {
    const int t = pick_memory_type(m_adapter.mem, bits, required, preferred, avoided);
    if (t >= 0) return uint32_t(t);
    return make_error("vulkan.no_memory_type", "Vulkan device '" + m_adapter.info.name +
                                                   "' has no memory type with flags 0x" +
                                                   std::to_string(required));
}

bool Device::is_host_coherent(uint32_t t) const {
    return m_adapter.mem.memoryTypes[t].propertyFlags & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
}

bool Device::is_host_cached(uint32_t t) const {
    return m_adapter.mem.memoryTypes[t].propertyFlags & VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
}

namespace {

std::atomic<uint64_t> g_freed_in_flight{0};

// A wait on the device wakes this often to check for a cancel and to say how long it has
// waited; it returns as soon as the fence signals.
constexpr uint64_t kWaitSliceNs = 100ull * 1000 * 1000;
constexpr double kWaitSliceS = 0.1;
// vk_slow: a slowed wait first reports this many slices as timed out (12 s: past the first
// progress line).
constexpr uint64_t kSlowSlices = 120;
// vk_hang: how long a hung wait's slice really takes (the test should not sleep 100 ms each).
constexpr auto kHangSleep = std::chrono::milliseconds(10);

// Progress lines of a long wait: after 10 s, then at each doubling.
struct WaitLog {
    const char* what;
    double next_s = 10;
    void tick(uint64_t slices, const char* suffix) {
        const double waited = double(slices) * kWaitSliceS;
        if (waited < next_s) return;
        EMBER_LOG_WARN("vulkan: still waiting for %s after %.0f s (a slow or busy device)%s", what,
                       waited, suffix);
        next_s *= 2;
    }
};

}  // namespace

uint64_t memory_freed_in_flight() {
    return g_freed_in_flight.load();
}

void count_memory_freed_in_flight() {
    if (g_freed_in_flight.fetch_add(1) == 0)
        EMBER_LOG_ERROR("vulkan: device memory freed while submitted work may still use it");
}

Result<Fence> Fence::create(const Device& device) {
    VkFenceCreateInfo ci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkFence f = VK_NULL_HANDLE;
    EMBER_VK_TRY(vkCreateFence(device.handle(), &ci, nullptr, &f), "vkCreateFence");
    return Fence(device, f);
}

Fence::Fence(Fence&& o) noexcept
    : Owned(std::move(o)),
      m_owner(std::exchange(o.m_owner, nullptr)),
      m_pending(std::exchange(o.m_pending, false)) {}

Fence& Fence::operator=(Fence&& o) noexcept {
    if (this != &o) {
        drain();
        Owned::operator=(std::move(o));
        m_owner = std::exchange(o.m_owner, nullptr);
        m_pending = std::exchange(o.m_pending, false);
    }
    return *this;
}

void Fence::submitted() {
    m_pending = true;
    m_owner->add_in_flight(1);
}

void Fence::done() {
    if (!m_pending) return;
    m_pending = false;
    m_owner->add_in_flight(-1);
}

Status Fence::wait_and_reset(const std::atomic<bool>* cancel, const char* what) {
    if (!m_pending) return {};
    VkFence f = handle();
    const fault::WaitFault injected = fault::wait_begins(device());
    WaitLog log{what};
    for (uint64_t slices = 0;; ++slices) {
        VkResult r;
        if (injected == fault::WaitFault::Lost) {
            r = VK_ERROR_DEVICE_LOST;
        } else if (injected == fault::WaitFault::Hang ||
                   (injected == fault::WaitFault::Slow && slices < kSlowSlices)) {
            if (injected == fault::WaitFault::Hang) std::this_thread::sleep_for(kHangSleep);
            r = VK_TIMEOUT;
        } else {
            r = vkWaitForFences(device(), 1, &f, VK_TRUE, kWaitSliceNs);
        }
        if (r == VK_SUCCESS) break;
        // The work may still run (a device reported lost has stopped it or will): drain().
        if (r != VK_TIMEOUT) return vk_error(r, "vkWaitForFences");
        log.tick(slices + 1, cancel ? "; cancel stops the wait" : "");
        if (cancel && cancel->load())
            return make_error("vulkan.cancelled",
                              std::string("cancelled while waiting for ") + what);
    }
    done();
    EMBER_VK_TRY(vkResetFences(device(), 1, &f), "vkResetFences");
    return {};
}

void Fence::drain() {
    if (!m_pending) return;
    VkFence f = handle();
    WaitLog log{"submitted work to finish before its memory is freed"};
    VkResult r;
    for (uint64_t slices = 1;
         (r = vkWaitForFences(device(), 1, &f, VK_TRUE, kWaitSliceNs)) == VK_TIMEOUT; ++slices)
        log.tick(slices, "");
    // Signalled, or the device is lost (its work will not run on): either way nothing of it
    // still reads or writes our memory.
    if (r == VK_SUCCESS) vkResetFences(device(), 1, &f);
    done();
}

Result<CommandPool> CommandPool::create(const Device& device) {
    VkCommandPoolCreateInfo ci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    ci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    ci.queueFamilyIndex = device.adapter().queue_family;
    VkCommandPool p = VK_NULL_HANDLE;
    EMBER_VK_TRY(vkCreateCommandPool(device.handle(), &ci, nullptr, &p), "vkCreateCommandPool");
    return CommandPool(device.handle(), p);
}

Result<VkCommandBuffer> CommandPool::allocate() {
    VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    ai.commandPool = handle();
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    VkCommandBuffer cb = VK_NULL_HANDLE;
    EMBER_VK_TRY(vkAllocateCommandBuffers(device(), &ai, &cb), "vkAllocateCommandBuffers");
    return cb;
}

Status submit_and_wait(const Device& device, VkCommandBuffer cmd, Fence& fence, SubmitTimes* times,
                       const std::atomic<bool>* cancel) {
    // Work still in flight from a wait that ended early uses this fence: let it finish.
    fence.drain();
    auto now_us = [] {
        return std::chrono::duration<double, std::micro>(
                   std::chrono::steady_clock::now().time_since_epoch())
            .count();
    };
    const double t0 = times ? now_us() : 0;
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cmd;
    EMBER_VK_TRY(EMBER_FAULT_OR(DeviceLost, device.handle(),
                                vkQueueSubmit(device.queue(), 1, &si, fence.handle())),
                 "vkQueueSubmit");
    fence.submitted();
    // A decode step takes about a millisecond, and a blocking wait can oversleep by a similar
    // amount: poll first, and block only for long work.
    const double t1 = times ? now_us() : 0;
    VkFence f = fence.handle();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
    VkResult r;
    while ((r = vkGetFenceStatus(device.handle(), f)) == VK_NOT_READY &&
           std::chrono::steady_clock::now() < deadline) {
    }
    if (r != VK_SUCCESS && r != VK_NOT_READY) return vk_error(r, "vkGetFenceStatus");
    Status st = fence.wait_and_reset(cancel);
    if (times) {
        const double t2 = now_us();
        times->submit_us += t1 - t0;
        times->wait_us += t2 - t1;
        if (times->last_done >= 0) {
            times->between_us += t0 - times->last_done;
            ++times->n_between;
        }
        times->last_done = t2;
        ++times->n;
    }
    return st;
}

}  // namespace ember::vulkan
