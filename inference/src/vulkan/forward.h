// The Llama forward pass on a Vulkan device: shared weights (VulkanModel) and per-session
// state (KV cache and activations, in VulkanRunner).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "model/backend.h"
#include "model/llama.h"
#include "vulkan/stages.h"
#include "vulkan/weights.h"

namespace ember::vulkan {

// Tokens evaluated by one command buffer; longer batches are split. 512 rather than 256: a
// 512-token prompt in one batch ran 3-17% faster on the H200.
constexpr int kMaxBatch = 512;
// A prompt batch's submission should take about this long at most where the plan sizes
// batches by time (Batching::Timed: adapters other than discrete GPUs): a desktop GPU's
// watchdog stops a dispatch after about 2 s, and a slow adapter (lavapipe, an old iGPU) takes
// seconds for 512 tokens. Batches are then sized by the time a token took in the last one.
constexpr double kBatchTargetS = 0.25;
// The first batch of a model, before any time is known: small enough for a slow adapter, and
// only once per model (the size follows the measured time afterwards).
constexpr int kFirstBatch = 64;

// Tokens a runner of a context of n_ctx evaluates in one command buffer.
inline int batch_capacity(int n_ctx) {
    return n_ctx < 1 ? 1 : n_ctx < kMaxBatch ? n_ctx : kMaxBatch;
}
// The step buffer: position, token count, token ids, then the decode attention's grid (3 uints).
inline uint64_t step_grid_offset(int batch) {
    return 8 + 4 * uint64_t(batch);
}
inline uint64_t step_bytes(int batch) {
    return step_grid_offset(batch) + 12;
}
// The decode attention's most runs per head for a context (0: not split; its shape does not
// allow it).
uint32_t decode_attention_split(const Plan& plan, const LlamaHParams& hp, int n_ctx);

struct RunnerSizes {
    uint64_t kv_cache = 0;  // F16 K and V of every layer
    uint64_t scratch = 0;   // activations, logits, step and readback buffers, weight scratch
};
// weight_scratch: weight_scratch_bytes() where the runner gets one. first_layer: the first layer
// on the device (partial offload; the ones before have no KV cache here, and the residual stream
// comes in through an input buffer).
RunnerSizes runner_sizes(const Plan& plan, const LlamaHParams& hp, int n_ctx,
                         uint64_t weight_scratch = 0, uint32_t first_layer = 0);
// The F16 scratch for prompt matmuls whose weights the tensor cores cannot read (op_matmul).
uint64_t weight_scratch_bytes(const Adapter& a, const LlamaModel& model);

// Binds a model's tensors to their device copies (find: the copy of a tensor, or null; fails
// if any is missing) and decides what the plan leaves to the weights (fused kernels). Partial
// offload: only the layers from first_layer on (and the head) are on the device.
Result<DeviceModel> bind_device_model(const LlamaModel& model,
                                      const std::function<const DeviceTensor*(const Tensor&)>& find,
                                      const Adapter& adapter, const Plan& plan,
                                      uint32_t first_layer = 0);
// The tensors the device holds: all, or from first_layer on (no embedding table then, unless
// the output shares it).
std::vector<const Tensor*> model_tensors(const LlamaModel& model, uint32_t first_layer = 0);

// What a loaded model owns; runners keep it alive.
struct LoadedModel {
    std::unique_ptr<Context> ctx;
    std::unique_ptr<WeightStore> store;
    DeviceModel model;
    // Partial offload with whole prompts (Options::whole_prompts): every layer bound, the CPU's
    // ones to their host-visible copies; prompts run it from the embedding on.
    DeviceModel whole;
    bool has_whole = false;
    // Seconds a prompt token took in the last batch of any of its runners (0: not measured yet).
    std::atomic<double> batch_token_s{0};
};

// Tokens of the next prompt batch: what fits target_s at the last measured seconds per token
// (kFirstBatch while none is known; `capacity` where target_s is 0: no time limit), at least
// kFirstBatch, at most `capacity` and `left`.
int next_batch_size(double token_s, double target_s, int capacity, int left);

Result<std::unique_ptr<Runner>> create_runner(std::shared_ptr<LoadedModel> loaded, int n_ctx);

// Creates every pipeline the forward pass of this model uses (and saves the pipeline cache),
// so that the first token does not pay for shader compilation: the stages of every kind of
// step the runners record, recorded without a command buffer.
Status warm_up_pipelines(Context& ctx, const DeviceModel& model);

// The plan of this model on this adapter, per stage of a decode step and of a full prompt
// batch (kernel, grid, reason), as `ember-cli devices --plan` prints it. Needs no device:
// the weights are described as the upload would place them.
std::string describe_plan(const LlamaModel& model, const Adapter& adapter, const Plan& plan);
// The dispatches of the first layer (and the embedding and head) of one kind of step, for a
// runner of n_ctx, as the plan makes them.
Result<std::vector<PlannedDispatch>> planned_dispatches(const LlamaModel& model,
                                                        const Adapter& adapter, const Plan& plan,
                                                        const Step& step, int n_ctx);

}  // namespace ember::vulkan
