// What differs between the decoder families Ember runs, in one table (arch.cpp).
// Everything else (sizes, rope base, window, soft-caps) is read from the file's metadata.
#pragma once

#include <span>
#include <string_view>

namespace ember {

enum class Arch { Llama, Qwen2, Qwen3, Gemma2, Gemma3, Phi3 };

// How rope pairs the dimensions of a head. Norm: adjacent pairs (2i, 2i+1), because the
// converter permutes Llama's q/k rows. Neox: (i, i + n_rot/2), the Hugging Face layout.
enum class RopeMode { Norm, Neox };

// The gated FFN's activation: down(act(gate(x)) * up(x)).
enum class FfnAct { Silu, GeluTanh };

// Which layers attend over a sliding window of `attention.sliding_window` keys. No key states
// the pattern; these are llama.cpp's (and Hugging Face's) per-family rules.
enum class SwaPattern {
    None,        // no layer slides
    EvenLayers,  // Gemma 2: il % 2 == 0
    FiveOfSix,   // Gemma 3: il % 6 < 5 (five local layers, then one global)
    AllLayers,   // Phi-3: every layer, when the window is > 0
};

struct ArchTraits {
    Arch arch;
    const char* name;  // general.architecture
    RopeMode rope;
    bool qkv_bias;    // attn_q/k/v.bias added after the projections (Qwen 2)
    bool qk_norm;     // attn_q_norm/attn_k_norm: RMSNorm over each head before rope
    bool post_norms;  // post_attention_norm / post_ffw_norm before each residual add
    bool embd_scale;  // embeddings times sqrtf(n_embd)
    FfnAct act;
    bool softcaps;  // attn_logit_softcapping / final_logit_softcapping keys are read
    SwaPattern swa;
    bool swa_rope_base;  // sliding layers use rope.freq_base_swa (default 10000), no scaling
    bool fused_qkv;      // attn_qkv holds q rows, then k rows, then v rows
    bool fused_gate_up;  // ffn_up holds gate rows, then up rows (2 * n_ff)
    float rope_base;     // rope.freq_base when the key is absent
    // Layer count of the model whose attention scale is 1/sqrt(n_embd/n_head) instead of
    // 1/sqrt(head_dim) (Gemma 27B; llama.cpp decides it by size too); 0: none.
    unsigned n_layer_embd_scale;
};

// The traits of architecture `name`, or nullptr when Ember does not run it.
const ArchTraits* find_arch(std::string_view name);

// Every architecture Ember runs, in table order.
std::span<const ArchTraits> arch_table();

// "llama, qwen2, ..." for messages.
std::string_view supported_arch_list();

}  // namespace ember
