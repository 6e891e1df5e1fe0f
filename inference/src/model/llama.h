// The Llama-family model (architecture `llama`): hyperparameters and weight views into the GGUF.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ember/result.h"
#include "quant/types.h"

namespace ember {
namespace gguf { class File; }

struct LlamaHParams {
    uint32_t n_vocab = 0;
    uint32_t n_ctx_train = 0;
    uint32_t n_embd = 0;
    uint32_t n_layer = 0;
    uint32_t n_head = 0;
    uint32_t n_head_kv = 0;
    uint32_t n_ff = 0;
    uint32_t head_dim = 0;  // n_embd / n_head
    uint32_t n_rot = 0;     // rope.dimension_count, <= head_dim
    float rms_eps = 1e-5f;
    float rope_freq_base = 10000.0f;
    uint32_t n_kv_dim() const { return n_head_kv * head_dim; }
};

// A weight as it lies in the file. ne[0] is the row length (input dim for matrices).
struct Tensor {
    std::string name;
    GgmlType type = GgmlType::F32;
    int64_t ne[2] = {0, 1};      // [cols, rows]
    const uint8_t* data = nullptr;  // into the mapped file; nullptr once released
    uint64_t n_bytes = 0;
    uint64_t row_stride = 0;     // bytes per row
    int64_t cols() const { return ne[0]; }
    int64_t rows() const { return ne[1]; }
    bool present() const { return n_bytes != 0; }
};

struct LlamaLayer {
    Tensor attn_norm;  // [n_embd] f32
    Tensor wq;         // [n_embd -> n_head*head_dim]
    Tensor wk;         // [n_embd -> n_head_kv*head_dim]
    Tensor wv;         // [n_embd -> n_head_kv*head_dim]
    Tensor wo;         // [n_head*head_dim -> n_embd]
    Tensor ffn_norm;   // [n_embd] f32
    Tensor ffn_gate;   // [n_embd -> n_ff]
    Tensor ffn_up;     // [n_embd -> n_ff]
    Tensor ffn_down;   // [n_ff -> n_embd]
};

struct LlamaModel {
    LlamaHParams hp;
    Tensor tok_embd;     // [n_embd, n_vocab]: row t is token t's embedding
    Tensor output_norm;  // [n_embd] f32
    Tensor output;       // [n_embd -> n_vocab]; a copy of tok_embd's view when tied
    Tensor rope_freqs;   // [n_rot/2] f32 frequency divisors, optional
    bool tied_output = false;
    std::vector<LlamaLayer> layers;
    uint64_t weight_bytes = 0;  // sum over distinct tensors
};

// Reads hyperparameters (`llama.*` keys) and binds every tensor, checking shapes and types
// against the metadata. Errors name the tensor or key and what was expected.
Result<LlamaModel> load_llama(const gguf::File& file);

}  // namespace ember
