// Host memory: what a model needs on the CPU backend, and what this process can still get.
// Checked before anything large is allocated, so that a file whose tensors alias the same bytes
// many times, or whose layer count makes the KV cache huge, is refused with the numbers.
#pragma once

#include <cstdint>
#include <string>

#include "ember/result.h"
#include "gguf/gguf.h"
#include "model/llama.h"

namespace ember {

struct HostMemory {
    uint64_t available = UINT64_MAX;  // bytes; UINT64_MAX when nothing could be read
    std::string source;               // what limits it, e.g. "MemAvailable + SwapFree"
};
// The least of: free RAM and swap, the cgroup's memory.max less its usage, RLIMIT_AS less the
// address space in use.
HostMemory host_memory();

struct CpuMemoryNeed {
    uint64_t repacked = 0;  // weight copies in the CPU kernels' layout, identical aliases once
    uint64_t kv_cache = 0;  // one session's keys and values
    uint64_t buffers = 0;   // activations of the largest batch and the logits
    uint64_t total() const;
};
CpuMemoryNeed cpu_memory_need(const gguf::File& file, const LlamaModel& m, int n_ctx, int n_threads,
                              bool with_weights);
// The KV cache and buffers alone (repacked 0): what running a model of these dimensions needs
// besides its weights.
CpuMemoryNeed cpu_runtime_need(const LlamaHParams& hp, int n_ctx, int n_threads);

// model.too_large when `need` exceeds host_memory(); what names the step ("loading", ...).
Status check_host_memory(const CpuMemoryNeed& need, int n_ctx, const std::string& path,
                         const std::string& what);

}  // namespace ember
