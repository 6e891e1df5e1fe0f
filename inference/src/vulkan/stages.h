// The GPU forward pass as a typed list of stages, in llama2.c's order. The plan (and the
// weights) decide the list once per kind of step: fused decode kernels are stages of their own,
// not a second recording path. The same list drives the recording of a command buffer, the
// warm-up's set of pipelines (a recording without a command buffer) and the listing that
// `ember-cli devices --plan` prints (a recording without a device).
//
// Other architectures: their stage lists go beside llama_stages() (a function per family, in
// stages_<family>.cpp, picked in forward_stages()), reusing these ops and adding their own.
#pragma once

#include <cstdint>
#include <vector>

#include "model/llama.h"
#include "vulkan/ops.h"

namespace ember::vulkan {

// The weights of one layer on the device (E = n_embd, Dq = n_head * head_dim,
// Dkv = n_head_kv * head_dim, F = n_ff, V = n_vocab; matrices are [rows][cols] = [out][in]).
struct DeviceLayer {
    const DeviceTensor* attn_norm;     // [E] F32
    const DeviceTensor *wq, *wk, *wv;  // [Dq][E], [Dkv][E], [Dkv][E]
    const DeviceTensor* wo;            // [E][Dq]
    const DeviceTensor* ffn_norm;      // [E] F32
    const DeviceTensor *gate, *up;     // [F][E]
    const DeviceTensor* down;          // [E][F]
    // The other families' tensors (stages_family.cpp), nullptr where absent; wq/wk/wv or
    // gate/up are too where the fused ones replace them.
    const DeviceTensor* wqkv = nullptr;                              // [Dq + 2 Dkv][E] (Phi-3)
    const DeviceTensor *bq = nullptr, *bk = nullptr, *bv = nullptr;  // [Dq], [Dkv], [Dkv] F32
    const DeviceTensor *q_norm = nullptr, *k_norm = nullptr;         // [head_dim] F32
    const DeviceTensor* post_attn_norm = nullptr;                    // [E] F32 (Gemma)
    const DeviceTensor* gate_up = nullptr;                           // [2F][E] (Phi-3)
    const DeviceTensor* post_ffn_norm = nullptr;                     // [E] F32 (Gemma)
};

struct DeviceModel {
    LlamaHParams hp;
    const DeviceTensor* tok_embd = nullptr;     // [V][E]
    const DeviceTensor* output_norm = nullptr;  // [E] F32
    const DeviceTensor* output = nullptr;       // [V][E] (may be tok_embd)
    const DeviceTensor* rope_freqs = nullptr;   // [n_rot / 2] F32, optional
    // Phi-3 LongRoPE's factors [n_rot / 2] F32 (both or neither): a runner picks one set by
    // its context (family_rope_factors) into Buffers::rope_ff.
    const DeviceTensor *rope_long = nullptr, *rope_short = nullptr;
    // Per layer; partial offload: layers before first_layer run on the CPU, and theirs are
    // placeholders (copies of first_layer's, never recorded: from_hidden drops their stages).
    std::vector<DeviceLayer> layers;
    uint32_t first_layer = 0;
    // What the plan says for this adapter; every recording follows it.
    Plan plan;
    // Decode runs the fused kernels (matvec_fused*.comp) where the plan and the weights allow.
    bool fused_layers = false, fused_output = false;
    // weight_scratch_bytes() of the model on this adapter: what a runner of prompt batches
    // reserves.
    uint64_t weight_scratch = 0;
};

// The buffers a forward pass binds. B = the runner's batch capacity, n <= B the step's tokens.
struct Buffers {
    BufferRange x;       // [B][E] the residual stream
    BufferRange xb;      // [B][E] x normed: Q/K/V's and gate/up's input
    BufferRange q;       // [B][Dq] queries (RoPE in place)
    BufferRange k, v;    // [B][Dkv] the batch's keys and values before the F16 cache
    BufferRange att;     // [B][Dq] attention output
    BufferRange tmp;     // [B][E] Wo's or down's output before the residual add
    BufferRange g;       // [max(B, 2)][F] gate, then SiLU(gate) * up; fused decode [gate; up]
    BufferRange u;       // [B][F] up
    BufferRange logits;  // [V] the last token's logits
    BufferRange result;  // [1] uint: argmax of the logits
    BufferRange step;    // position, token count, token ids [B], decode attention grid [3]
    // F16 copies for the tensor cores (size 0: none; a size without a buffer: a recording
    // that binds nothing).
    BufferRange xh;  // [B][max(E, Dq, F)] F16: prompt matmuls' input
    BufferRange wh;  // F16 rows of weights whose type the tensor cores cannot read
    // Decode attention split over positions: partials [n_head][split][2 + head_dim] and
    // per-head counters [n_head] uint; attn_split: most runs per head (0: not split).
    BufferRange attn_part, attn_count;
    uint32_t attn_split = 0;
    BufferRange attn_grid;  // [3] uint in `step`: the split attention's workgroups this step
    // [n_head + n_head_kv] uint after attn_count's (zeroed with it, left at zero): the fused
    // Q/K/V's count of each head's rows (FusedMatvec::head_count).
    BufferRange head_count;
    // [n_head + n_head_kv][head_dim / 2]: a decode step's q/k norms' sums of squares, where the
    // family has q/k norms (family_qk_ss_floats; FusedMatvec::defer_qk_norm).
    BufferRange qk_ss;
    std::vector<BufferRange> k_cache, v_cache;  // per layer [n_ctx][Dkv] F16
    // Per layer (family stages): > 0 where its caches are a ring of this many rows (a sliding
    // window's layer keeps window + B - 1 positions; family_kv_ring).
    std::vector<uint32_t> kv_ring;
    BufferRange wide;      // [B][max(Dq + 2 Dkv, 2F)]: a fused attn_qkv's or ffn_up's rows (Phi-3)
    BufferRange rope_ff;   // [n_rot / 2] the runner's LongRoPE factors (none: rope_freqs, if any)
    BufferRange readback;  // host-visible [V] floats or [1] token id
    BufferRange input;     // host-visible [B][E]: the residual stream from the CPU's layers
};

// What a step returns.
enum class Output { None, Logits, Argmax };

// One kind of step: its tokens, what it returns, and whether the decode attention takes one
// run per head (a short context), so that the output projection can fuse into it.
struct Step {
    int n = 1;
    Output out = Output::Logits;
    bool short_context = false;
};

// One stage: a dispatch (or a few independent ones) and the barrier after it. Shapes in
// llama2.c's names; l: the stage's layer.
enum class StageOp : uint8_t {
    Embed,        // x[n][E] = tok_embd[token]
    AttnNorm,     // xb[n][E] = rmsnorm(x) * attn_norm (first layer; later ones: AddAttnNorm)
    Qkv,          // q[n][Dq], k[n][Dkv], v[n][Dkv] = Wq, Wk, Wv xb
    RopeKvStore,  // RoPE on q and k; k, v to the F16 caches at the step's positions
    Attention,    // att[n][Dq] = softmax(q K^T / sqrt(hd)) V over positions [0, pos + t]
    Wo,           // tmp[n][E] = Wo att
    AddFfnNorm,   // x += tmp; xb = rmsnorm(x) * ffn_norm
    GateUp,       // g[n][F], u[n][F] = Wgate xb, Wup xb
    SiluMul,      // g = SiLU(g) * u
    Down,         // tmp[n][E] = Wdown g
    AddAttnNorm,  // x += tmp; xb = rmsnorm(x) * next layer's attn_norm
    Add,          // x += tmp (the last layer)
    // Fused decode (one token, matvec_fused*.comp):
    FusedQkv,     // q, K/V cache row = RoPE(Wq|Wk|Wv rmsnorm(x)) (embedding folded in: l 0)
    FusedWo,      // x += Wo att
    AttentionWo,  // x += Wo attention(q, K, V) in one dispatch (short contexts)
    FusedGateUp,  // g = SiLU(Wgate xn) * (Wup xn), or [gate; up] apart, xn = rmsnorm(x)
    FusedDown,    // x += Wdown g (SiLU(gate) * up taken here where gate/up is apart)
    // The head:
    OutputHead,    // logits[V] = Wout rmsnorm(x[n - 1]) (straight to readback: OutputDirect)
    OutputDirect,  // readback[V] = Wout rmsnorm(x[n - 1]), no copy after it
    Argmax,        // result = argmax(logits)
    Readback,      // readback = logits or result
    Input,         // x[n][E] = input (partial offload: the CPU ran the layers before)
    // The other families (stages_family.cpp; Family* ops only there):
    FamilyEmbedScale,    // x *= sqrtf(E) (Gemma)
    FamilyAttnNorm,      // xb = rmsnorm(x) * attn_norm
    FamilyQkv,           // q, k, v = Wq, Wk, Wv xb; wide[n][Dq + 2 Dkv] = Wqkv xb (Phi-3)
    FamilyQkvRope,       // + bias, q/k head norms, RoPE (either layout), k, v to the caches
    FamilyAttention,     // att = softmax(softcap(scale q K^T)) V over the layer's window
    FamilyWo,            // tmp = Wo att
    FamilyPostAttnNorm,  // xb = rmsnorm(tmp) * post_attention_norm (Gemma)
    FamilyAttnResidual,  // x += tmp (or xb)
    FamilyFfnNorm,       // xb = rmsnorm(x) * ffn_norm
    FamilyGateUp,        // g, u = Wgate xb, Wup xb; wide[n][2F] = Wgate_up xb (Phi-3)
    FamilyGlu,           // g = act(gate) * up: SiLU or GELU-tanh (Gemma)
    FamilyDown,          // tmp = Wdown g
    FamilyPostFfnNorm,   // xb = rmsnorm(tmp) * post_ffw_norm (Gemma)
    FamilyFfnResidual,   // x += tmp (or xb)
    FamilySoftcap,       // logits = cap * tanh(logits / cap) (Gemma 2)
    // The families' decode on the fused kernels (stages_family_decode.cpp; one token):
    FamDecQkv,           // q, k, v = Wq, Wk, Wv rmsnorm(x); wide = Wqkv rmsnorm(x) (Phi-3)
    FamDecAttention,     // att = softmax(softcap(scale q K^T)) V, split over the window's positions
    FamDecAttentionWo,   // x += Wo attention(q, K, V) in one dispatch; tmp (Gemma) (short contexts)
    FamDecWo,            // x += Wo att; tmp = Wo att where a post-norm follows (Gemma)
    FamDecGateUp,        // g = act(Wgate xn) * (Wup xn), or [gate; up] apart, xn = rmsnorm(x)
    FamDecDown,          // x += Wdown g (act(gate) * up taken here where apart); tmp (Gemma)
    FamDecAttnPostNorm,  // x += rmsnorm(tmp) * post_attention_norm (Gemma)
    FamDecFfnPostNorm,   // x += rmsnorm(tmp) * post_ffw_norm (Gemma)
};

struct Stage {
    StageOp op;
    uint32_t layer = 0;
    const char* label = "";  // names the stage in a GPU profile and in the plan's listing
    bool embed = false;      // FusedQkv of layer 0: looks the token up itself (no Embed stage)
};

// The stages of a step of this model, as the plan and the weights decide (rec: the adapter
// and the plan).
std::vector<Stage> forward_stages(const Recorder& rec, const DeviceModel& m, const Step& step);

// Records the stages (the step buffer holds the position and the token ids).
Status record_stages(Recorder& rec, const DeviceModel& m, const Buffers& b, const Step& step,
                     const std::vector<Stage>& stages);

// Whether every one of the matmuls ws present (null ones are skipped; at least one) reads an
// F16 copy of its input, so that the dispatch producing it can write F16 alone (no copy of its
// output) into b.xh.
bool all_read_f16(const Recorder& rec, const Buffers& b, int n,
                  std::initializer_list<const DeviceTensor*> ws);

AttentionShape attention_shape(const LlamaHParams& hp, int n);

// The model's widths in llama2.c's names.
struct Dims {
    uint32_t E, Dq, Dkv, F, V;
};
Dims dims_of(const LlamaHParams& hp);

}  // namespace ember::vulkan
