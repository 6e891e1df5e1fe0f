// Fault injection for tests: EMBER_FAULT makes chosen Vulkan calls fail as a driver would, so
// that the error paths (clean-up, CPU fallback, recovery) can be exercised on any device.
//
//   EMBER_FAULT=vk_alloc:N        the N-th vkAllocateMemory of the process fails with
//                                 VK_ERROR_OUT_OF_DEVICE_MEMORY (N defaults to 1)
//   EMBER_FAULT=vk_device_lost:N  the N-th queue submission after a model finished loading
//                                 reports VK_ERROR_DEVICE_LOST, and so does every later one on
//                                 that device (a fresh device works again)
//   EMBER_FAULT=vk_pipeline[:N]   every pipeline creation fails (or only the N-th)
//   EMBER_FAULT=vk_slow:N         from the N-th fence wait of the process on, every wait first
//                                 times out for 12 s worth of slices, as on a very slow or busy
//                                 adapter, and then waits for real
//   EMBER_FAULT=vk_hang:N         the N-th fence wait after a model finished loading never
//                                 sees its fence signal (only a cancel ends it)
//   EMBER_FAULT=vk_wait_lost:N    the N-th fence wait after a model finished loading reports
//                                 VK_ERROR_DEVICE_LOST while the work still runs, and the device
//                                 stays lost
//
// Several faults are separated by commas. The variable is read once; when it is unset each hook
// costs one predictable branch.
#pragma once

#include <cstdint>

#include "vulkan/vk.h"

namespace ember::vulkan::fault {

enum class Kind { Alloc, DeviceLost, Pipeline, Slow, Hang, WaitLost };
// What a fence wait must pretend to see.
enum class WaitFault { None, Slow, Hang, Lost };

// Whether EMBER_FAULT asks for any fault (read on first use).
bool enabled();
// The result the hooked call must report instead of running, or VK_SUCCESS to run it.
VkResult inject(Kind kind, VkDevice device);
// Called as a fence wait begins (counts the waits for vk_slow, vk_hang and vk_wait_lost).
WaitFault wait_begins(VkDevice device);
// A model is loaded: submissions count towards vk_device_lost from now on.
void model_loaded();
// The device is gone: a later device with the same handle value is not "lost".
void device_destroyed(VkDevice device);
// How many calls a fault has failed so far (tests check that the fault really fired).
uint64_t fired(Kind kind);

}  // namespace ember::vulkan::fault

// Runs `call` unless a fault is due for it, in which case the call is skipped (nothing is
// created, so nothing can leak) and the injected VkResult stands in for its result.
#define EMBER_FAULT_OR(kind, device, call)                                                  \
    ([&]() -> VkResult {                                                                    \
        if (::ember::vulkan::fault::enabled()) {                                            \
            VkResult ember_fault_r_ =                                                       \
                ::ember::vulkan::fault::inject(::ember::vulkan::fault::Kind::kind, device); \
            if (ember_fault_r_ != VK_SUCCESS) return ember_fault_r_;                        \
        }                                                                                   \
        return (call);                                                                      \
    }())
