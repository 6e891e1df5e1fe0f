// A decoder-only transformer of any family in model/arch.h (the names say Llama because the
// Llama layout is the base the others vary): hyperparameters and weight views into the GGUF.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ember/result.h"
#include "model/arch.h"
#include "quant/types.h"

namespace ember {
namespace gguf {
class File;
}

// Values that differ between the layers of one model, computed at load.
struct LayerHParams {
    bool swa = false;              // attends only to the last n_swa keys (sliding window)
    float rope_base = 10000.0f;    // theta_i = pos * rope_freq_scale * base^(-2i/n_rot)
    float rope_freq_scale = 1.0f;  // 1 / rope.scaling.factor (linear or YaRN)
};

// YaRN (rope.scaling.type yarn): each pair's angle blends the scaled angle (interpolation)
// and the unscaled one (extrapolation) by a ramp over the pair index, as llama.cpp's
// rope_yarn and Hugging Face's _compute_yarn_parameters do.
struct YarnParams {
    float ext_factor = 0.0f;  // weight of the ramp; 0: no YaRN (plain or linear scaling)
    float beta_fast = 32.0f;  // rotations per original context where extrapolation ends
    float beta_slow = 1.0f;   // ... and where interpolation begins
};

struct LlamaHParams {
    const ArchTraits* arch = nullptr;  // set by load_model; see traits()
    uint32_t n_vocab = 0;
    uint32_t n_ctx_train = 0;
    uint32_t n_embd = 0;
    uint32_t n_layer = 0;
    uint32_t n_head = 0;
    uint32_t n_head_kv = 0;
    uint32_t n_ff = 0;
    uint32_t head_dim = 0;    // attention.key_length, else n_embd / n_head: q and k heads
    uint32_t head_dim_v = 0;  // attention.value_length, else head_dim: v and output heads
    uint32_t n_rot = 0;       // rope.dimension_count, <= head_dim (partial rotary when less)
    float rms_eps = 1e-5f;
    float rope_freq_base = 10000.0f;  // rope.freq_base (global layers)
    float rope_freq_scale = 1.0f;     // 1 / rope.scaling.factor (linear, YaRN), global layers
    uint32_t n_ctx_orig = 0;          // rope.scaling.original_context_length, else n_ctx_train
    // original_context_length x rope.scaling.factor where the file states both (linear or
    // YaRN), the context its RoPE scaling was made for; 0: none (see max_ctx)
    uint32_t n_ctx_scaled = 0;
    YarnParams yarn;                  // ext_factor 0 unless rope.scaling.type is yarn
    float rope_attn_factor = 1.0f;    // rope.scaling.attn_factor: cos and sin are scaled by it
    float attn_scale = 0.0f;          // applied to q.k; 1/sqrt(head_dim) unless the arch says
    float attn_softcap = 0.0f;        // cap * tanh(s / cap) on scaled scores; 0: none
    float final_softcap = 0.0f;       // the same on the logits; 0: none
    uint32_t n_swa = 0;               // attention.sliding_window; 0: no layer slides
    std::vector<LayerHParams> layer;  // [n_layer]
    uint32_t n_kv_dim() const { return n_head_kv * head_dim; }  // k rows (and v when equal)
    uint32_t n_q_dim() const { return n_head * head_dim; }
    uint32_t v_head() const { return head_dim_v ? head_dim_v : head_dim; }
    uint32_t n_v_dim() const { return n_head_kv * v_head(); }  // v rows
    uint32_t n_att_dim() const { return n_head * v_head(); }   // attention output, wo input
    // The longest context the model runs: context_length, or more where its RoPE scaling
    // extends it. Without an original context (linear scaling as Gemma 3 and most converters
    // write it, LongRoPE) context_length already counts the scaling.
    uint32_t max_ctx() const { return n_ctx_scaled > n_ctx_train ? n_ctx_scaled : n_ctx_train; }

