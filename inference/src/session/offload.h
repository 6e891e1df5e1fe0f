// Partial offload: a model whose whole does not fit the GPU budget runs its first layers on the
// CPU and its last layers and output layer on the GPU, as llama.cpp's -ngl does (the output
// layer, the largest matrix, stays where it is cheapest). Each backend keeps the KV cache of its
// own layers; the residual stream [n][E] crosses from the CPU to the GPU once per step.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "ember/ember.h"
#include "ember/result.h"
#include "model/backend.h"
#include "model/llama.h"
#include "session/memory.h"
#ifdef EMBER_HAVE_VULKAN
#include "vulkan/vulkan_backend.h"
#endif

namespace ember {

// One model over two backends: cpu runs layers [0, k), gpu layers [k, n_layer) and the output.
// info: the GPU's, with the split filled in; n_embd: the residual stream's width.
std::unique_ptr<BackendModel> make_split_model(std::unique_ptr<BackendModel> cpu,
                                               std::unique_ptr<BackendModel> gpu, BackendInfo info,
                                               uint32_t n_embd);

// "28 of 32 layers on the GPU, 4 on the CPU: the GPU budget is 6.0 GiB (the GPU memory limit)"
std::string describe_split(uint32_t gpu_layers, uint32_t n_layers, uint64_t budget,
                           const std::string& budget_source);

#ifdef EMBER_HAVE_VULKAN
// Host RAM that whole prompts on the device cost beside the CPU backend's own (layers before
// first_layer): those layers' weights (and the embedding table) in device layout in
// host-visible memory, and an F16 copy of their K/V at n_ctx. 0 where first_layer is 0.
uint64_t host_copy_bytes(const LlamaModel& model, uint32_t first_layer, int n_ctx);

// The copy a load keeps: all of it where `available` RAM holds the CPU layers' `need` and the
// copy, else none (prompts then run split as decode steps do: slower, but the model loads).
uint64_t affordable_host_copy(const CpuMemoryNeed& need, uint64_t copy, uint64_t available);

// The model on the GPU: all of it where it fits the budget and params.n_gpu_layers allows, else
// (partial offload) as many of its last layers as fit, beside the CPU backend running the first
// ones; the split is logged and in info(). opt: the Vulkan options but for the budget and the
// split, which come from params. Errors: as vulkan::create_backend_model's ("vulkan.does_not_fit"
// where not one layer fits), "offload.no_gpu_layers" where params.n_gpu_layers is 0.
// path: the file, for messages.
Result<std::unique_ptr<BackendModel>> load_on_gpu(const LlamaModel& model, const LoadParams& params,
                                                  vulkan::Options opt, const std::string& path);
#endif

}  // namespace ember
