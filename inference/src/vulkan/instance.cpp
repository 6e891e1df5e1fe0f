#include "vulkan/instance.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "common/log.h"
#include "common/overrides.h"

namespace ember::vulkan {
namespace {

std::atomic<uint64_t> g_validation_errors{0};

VKAPI_ATTR VkBool32 VKAPI_CALL debug_callback(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                              VkDebugUtilsMessageTypeFlagsEXT,
                                              const VkDebugUtilsMessengerCallbackDataEXT* data,
                                              void*) {
    const char* msg = data && data->pMessage ? data->pMessage : "(no message)";
    if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
        g_validation_errors.fetch_add(1);
        EMBER_LOG_ERROR("vulkan: %s", msg);
    } else if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) {
        EMBER_LOG_WARN("vulkan: %s", msg);
    }
    return VK_FALSE;
}

bool has_extension(const std::vector<VkExtensionProperties>& exts, const char* name) {
    return std::any_of(exts.begin(), exts.end(), [&](const VkExtensionProperties& e) {
        return std::strcmp(e.extensionName, name) == 0;
    });
}

std::string lower(std::string s) {
    for (auto& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

std::mutex g_alloc_mutex;
std::map<std::string, int64_t> g_allocations;

const char* vendor_name(uint32_t id) {
    switch (id) {
        case 0x10DE:
            return "NVIDIA";
        case 0x1002:
            return "AMD";
        case 0x1022:
            return "AMD";
        case 0x8086:
            return "Intel";
        case 0x13B5:
            return "ARM";
        case 0x5143:
            return "Qualcomm";
        case 0x106B:
            return "Apple";
        case 0x1010:
            return "ImgTec";
        case 0x10005:
            return "Mesa";
        default:
            return "unknown";
    }
}

const char* type_name(VkPhysicalDeviceType t) {
    switch (t) {
        case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
            return "discrete";
        case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
            return "integrated";
        case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
            return "virtual";
        case VK_PHYSICAL_DEVICE_TYPE_CPU:
            return "cpu";
        default:
            return "other";
    }
}

std::string version_string(uint32_t v) {
    return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) +
           "." + std::to_string(VK_API_VERSION_PATCH(v));
}

// Vendors pack driverVersion differently; NVIDIA uses 10.8.8.6 bits, Intel's Windows driver 18.14.
std::string driver_version_string(uint32_t vendor, VkDriverId driver, uint32_t v,
                                  const char* info) {
    std::string s;
    if (vendor == 0x10DE && driver == VK_DRIVER_ID_NVIDIA_PROPRIETARY) {
        char buf[48];
        std::snprintf(buf, sizeof buf, "%u.%u.%02u", (v >> 22) & 0x3ff, (v >> 14) & 0xff,
                      (v >> 6) & 0xff);
        s = buf;
        if (v & 0x3f) s += "." + std::to_string(v & 0x3f);
    } else if (vendor == 0x8086 && driver == VK_DRIVER_ID_INTEL_PROPRIETARY_WINDOWS) {
        s = std::to_string(v >> 14) + "." + std::to_string(v & 0x3fff);
    } else {
        s = version_string(v);
    }
    if (info && *info && s != info) s += std::string(" (") + info + ")";
    return s;
}

int type_rank(VkPhysicalDeviceType t) {
    switch (t) {
        case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
            return 3;
        case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
            return 2;
        case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
            return 1;
        default:
            return 0;
    }
}

std::string hex(const uint8_t* p, size_t n) {
    static const char* digits = "0123456789abcdef";
    std::string s;
    for (size_t i = 0; i < n; ++i) {
        s += digits[p[i] >> 4];
        s += digits[p[i] & 15];
    }
    return s;
}

// What Ember's shaders need; without these the adapter cannot run them at all (a.usable, and
// why it is not suitable where it is not).
void check_requirements(VkPhysicalDevice pd, const std::vector<VkExtensionProperties>& exts,
                        const VkPhysicalDeviceSubgroupProperties& subgroup,
                        const VkPhysicalDeviceVulkan11Features& f11,
                        const VkPhysicalDeviceVulkan12Features& f12, Adapter& a) {
    DeviceInfo& d = a.info;
    std::string missing;
    uint32_t n_qf = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &n_qf, nullptr);
    std::vector<VkQueueFamilyProperties> qfs(n_qf);
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &n_qf, qfs.data());
    bool have_queue = false;
    for (uint32_t i = 0; i < n_qf && !have_queue; ++i) {
        if (qfs[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
            a.queue_family = i;
            a.timestamp_valid_bits = qfs[i].timestampValidBits;
            have_queue = true;
        }
    }
    auto need = [&](bool ok, const char* what) {
        if (!ok) missing += (missing.empty() ? "" : ", ") + std::string(what);
    };
    need(a.props.apiVersion >= VK_API_VERSION_1_2, "Vulkan 1.2");
    need(have_queue, "a compute queue");
    need(has_extension(exts, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME), "VK_KHR_push_descriptor");
    need(a.props.limits.maxComputeWorkGroupInvocations >= 256, "256 invocations per workgroup");
    need(a.props.limits.maxPushConstantsSize >= 64, "64 bytes of push constants");
    if (a.props.apiVersion >= VK_API_VERSION_1_2) {
        need(f11.storageBuffer16BitAccess, "16-bit storage buffers");
        need(f12.storageBuffer8BitAccess, "8-bit storage buffers");
    }
    const VkSubgroupFeatureFlags sg_need =
        VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_ARITHMETIC_BIT;
    need((subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
             (subgroup.supportedOperations & sg_need) == sg_need,
         "subgroup arithmetic in compute shaders");
    need(subgroup.subgroupSize >= 4 && subgroup.subgroupSize <= 128, "a subgroup size of 4 to 128");

    a.usable = missing.empty();
    if (!a.usable) {
        d.unsuitable_code = "missing_feature";
        d.unsuitable_reason = "lacks " + missing;
    } else if (a.props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU) {
        d.unsuitable_code = "cpu_adapter";
        d.unsuitable_reason =
            "a software (CPU) Vulkan driver; Ember's CPU backend is faster (choose it by name to "
            "use it anyway)";
    } else if (type_rank(a.props.deviceType) == 0) {
        d.unsuitable_code = "unknown_type";
        d.unsuitable_reason = "an adapter of unknown type (choose it by name to use it anyway)";
    }
    d.suitable = d.unsuitable_code.empty();
}

// Whether the adapter offers the one cooperative-matrix shape the tensor-core kernels use:
// 16x8x16, F16 inputs, F32 accumulators, subgroup scope.
bool has_coopmat_shape(VkPhysicalDevice pd) {
    uint32_t n_cm = 0;
    vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(pd, &n_cm, nullptr);
    std::vector<VkCooperativeMatrixPropertiesNV> cms(
        n_cm, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV});
    vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(pd, &n_cm, cms.data());
    for (const auto& p : cms)
        if (p.MSize == 16 && p.NSize == 8 && p.KSize == 16 &&
            p.AType == VK_COMPONENT_TYPE_FLOAT16_NV && p.BType == VK_COMPONENT_TYPE_FLOAT16_NV &&
            p.CType == VK_COMPONENT_TYPE_FLOAT32_NV && p.DType == VK_COMPONENT_TYPE_FLOAT32_NV &&
            p.scope == VK_SCOPE_SUBGROUP_NV)
            return true;
    return false;
}