    // These also serve models built by hand (tests, estimates), whose arch and layer are unset.
    const ArchTraits& traits() const;          // llama's when arch is null
    LayerHParams layer_hp(uint32_t il) const;  // layer[il], or the global values
    float attention_scale() const;             // attn_scale, or 1/sqrt(head_dim)
};

// A weight as it lies in the file. ne[0] is the row length (input dim for matrices).
struct Tensor {
    std::string name;
    GgmlType type = GgmlType::F32;
    int64_t ne[2] = {0, 1};         // [cols, rows]
    const uint8_t* data = nullptr;  // into the mapped file; nullptr once released
    uint64_t n_bytes = 0;
    uint64_t row_stride = 0;  // bytes per row
    int64_t cols() const { return ne[0]; }
    int64_t rows() const { return ne[1]; }
    bool present() const { return n_bytes != 0; }
};

// Absent tensors (present() false) are those the family does not use (see ArchTraits).
struct LlamaLayer {
    Tensor attn_norm;       // [n_embd] f32
    Tensor wq;              // [n_embd -> n_head*head_dim]
    Tensor wk;              // [n_embd -> n_head_kv*head_dim]
    Tensor wv;              // [n_embd -> n_head_kv*head_dim_v]
    Tensor wqkv;            // [n_embd -> q_dim + kv_dim + v_dim], fused_qkv instead of wq/wk/wv
    Tensor bq, bk, bv;      // [n_q_dim], [n_kv_dim], [n_v_dim] f32, qkv_bias
    Tensor q_norm;          // [head_dim] f32, qk_norm
    Tensor k_norm;          // [head_dim] f32, qk_norm
    Tensor wo;              // [n_head*head_dim_v -> n_embd]
    Tensor post_attn_norm;  // [n_embd] f32, post_norms
    Tensor ffn_norm;        // [n_embd] f32
    Tensor ffn_gate;        // [n_embd -> n_ff]
    Tensor ffn_up;          // [n_embd -> n_ff]
    Tensor ffn_gate_up;     // [n_embd -> 2*n_ff], gate rows first, fused_gate_up instead of gate/up
    Tensor ffn_down;        // [n_ff -> n_embd]
    Tensor post_ffn_norm;   // [n_embd] f32, post_norms
};

struct LlamaModel {
    LlamaHParams hp;
    Tensor tok_embd;     // [n_embd, n_vocab]: row t is token t's embedding
    Tensor output_norm;  // [n_embd] f32
    Tensor output;       // [n_embd -> n_vocab]; a copy of tok_embd's view when tied
    Tensor rope_freqs;   // [n_rot/2] f32 frequency divisors, optional
    // LongRoPE (Phi-3 long context): [n_rot/2] f32 divisors, the long ones when a session's
    // context exceeds hp.n_ctx_orig (llama.cpp's choice), else the short ones. Both or none.
    Tensor rope_long, rope_short;
    bool tied_output = false;
    std::vector<LlamaLayer> layers;
    uint64_t weight_bytes = 0;  // sum over distinct tensors

    // Every bound tensor, output and tok_embd once even when tied, in file-binding order.
    std::vector<const Tensor*> tensors() const;
    // The frequency divisors rope uses in a session of n_ctx tokens (rope_freqs, or LongRoPE's
    // long or short factors), or nullptr for none. The tensor is F32 [n_rot/2].
    const Tensor* rope_factors(int n_ctx) const;
};

// Reads hyperparameters (`<arch>.*` keys, strictly: a key of the wrong type or an impossible
// value is refused, naming the key) and binds every tensor, checking shapes and types against
// the metadata. Refuses architectures and rope scalings Ember does not run, naming them.
Result<LlamaModel> load_model(const gguf::File& file);
// The same; the name predates the other families.
inline Result<LlamaModel> load_llama(const gguf::File& file) {
    return load_model(file);
}

}  // namespace ember
