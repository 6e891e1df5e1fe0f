// The Llama forward pass on a Vulkan device: shared weights (VulkanModel) and per-session
// state (KV cache and activations, in VulkanRunner).
#pragma once

#include <memory>
#include <vector>

#include "model/backend.h"
#include "model/llama.h"
#include "vulkan/weights.h"

namespace ember::vulkan {

// Tokens evaluated by one command buffer; longer batches are split. 512 rather than 256: a
// 512-token prompt in one batch ran 3-17% faster on the H200 (docs/performance.md, item 27).
constexpr int kMaxBatch = 512;

struct RunnerSizes {
    uint64_t kv_cache = 0;  // F16 K and V of every layer
    uint64_t scratch = 0;   // activations, logits, step and readback buffers, weight scratch
};
// weight_scratch: weight_scratch_bytes() where the runner gets one.
RunnerSizes runner_sizes(const LlamaHParams& hp, int n_ctx, uint64_t weight_scratch = 0);
// The F16 scratch for prompt matmuls whose weights the tensor cores cannot read (op_matmul).
uint64_t weight_scratch_bytes(const Adapter& a, const LlamaModel& model);

// The weights of one layer on the device.
struct DeviceLayer {
    const DeviceTensor *attn_norm, *wq, *wk, *wv, *wo, *ffn_norm, *gate, *up, *down;
};

struct DeviceModel {
    LlamaHParams hp;
    const DeviceTensor *tok_embd = nullptr, *output_norm = nullptr, *output = nullptr,
                       *rope_freqs = nullptr;
    std::vector<DeviceLayer> layers;
    // Decode runs the fused kernels (matvec_fused.comp) when the weights allow it;
    // EMBER_VULKAN_FUSED=0 turns them off (for comparisons).
    bool fused_layers = false, fused_output = false;
    // weight_scratch_bytes() of the model on this adapter: what a runner of prompt batches
    // reserves.
    uint64_t weight_scratch = 0;
};

// Binds a model's tensors to their device copies; fails if any is missing.
Result<DeviceModel> bind_device_model(const LlamaModel& model, const WeightStore& store,
                                      const Adapter& adapter);
std::vector<const Tensor*> model_tensors(const LlamaModel& model);

// What a loaded model owns; runners keep it alive.
struct LoadedModel {
    std::unique_ptr<Context> ctx;
    std::unique_ptr<WeightStore> store;
    DeviceModel model;
};

Result<std::unique_ptr<Runner>> create_runner(std::shared_ptr<LoadedModel> loaded, int n_ctx);

// Creates every pipeline the forward pass of this model uses (and saves the pipeline cache),
// so that the first token does not pay for shader compilation.
Status warm_up_pipelines(Context& ctx, const DeviceModel& model);

}  // namespace ember::vulkan
