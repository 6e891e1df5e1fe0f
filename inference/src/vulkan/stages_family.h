// The stages of the families beyond plain Llama (model/arch.h: Qwen 2/3, Gemma
// 2/3, Phi-3, and Llama files whose head size is not n_embd / n_head), in
// llama2.c's order, from the ops of ops.h and ops_family.h. What differs
// between the families is a branch on the traits, as in cpu/forward.cpp; the
// ops say which buffer each stage reads and writes.
#pragma once

#include <vector>

#include "vulkan/ops_family.h"
#include "vulkan/stages.h"

namespace ember::vulkan {

// Whether this model runs the family stages instead of llama_stages(): any
// architecture but plain Llama (head size n_embd / n_head, rope over the whole
// head at one base and scale in every layer, no window, the standard attention
// scale, no soft-caps).
bool uses_family_stages(const LlamaHParams& hp);
// Whether the stages (the family ones, or plain Llama's) read this model: head
// sizes, F32 norms and biases; if not, what it lacks
// (vulkan.unsupported_model).
Status family_stages_support(const LlamaModel& model);

// The family stages of a step of this model.
std::vector<Stage> family_stages(const DeviceModel& m, const Step& step);

// Records one family stage (StageOp::Family*; the others are llama's) and the
// barrier after it.
Status record_family_stage(Recorder& rec, const DeviceModel& m, const Buffers& b, int n,
                           const Stage& st);
bool is_family_stage(StageOp op);

// Rows of layer l's K and V caches for a context of n_ctx and batches of up to
// `batch` tokens: a sliding-window layer keeps only window + batch - 1
// positions (a ring) where that is fewer. 0 where the layer keeps every
// position (n_ctx rows).
uint32_t family_kv_ring(const LlamaHParams& hp, uint32_t l, int n_ctx, int batch);
// Buffers::rope_ff of a runner of n_ctx positions: LongRoPE's long factors
// where n_ctx exceeds the original context, else its short ones (as
// LlamaModel::rope_factors picks them for the CPU); none without LongRoPE.
BufferRange family_rope_factors(const DeviceModel& m, int n_ctx);
// What runs between layer l's Q/K/V projections of n tokens and its attention (bias, q/k
// norms, RoPE, the KV store: op_qkv_rope's fields), q, k and v where the projections write
// them.
QkvRope family_qkv_rope(const DeviceModel& m, const Buffers& b, int n, uint32_t l);
// Floats per token of Buffers::wide (a fused matmul's rows), 0 where the family
// has none.
uint64_t family_wide_floats(const LlamaHParams& hp);
// Floats of Buffers::qk_ss (the q/k norms' sums of squares of a decode step), 0 where the family
// has no q/k norms.
uint64_t family_qk_ss_floats(const LlamaHParams& hp);

}  // namespace ember::vulkan
