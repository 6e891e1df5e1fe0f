#include <mutex>

#include "vulkan/vk.h"

namespace ember::vulkan {

const char* vk_result_name(VkResult r) {
    switch (r) {
#define EMBER_CASE(x) \
    case x:           \
        return #x;
        EMBER_CASE(VK_SUCCESS)
        EMBER_CASE(VK_NOT_READY)
        EMBER_CASE(VK_TIMEOUT)
        EMBER_CASE(VK_INCOMPLETE)
        EMBER_CASE(VK_ERROR_OUT_OF_HOST_MEMORY)
        EMBER_CASE(VK_ERROR_OUT_OF_DEVICE_MEMORY)
        EMBER_CASE(VK_ERROR_INITIALIZATION_FAILED)
        EMBER_CASE(VK_ERROR_DEVICE_LOST)
        EMBER_CASE(VK_ERROR_MEMORY_MAP_FAILED)
        EMBER_CASE(VK_ERROR_LAYER_NOT_PRESENT)
        EMBER_CASE(VK_ERROR_EXTENSION_NOT_PRESENT)
        EMBER_CASE(VK_ERROR_FEATURE_NOT_PRESENT)
        EMBER_CASE(VK_ERROR_INCOMPATIBLE_DRIVER)
        EMBER_CASE(VK_ERROR_TOO_MANY_OBJECTS)
        EMBER_CASE(VK_ERROR_FORMAT_NOT_SUPPORTED)
        EMBER_CASE(VK_ERROR_FRAGMENTED_POOL)
        EMBER_CASE(VK_ERROR_UNKNOWN)
        EMBER_CASE(VK_ERROR_OUT_OF_POOL_MEMORY)
        EMBER_CASE(VK_ERROR_INVALID_EXTERNAL_HANDLE)
        EMBER_CASE(VK_ERROR_FRAGMENTATION)
        EMBER_CASE(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS)
        EMBER_CASE(VK_PIPELINE_COMPILE_REQUIRED)
#undef EMBER_CASE
        default:
            return "VkResult(unknown)";
    }
}

Error vk_error(VkResult r, std::string_view what) {
    std::string code;
    std::string hint;
    switch (r) {
        case VK_ERROR_OUT_OF_HOST_MEMORY:
            code = "vulkan.out_of_host_memory";
            hint = "the system ran out of memory";
            break;
        case VK_ERROR_OUT_OF_DEVICE_MEMORY:
        case VK_ERROR_OUT_OF_POOL_MEMORY:
        case VK_ERROR_FRAGMENTATION:
        case VK_ERROR_TOO_MANY_OBJECTS:
            code = "vulkan.out_of_memory";
            hint = "the GPU ran out of memory; try a smaller model or context";
            break;
        case VK_ERROR_DEVICE_LOST:
            code = "vulkan.device_lost";
            hint = "the GPU driver reset or the device was removed";
            break;
        case VK_ERROR_INCOMPATIBLE_DRIVER:
            code = "vulkan.no_driver";
            hint = "no Vulkan driver is installed, or none supports Vulkan 1.2";
            break;
        case VK_ERROR_INITIALIZATION_FAILED:
            code = "vulkan.init_failed";
            hint = "the driver failed to initialize";
            break;
        case VK_ERROR_EXTENSION_NOT_PRESENT:
        case VK_ERROR_FEATURE_NOT_PRESENT:
        case VK_ERROR_LAYER_NOT_PRESENT:
            code = "vulkan.missing_feature";
            hint = "the driver lacks a required extension, feature or layer";
            break;
        case VK_ERROR_MEMORY_MAP_FAILED:
            code = "vulkan.map_failed";
            hint = "host-visible memory could not be mapped";
            break;
        case VK_TIMEOUT:
            code = "vulkan.timeout";
            hint = "the GPU did not finish in time";
            break;
        default:
            code = "vulkan.error";
            hint = "unexpected Vulkan error";
            break;
    }
    return make_error(code,
                      std::string(what) + " failed: " + vk_result_name(r) + " (" + hint + ")");
}

Status load_vulkan() {
    static std::once_flag once;
    static VkResult result = VK_ERROR_INITIALIZATION_FAILED;
    std::call_once(once, [] { result = volkInitialize(); });
    if (result != VK_SUCCESS)
        return make_error("vulkan.no_loader",
                          "no Vulkan loader (libvulkan.so.1) found; install a Vulkan driver");
    return {};
}

}  // namespace ember::vulkan
