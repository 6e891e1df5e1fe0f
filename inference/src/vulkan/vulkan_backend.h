// The Vulkan backend's entry points: fit estimate and loading a Llama model onto a device.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "ember/result.h"
#include "model/backend.h"
#include "model/llama.h"

namespace ember::vulkan {

struct Options {
    std::string device;  // "" = auto; index "0" or a name substring: explicit choice
    int n_ctx = 2048;    // for the fit estimate (KV cache)
    std::function<bool(float)> progress;  // upload progress, false = cancel
    const std::atomic<bool>* cancel = nullptr;
    // Run on every uploaded tensor's rows as they are read (the NaN/Inf check, so that the
    // file is read once); its first error ends the load. Empty: no check.
    std::function<Status(const Tensor&, int64_t row0, int64_t nrows)> check_rows;
    // Tests and diagnostics: pretend the device has only this many bytes available (0 = real),
    // or that maxStorageBufferRange is this small (0 = real), and skip the on-disk pipeline cache.
    uint64_t fake_available = 0;
    uint64_t max_range_override = 0;
    // The GPU budget (ember.h LoadParams): at most mem_limit bytes (0: no limit), and mem_reserve
    // bytes of the free memory left to other programs.
    uint64_t mem_limit = 0, mem_reserve = 0;
    // Partial offload: the device holds layers [first_layer, n_layer) and the output layer; its
    // runners take the residual stream of the layers before (Runner::set_hidden_input).
    uint32_t first_layer = 0;
    // With first_layer > 0: the first layers' weights (and the embedding table) also kept, in
    // the device's layouts, in host-visible memory that the device reads over the bus, so that
    // a prompt runs every layer on the device (Runner::runs_whole_prompts) while decode steps
    // start from the CPU's layers. Costs host RAM (their bytes), not device memory.
    bool whole_prompts = false;
    bool disk_pipeline_cache = true;
    // Tests: changes to the plan made for the adapter (vulkan/plan.h), before anything runs.
    std::function<void(struct Plan&)> adjust_plan;
};

// Whether the Vulkan kernels run this model exactly: plain Llama only for now. Anything else
// gives "vulkan.unsupported_model" with the reason, and the caller runs it on the CPU.
Status check_model_supported(const LlamaModel& model);

// Memory the model would need on a Vulkan device (the same numbers the loader uses).
struct FitEstimate {
    uint64_t weights = 0, kv_cache = 0, scratch = 0, total = 0, available = 0;
    std::string device, available_source;
    bool fits = false;
    uint32_t first_layer = 0;  // the layers from this one on (and the output) are counted
};
// The budget the estimate holds the model against (Options' fields of the same names).
struct GpuBudget {
    uint64_t fake_available = 0, mem_limit = 0, mem_reserve = 0;
};
Result<FitEstimate> estimate_fit(const LlamaModel& model, int n_ctx, const std::string& device,
                                 uint64_t fake_available = 0);
Result<FitEstimate> estimate_fit(const LlamaModel& model, int n_ctx, const std::string& device,
                                 const GpuBudget& budget, uint32_t first_layer = 0);
// Partial offload: the split with the most layers on the device (at most max_gpu_layers; < 0:
// any number) whose weights, KV cache and scratch fit the budget. fits false (first_layer
// n_layer) where not even one layer with the output layer fits.
Result<FitEstimate> estimate_split(const LlamaModel& model, int n_ctx, const std::string& device,
                                   const GpuBudget& budget, int max_gpu_layers = -1);

// Refuses what check_model_supported refuses. Picks the adapter, estimates weights + KV cache
// at n_ctx + scratch, refuses with the numbers ("needs 4.3 GiB, 3.1 GiB available", code
// "vulkan.does_not_fit") if it does not fit, creates the device and uploads the weights.
Result<std::unique_ptr<BackendModel>> create_backend_model(const LlamaModel& model,
                                                           const Options& opt);

}  // namespace ember::vulkan
