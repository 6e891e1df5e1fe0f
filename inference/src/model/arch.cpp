#include "model/arch.h"

#include <array>

#include "ember/ember.h"

namespace ember {
namespace {

using enum RopeMode;
using enum FfnAct;
using enum SwaPattern;

// One row per family. Read a column to see which families share a convention.
// clang-format off
constexpr std::array<ArchTraits, 6> kArchs{{
//   arch          name      rope  qkv    q/k    post   embd   act       soft-  swa         swa    fused  fused  rope      27B
//                                 bias   norm   norms  scale           caps                base   qkv    gate_up base   layers
    {Arch::Llama,  "llama",  Norm, false, false, false, false, Silu,     false, None,       false, false, false, 10000.0f, 0},
    {Arch::Qwen2,  "qwen2",  Neox, true,  false, false, false, Silu,     false, None,       false, false, false, 10000.0f, 0},
    {Arch::Qwen3,  "qwen3",  Neox, false, true,  false, false, Silu,     false, None,       false, false, false, 10000.0f, 0},
    {Arch::Gemma2, "gemma2", Neox, false, false, true,  true,  GeluTanh, true,  EvenLayers, false, false, false, 10000.0f, 46},
    {Arch::Gemma3, "gemma3", Neox, false, true,  true,  true,  GeluTanh, false, FiveOfSix,  true,  false, false, 10000.0f, 62},
    {Arch::Phi3,   "phi3",   Neox, false, false, false, false, Silu,     false, AllLayers,  false, true,  true,  10000.0f, 0},
}};
// clang-format on

}  // namespace

const ArchTraits* find_arch(std::string_view name) {
    for (const ArchTraits& t : kArchs)
        if (name == t.name) return &t;
    return nullptr;
}

std::span<const ArchTraits> arch_table() {
    return kArchs;
}

std::string_view supported_arch_list() {
    return "llama (Llama 2/3, Mistral, SmolLM), qwen2 (Qwen 2/2.5, DeepSeek-R1-Distill-Qwen), "
           "qwen3, gemma2, gemma3, phi3";
}

std::vector<std::string> supported_architectures() {
    std::vector<std::string> out;
    for (const ArchTraits& t : kArchs) out.emplace_back(t.name);
    return out;
}

}  // namespace ember
