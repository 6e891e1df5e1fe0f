// Shared by the Vulkan backend's files: Vulkan through volk (loaded at run time), and the one
// place where a VkResult becomes an ember::Error.
#pragma once

#include <volk.h>

#include <string>
#include <string_view>
#include <utility>

#include "ember/result.h"

namespace ember::vulkan {

// Code ("vulkan.out_of_memory", ...) and message for a failed Vulkan call; `what` names the call
// or the object it was making.
Error vk_error(VkResult result, std::string_view what);
const char* vk_result_name(VkResult result);

// Loads the Vulkan loader once per process. Fails with "vulkan.no_loader" if there is none.
Status load_vulkan();

// Errors reported by the validation layer (through VK_EXT_debug_utils) since the process started.
uint64_t validation_error_count();

// Moves a handle out of an RAII object, leaving VK_NULL_HANDLE.
template <class H>
H take_handle(H& h) {
    return std::exchange(h, VK_NULL_HANDLE);
}

}  // namespace ember::vulkan

#define EMBER_VK_TRY(call, what)                                                            \
    do {                                                                                    \
        VkResult ember_vk_r_ = (call);                                                      \
        if (ember_vk_r_ != VK_SUCCESS) return ::ember::vulkan::vk_error(ember_vk_r_, what); \
    } while (0)
