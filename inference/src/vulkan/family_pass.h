// The decoder of every family in model/arch.h (Llama, Qwen 2/3, Gemma 2/3, Phi-3) on a Vulkan
// device, one op per step in llama2.c's order, from the ops of ops.h and ops_family.h. What
// differs between the families is a branch on the traits, as in cpu/forward.cpp; every step's
// buffer has its shape beside it. The runner gives it the buffers and a recorder.
#pragma once

#include <vector>

#include "model/llama.h"
#include "vulkan/ops_family.h"
#include "vulkan/weights.h"

namespace ember::vulkan {

// One layer's device tensors; nullptr where the family has none (model/llama.h says which).
struct FamilyLayer {
    const DeviceTensor *attn_norm, *wq, *wk, *wv, *wqkv, *bq, *bk, *bv, *q_norm, *k_norm, *wo,
        *post_attn_norm, *ffn_norm, *gate, *up, *gate_up, *down, *post_ffn_norm;
};

struct FamilyModel {
    LlamaHParams hp;
    const DeviceTensor *tok_embd = nullptr, *output_norm = nullptr, *output = nullptr,
                       *rope_freqs = nullptr;
    std::vector<FamilyLayer> layers;
};

// Whether the family pass runs this model; if not, what it lacks (vulkan.unsupported_model).
Status family_pass_supports(const LlamaModel& model);
// The tensors the pass reads, each once (for WeightStore::upload).
std::vector<const Tensor*> family_tensors(const LlamaModel& model);
// Binds the model's tensors to their device copies; fails if one is missing.
Result<FamilyModel> bind_family_model(const LlamaModel& model, const WeightStore& store);

// The buffers of a pass over up to `batch` tokens (F32 unless said).
struct FamilyBuffers {
    BufferRange x;       // [batch][E] residual stream
    BufferRange xb;      // [batch][E] normed input / projection output
    BufferRange tmp;     // [batch][E] post-norm output (Gemma)
    BufferRange qkv;     // [batch][QD + 2 KVD]: a fused attn_qkv's rows (q, k, v side by side),
                         // or q [n][QD], then k [n][KVD], then v [n][KVD]
    BufferRange att;     // [batch][QD] attention output
    BufferRange gu;      // [batch][2F]: gate, then up (fused ffn_up), or gate rows, then up rows
    BufferRange h;       // [batch][F] act(gate) * up
    BufferRange logits;  // [V]
    BufferRange step;    // position, token count, token ids
    std::vector<BufferRange> k_cache, v_cache;  // per layer, [rows][KVD] F16
    // Per layer: 0 where its caches have a row per position ([n_ctx]); else they are rings of
    // this many rows (family_cache_rows).
    std::vector<uint32_t> kv_ring;
};
// Rows of layer l's K and V caches for a context of n_ctx and batches of up to `batch` tokens: a
// sliding-window layer keeps only window + batch - 1 positions (as a ring) where that is fewer.
uint32_t family_cache_rows(const LlamaHParams& hp, uint32_t l, int n_ctx, int batch);
// Floats of each activation buffer per token: x, xb, tmp (E), qkv, att, gu, h; and of logits.
struct FamilySizes {
    uint64_t embd, qkv, att, gu, h, logits;
};
FamilySizes family_sizes(const LlamaHParams& hp);

// The forward pass of n tokens (at most the buffers' batch; the step buffer holds their position
// and ids): embeddings, every layer, then the logits of the last token in b.logits.
Status record_family_forward(Recorder& rec, const FamilyModel& m, const FamilyBuffers& b, int n);

}  // namespace ember::vulkan
