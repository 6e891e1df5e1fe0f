// The Vulkan instance and the adapters (physical devices) it sees.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "vulkan/vk.h"

namespace ember::vulkan {

class Instance {
public:
    // The process's instance, created on first use and never destroyed: drivers (NVIDIA's)
    // leak static TLS on every load/unload of their ICD, so instances must not come and go.
    // Loads Vulkan, creates an instance for API 1.2 and, when VK_EXT_debug_utils exists, a
    // messenger that logs validation messages and counts errors.
    static Result<std::shared_ptr<Instance>> get();
    ~Instance();
    Instance(const Instance&) = delete;
    Instance& operator=(const Instance&) = delete;
    VkInstance handle() const { return m_instance; }

private:
    Instance() = default;
    static Result<std::shared_ptr<Instance>> create();
    VkInstance m_instance = VK_NULL_HANDLE;
    VkDebugUtilsMessengerEXT m_messenger = VK_NULL_HANDLE;
};

// A physical device with what Ember needs to know about it.
struct Adapter {
    std::shared_ptr<Instance> instance;  // keeps `handle` valid
    VkPhysicalDevice handle = VK_NULL_HANDLE;
    DeviceInfo info;
    VkPhysicalDeviceProperties props{};
    VkPhysicalDeviceMemoryProperties mem{};
    std::string uuid;                   // deviceUUID as hex, keys the own-allocation accounting
    uint32_t queue_family = 0;          // a queue family with compute
    uint32_t timestamp_valid_bits = 0;  // of that family's timestamps (0: none)
    uint32_t device_local_heap = 0;     // the largest DEVICE_LOCAL heap
    bool has_memory_budget = false;
    bool has_creation_feedback = false;      // VK_EXT_pipeline_creation_feedback
    bool has_executable_properties = false;  // VK_KHR_pipeline_executable_properties
    bool usable = false;  // has everything Ember needs (even if not auto-suitable)
    uint32_t subgroup_size = 0;
    uint64_t max_allocation = 0;  // maxMemoryAllocationSize
    // VK_NV_cooperative_matrix with 16x8x16 F16 products into F32 for subgroups of 32, and
    // F16 arithmetic: matmul_coopmat.comp can run (EMBER_VULKAN_COOPMAT=0 turns it off:
    // common/overrides.h).
    bool coopmat_nv = false;
    bool float16 = false;  // shaderFloat16: F16 arithmetic in shaders
    // VK_KHR_shader_integer_dot_product's shaderIntegerDotProduct: int8 dot products, the prompt
    // matmul of adapters without cooperative matrices (matmul_idot.comp, Plan::matmul_idot).
    bool integer_dot = false;
    // VK_EXT_shader_atomic_float's shaderBufferFloat32AtomicAdd: the decode attention can add
    // its output projection into x itself (attention.comp, WO).
    bool atomic_float_add = false;
    // Subgroup shuffles in compute shaders (the fused output projection sums a row's lanes).
    bool subgroup_shuffle = false;
    uint32_t sm_count = 0;  // multiprocessors (VK_NV_shader_sm_builtins), 0 if unknown
    bool vulkan_memory_model = false;
};

Result<std::vector<Adapter>> enumerate_adapters(const std::shared_ptr<Instance>& instance);

// Picks an adapter: "" = the best suitable one (discrete > integrated > virtual, then memory);
// an index ("0") or a case-insensitive name substring chooses explicitly, CPU adapters included.
Result<size_t> choose_adapter(const std::vector<Adapter>& adapters, const std::string& choice);

// Bytes left on the adapter's device-local heap for this process, and how that was learned.
struct Budget {
    uint64_t budget = 0;     // what the process may use in total
    uint64_t available = 0;  // budget minus current use
    std::string source;
};
Budget query_budget(const Adapter& adapter);

// Ember's own device-memory allocations per adapter (for heaps without VK_EXT_memory_budget).
void account_allocation(const std::string& uuid, int64_t delta);
uint64_t own_allocations(const std::string& uuid);

}  // namespace ember::vulkan
