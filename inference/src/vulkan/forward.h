// The Llama forward pass on a Vulkan device: shared weights (VulkanModel) and per-session
// state (KV cache and activations, in VulkanRunner).
#pragma once

#include <atomic>
#include <memory>
#include <vector>

#include "model/backend.h"
#include "model/llama.h"
#include "vulkan/weights.h"

namespace ember::vulkan {

// Tokens evaluated by one command buffer; longer batches are split. 512 rather than 256: a
// 512-token prompt in one batch ran 3-17% faster on the H200 (docs/performance.md, item 27).
constexpr int kMaxBatch = 512;
// A prompt batch's submission should take about this long at most: a desktop GPU's watchdog
// stops a dispatch after about 2 s, and a slow adapter (lavapipe, an old iGPU) takes seconds
// for 512 tokens. With EMBER_VULKAN_BATCH_MS (the target in milliseconds), batches are sized by
// the time a token took in the last one. Off by default: on the H200 the varying batch sizes
// made pp512 9x slower, so the default stays whole batches of kMaxBatch until sizing is made
// cheap there.
constexpr double kBatchTargetS = 0.25;
// The first batch of a model, before any time is known: small enough for a slow adapter, and
// only once per model (the size follows the measured time afterwards).
constexpr int kFirstBatch = 64;

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
    // Seconds a prompt token took in the last batch of any of its runners (0: not measured yet).
    std::atomic<double> batch_token_s{0};
};

// Tokens of the next prompt batch: what fits target_s at the last measured seconds per token
// (kFirstBatch while none is known; `capacity` where target_s is 0: no time limit), at least
// kFirstBatch, at most `capacity` and `left`.
int next_batch_size(double token_s, double target_s, int capacity, int left);

Result<std::unique_ptr<Runner>> create_runner(std::shared_ptr<LoadedModel> loaded, int n_ctx);

// Creates every pipeline the forward pass of this model uses (and saves the pipeline cache),
// so that the first token does not pay for shader compilation.
Status warm_up_pipelines(Context& ctx, const DeviceModel& model);

}  // namespace ember::vulkan
