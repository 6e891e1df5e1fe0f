// mkmodel's model descriptions: real models' shapes per architecture, the metadata llama.cpp's
// converter writes for each, and the list of tensors a file of that shape holds.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ember/result.h"
#include "gguf/writer.h"

namespace ember::cli::mkmodel {

struct Shape {
    std::string arch = "llama";  // llama, qwen2, qwen3, gemma2, gemma3, phi3
    uint32_t embd = 0, layers = 0, heads = 0, kv_heads = 0;
    uint32_t head_dim = 0;  // 0: embd / heads; else written as attention.key_length
    uint32_t ffn = 0, vocab = 0, ctx = 2048;
    float rope_base = 10000.0f;
    float norm_eps = 1e-5f;
    bool tied = false;
    float llama3_rope = 0.0f;    // Llama 3.1+ rope scaling factor: a rope_freqs tensor (0: none)
    uint32_t swa = 0;            // attention.sliding_window (0: no key)
    float rope_base_swa = 0.0f;  // Gemma 3's local layers' base (0: no key)
    float rope_linear = 0.0f;    // linear rope scaling factor (0: none)
    uint32_t orig_ctx = 0;       // Phi-3 LongRoPE: original context (0: no rope factors;
                                 // --orig-ctx sets it)
    float yarn = 0.0f;           // YaRN factor over ctx, the original context (0: none)

    uint32_t head_size() const { return head_dim ? head_dim : embd / heads; }
};

// Presets by name ("qwen2.5-7b"): real models' shapes, with random weights.
const std::map<std::string, Shape>& presets();

// A clear error for a shape the architecture cannot have (after command-line overrides).
Status check_shape(const Shape& s);

// The architecture's hyperparameters, keyed as llama.cpp's convert_hf_to_gguf.py writes them
// for that architecture.
void write_hparams(gguf::Writer& w, const Shape& s);

// One tensor of the file: a matrix of random values (scale), a vector of random values around
// `center`, or fixed values.
struct TensorSpec {
    std::string name;
    std::vector<uint64_t> dims;  // ne0 first (a matrix's row length)
    float scale = 1.0f;          // matrices: values roughly uniform in [-scale, scale]
    float center = 0.0f;         // vectors: center + [-scale, scale]
    std::vector<float> values;   // fixed values (rope factors), when not empty
};

// Every tensor of the shape's architecture, named as llama.cpp names them.
std::vector<TensorSpec> tensor_list(const Shape& s);

}  // namespace ember::cli::mkmodel