// The largest device-local heap: where weights go. Sets a.device_local_heap; returns its size.
uint64_t pick_device_local_heap(Adapter& a) {
    uint64_t best_heap = 0;
    for (uint32_t h = 0; h < a.mem.memoryHeapCount; ++h) {
        if ((a.mem.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) &&
            a.mem.memoryHeaps[h].size > best_heap) {
            best_heap = a.mem.memoryHeaps[h].size;
            a.device_local_heap = h;
        }
    }
    return best_heap;
}

Adapter describe(VkPhysicalDevice pd, int index) {
    Adapter a;
    a.handle = pd;
    VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    VkPhysicalDeviceSubgroupProperties subgroup{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceIDProperties ids{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
    VkPhysicalDeviceMaintenance3Properties m3{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
    subgroup.pNext = &driver;
    ids.pNext = &subgroup;
    m3.pNext = &ids;
    VkPhysicalDeviceProperties2 props2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    props2.pNext = &m3;
    vkGetPhysicalDeviceProperties2(pd, &props2);
    a.props = props2.properties;
    a.max_allocation = m3.maxMemoryAllocationSize;
    a.uuid = hex(ids.deviceUUID, VK_UUID_SIZE);
    a.subgroup_size = subgroup.subgroupSize;
    vkGetPhysicalDeviceMemoryProperties(pd, &a.mem);

    uint32_t n_ext = 0;
    vkEnumerateDeviceExtensionProperties(pd, nullptr, &n_ext, nullptr);
    std::vector<VkExtensionProperties> exts(n_ext);
    vkEnumerateDeviceExtensionProperties(pd, nullptr, &n_ext, exts.data());
    a.has_memory_budget = has_extension(exts, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
    a.has_creation_feedback = has_extension(exts, VK_EXT_PIPELINE_CREATION_FEEDBACK_EXTENSION_NAME);
    a.has_executable_properties =
        has_extension(exts, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
    if (has_extension(exts, VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME)) {
        VkPhysicalDeviceShaderSMBuiltinsPropertiesNV sm{
            VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV};
        VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
        p2.pNext = &sm;
        vkGetPhysicalDeviceProperties2(pd, &p2);
        a.sm_count = sm.shaderSMCount;
    }

    // The features, in one query (Vulkan 1.2 adapters; others cannot run Ember's shaders):
    // Vulkan 1.1 and 1.2's, and those of the extensions the adapter has.
    const bool has_cm = has_extension(exts, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
    const bool has_af = has_extension(exts, VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME);
    const bool has_idot = has_extension(exts, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
    VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
    VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDeviceCooperativeMatrixFeaturesNV cm{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
    VkPhysicalDeviceShaderAtomicFloatFeaturesEXT af{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT};
    VkPhysicalDeviceShaderIntegerDotProductFeaturesKHR idot{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES_KHR};
    if (a.props.apiVersion >= VK_API_VERSION_1_2) {
        f11.pNext = &f12;
        void** tail = &f12.pNext;
        if (has_cm) *tail = &cm, tail = &cm.pNext;
        if (has_af) *tail = &af, tail = &af.pNext;
        if (has_idot) *tail = &idot, tail = &idot.pNext;
        VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
        f2.pNext = &f11;
        vkGetPhysicalDeviceFeatures2(pd, &f2);
    }
    a.float16 = f12.shaderFloat16;
    a.atomic_float_add = af.shaderBufferFloat32AtomicAdd;
    a.integer_dot = idot.shaderIntegerDotProduct;
    a.subgroup_shuffle = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                         (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT);

    if (has_cm && vkGetPhysicalDeviceCooperativeMatrixPropertiesNV &&
        a.props.apiVersion >= VK_API_VERSION_1_2 && subgroup.subgroupSize == 32) {
        a.coopmat_nv = cm.cooperativeMatrix && f12.shaderFloat16 && has_coopmat_shape(pd) &&
                       !read_overrides().no_tensor_cores;
        a.vulkan_memory_model = f12.vulkanMemoryModel;
    }

    const uint64_t best_heap = pick_device_local_heap(a);

    DeviceInfo& d = a.info;
    d.index = index;
    d.name = a.props.deviceName;
    d.type = type_name(a.props.deviceType);
    d.vendor_id = a.props.vendorID;
    d.vendor = vendor_name(a.props.vendorID);
    d.driver_version = driver_version_string(
        a.props.vendorID, driver.driverID, a.props.driverVersion,
        a.props.apiVersion >= VK_API_VERSION_1_2 ? driver.driverInfo : nullptr);
    d.api_version = version_string(a.props.apiVersion);
    d.device_local_bytes = best_heap;
    d.subgroup_size = subgroup.subgroupSize;

    check_requirements(pd, exts, subgroup, f11, f12, a);

    Budget b = query_budget(a);
    d.budget_bytes = b.budget;
    d.budget_source = b.source;
    return a;
}

}  // namespace

uint64_t validation_error_count() {
    return g_validation_errors.load();
}

void account_allocation(const std::string& uuid, int64_t delta) {
    std::lock_guard lock(g_alloc_mutex);
    g_allocations[uuid] += delta;
}

uint64_t own_allocations(const std::string& uuid) {
    std::lock_guard lock(g_alloc_mutex);
    auto it = g_allocations.find(uuid);
    return it == g_allocations.end() ? 0 : uint64_t(std::max<int64_t>(0, it->second));
}

Budget query_budget(const Adapter& a) {
    Budget b;
    uint32_t heap = a.device_local_heap;
    uint64_t heap_size = a.mem.memoryHeapCount ? a.mem.memoryHeaps[heap].size : 0;
    if (a.has_memory_budget) {
        VkPhysicalDeviceMemoryBudgetPropertiesEXT mb{
            VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
        VkPhysicalDeviceMemoryProperties2 mp{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2};
        mp.pNext = &mb;
        vkGetPhysicalDeviceMemoryProperties2(a.handle, &mp);
        b.budget = mb.heapBudget[heap];
        b.available =
            mb.heapBudget[heap] > mb.heapUsage[heap] ? mb.heapBudget[heap] - mb.heapUsage[heap] : 0;
        b.source = "VK_EXT_memory_budget";
    } else {
        uint64_t own = own_allocations(a.uuid);
        b.budget = heap_size;
        b.available = heap_size > own ? heap_size - own : 0;
        b.source = "heap size";
    }
    return b;
}

Result<std::shared_ptr<Instance>> Instance::get() {
    static std::mutex mutex;
    // Leaked on purpose: destroying it from a static destructor races the loader's own teardown.
    static std::shared_ptr<Instance>* shared = nullptr;
    std::lock_guard lock(mutex);
    if (shared) return *shared;
    EMBER_ASSIGN_OR_RETURN(auto inst, create());
    shared = new std::shared_ptr<Instance>(std::move(inst));
    return *shared;
}

Result<std::shared_ptr<Instance>> Instance::create() {
    EMBER_TRY(load_vulkan());
    uint32_t api = VK_API_VERSION_1_0;
    if (vkEnumerateInstanceVersion) vkEnumerateInstanceVersion(&api);
    if (api < VK_API_VERSION_1_2)
        return make_error("vulkan.no_driver", "the Vulkan loader supports API " +
                                                  version_string(api) + "; Ember needs Vulkan 1.2");

    uint32_t n = 0;
    vkEnumerateInstanceExtensionProperties(nullptr, &n, nullptr);
    std::vector<VkExtensionProperties> exts(n);
    vkEnumerateInstanceExtensionProperties(nullptr, &n, exts.data());
    std::vector<const char*> enabled;
    bool debug_utils = has_extension(exts, VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    if (debug_utils) enabled.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);

    // EMBER_VULKAN_VALIDATION=1 turns the Khronos layer on (VK_INSTANCE_LAYERS works as well).
    std::vector<const char*> layers;
    if (read_overrides().validation) {
        uint32_t nl = 0;
        vkEnumerateInstanceLayerProperties(&nl, nullptr);
        std::vector<VkLayerProperties> lps(nl);
        vkEnumerateInstanceLayerProperties(&nl, lps.data());
        for (const auto& l : lps)
            if (std::strcmp(l.layerName, "VK_LAYER_KHRONOS_validation") == 0)
                layers.push_back("VK_LAYER_KHRONOS_validation");
        if (layers.empty())
            EMBER_LOG_WARN(
                "vulkan: EMBER_VULKAN_VALIDATION=1 but the Khronos validation layer is not "
                "installed");
    }

    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "Ember";
    app.pEngineName = "Ember";
    app.apiVersion = VK_API_VERSION_1_2;
    VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    ci.pApplicationInfo = &app;
    ci.enabledExtensionCount = uint32_t(enabled.size());
    ci.ppEnabledExtensionNames = enabled.data();
    ci.enabledLayerCount = uint32_t(layers.size());
    ci.ppEnabledLayerNames = layers.data();

    std::shared_ptr<Instance> inst(new Instance());
    EMBER_VK_TRY(vkCreateInstance(&ci, nullptr, &inst->m_instance), "vkCreateInstance");
    // Device-level functions go through the loader's dispatch, so several devices can coexist.
    volkLoadInstance(inst->m_instance);

    if (debug_utils && vkCreateDebugUtilsMessengerEXT) {
        VkDebugUtilsMessengerCreateInfoEXT mi{
            VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
        mi.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT |
                             VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT;
        mi.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                         VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                         VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
        mi.pfnUserCallback = debug_callback;
        EMBER_VK_TRY(
            vkCreateDebugUtilsMessengerEXT(inst->m_instance, &mi, nullptr, &inst->m_messenger),
            "vkCreateDebugUtilsMessengerEXT");
    }
    return inst;
}

Instance::~Instance() {
    if (m_messenger) vkDestroyDebugUtilsMessengerEXT(m_instance, m_messenger, nullptr);
    if (m_instance) vkDestroyInstance(m_instance, nullptr);
}

Result<std::vector<Adapter>> enumerate_adapters(const std::shared_ptr<Instance>& instance) {
    uint32_t n = 0;
    EMBER_VK_TRY(vkEnumeratePhysicalDevices(instance->handle(), &n, nullptr),
                 "vkEnumeratePhysicalDevices");
    std::vector<VkPhysicalDevice> pds(n);
    VkResult r = vkEnumeratePhysicalDevices(instance->handle(), &n, pds.data());
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) return vk_error(r, "vkEnumeratePhysicalDevices");
    std::vector<Adapter> out;
    for (uint32_t i = 0; i < n; ++i) {
        out.push_back(describe(pds[i], int(i)));
        out.back().instance = instance;
    }
    return out;
}

Result<size_t> choose_adapter(const std::vector<Adapter>& adapters, const std::string& choice) {
    if (adapters.empty())
        return make_error(
            "vulkan.no_device",
            "the Vulkan loader found no device; install a GPU driver with Vulkan support");
    auto names = [&] {
        std::string s;
        for (const auto& a : adapters)
            s += (s.empty() ? "" : ", ") + std::to_string(a.info.index) + ": " + a.info.name;
        return s;
    };
    auto explicit_pick = [&](size_t i) -> Result<size_t> {
        if (!adapters[i].usable)
            return make_error("vulkan.unsupported_device",
                              "Vulkan device '" + adapters[i].info.name +
                                  "' cannot run Ember: it " + adapters[i].info.unsuitable_reason);
        return i;
    };
    if (choice.empty()) {
        long best = -1;
        for (size_t i = 0; i < adapters.size(); ++i) {
            const auto& a = adapters[i];
            if (!a.info.suitable) continue;
            if (best < 0) {
                best = long(i);
                continue;
            }
            const auto& b = adapters[size_t(best)];
            int ra = type_rank(a.props.deviceType), rb = type_rank(b.props.deviceType);
            if (ra > rb || (ra == rb && a.info.device_local_bytes > b.info.device_local_bytes))
                best = long(i);
        }
        if (best >= 0) return size_t(best);
        std::string reasons;
        for (const auto& a : adapters)
            reasons +=
                (reasons.empty() ? "" : "; ") + a.info.name + ": " + a.info.unsuitable_reason;
        return make_error("vulkan.no_suitable_device",
                          "no suitable Vulkan device (" + reasons + ")");
    }
    bool numeric = std::all_of(choice.begin(), choice.end(),
                               [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    if (numeric) {
        unsigned long i = std::strtoul(choice.c_str(), nullptr, 10);
        if (i >= adapters.size())
            return make_error("vulkan.device_not_found", "no Vulkan device with index " + choice +
                                                             " (devices: " + names() + ")");
        return explicit_pick(i);
    }
    std::string want = lower(choice);
    for (size_t i = 0; i < adapters.size(); ++i)
        if (lower(adapters[i].info.name).find(want) != std::string::npos) return explicit_pick(i);
    return make_error("vulkan.device_not_found",
                      "no Vulkan device named like '" + choice + "' (devices: " + names() + ")");
}

}  // namespace ember::vulkan
