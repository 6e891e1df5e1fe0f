// Every environment variable the engine reads, in one place. read_overrides() is the only
// function that looks at the environment; the rest of the engine takes what it needs from the
// struct it returns. Each variable changes behaviour a user or a test may want to change;
// tuning and kernel choices are not here (the Vulkan backend's Plan makes those).
//
//   EMBER_VULKAN_COOPMAT=0     no tensor cores (VK_NV_cooperative_matrix): prompt matmuls and
//                              attention run on the plain compute kernels
//   EMBER_VULKAN_FUSED=0       no fused decode kernels: a decode step runs the separate ops
//   EMBER_VULKAN_VALIDATION=1  the Khronos validation layer (VK_INSTANCE_LAYERS works as well)
//   EMBER_VULKAN_PROFILE=1     GPU time per stage, printed to stderr when a session ends;
//                              =span: one interval per submission, with the host's side
//   EMBER_FAULT=KIND:N         inject a Vulkan fault, for tests (inference/src/vulkan/fault.h)
//   EMBER_CPU_ISA=LEVEL        cap the CPU kernels' instruction set (portable, avx2, avx512)
//   EMBER_CPU_NO_PACK=1        keep quantized weights in the GGUF layout on the CPU, and
//                              K-quants on the per-32 kernels
#pragma once

#include <string>

namespace ember {

struct Overrides {
    bool no_tensor_cores = false;                                     // EMBER_VULKAN_COOPMAT=0
    bool no_fused = false;                                            // EMBER_VULKAN_FUSED=0
    bool validation = false;                                          // EMBER_VULKAN_VALIDATION=1
    enum class Profile { Off, Stages, Span } profile = Profile::Off;  // EMBER_VULKAN_PROFILE
    std::string fault;                                                // EMBER_FAULT
    std::string cpu_isa;                                              // EMBER_CPU_ISA
    bool cpu_no_pack = false;                                         // EMBER_CPU_NO_PACK=1
};

// Reads the environment now (callers that must not see later changes keep the result).
Overrides read_overrides();

}  // namespace ember
