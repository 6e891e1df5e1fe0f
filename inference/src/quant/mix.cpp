#include "quant/mix.h"

#include <cctype>
#include <cstdio>

namespace ember {
namespace {

// Names as llama-quantize takes them. "Q4_K" and "Q5_K" are not llama.cpp file types: they are
// Ember's names for every matrix in one K type, which is what `llama-quantize --pure` makes of
// Q4_K_S and Q5_K_S (and the general.file_type it writes).
struct NamedType {
    FileTypeInfo info;
    bool always_pure;
};
constexpr NamedType kFileTypes[] = {
    {{"F32", FileType::AllF32, GgmlType::F32}, false},
    {{"F16", FileType::F16, GgmlType::F16}, false},
    {{"BF16", FileType::BF16, GgmlType::BF16}, false},
    {{"Q8_0", FileType::Q8_0, GgmlType::Q8_0}, false},
    {{"Q4_0", FileType::Q4_0, GgmlType::Q4_0}, false},
    {{"Q4_1", FileType::Q4_1, GgmlType::Q4_1}, false},
    {{"Q5_0", FileType::Q5_0, GgmlType::Q5_0}, false},
    {{"Q5_1", FileType::Q5_1, GgmlType::Q5_1}, false},
    {{"Q4_K_S", FileType::Q4_K_S, GgmlType::Q4_K}, false},
    {{"Q4_K_M", FileType::Q4_K_M, GgmlType::Q4_K}, false},
    {{"Q5_K_S", FileType::Q5_K_S, GgmlType::Q5_K}, false},
    {{"Q5_K_M", FileType::Q5_K_M, GgmlType::Q5_K}, false},
    {{"Q6_K", FileType::Q6_K, GgmlType::Q6_K}, false},
    {{"Q4_K", FileType::Q4_K_S, GgmlType::Q4_K}, true},
    {{"Q5_K", FileType::Q5_K_S, GgmlType::Q5_K}, true},
};

bool is_pure_name(std::string_view name) {
    for (const auto& t : kFileTypes)
        if (t.info.name == name) return t.always_pure;
    return false;
}

bool contains(std::string_view s, std::string_view part) {
    return s.find(part) != s.npos;
}

// The N of "blk.N.", or -1.
int layer_of(std::string_view name) {
    int il = -1;
    const std::string s(name);
    if (std::sscanf(s.c_str(), "blk.%d.", &il) != 1) return -1;
    return il;
}

// llama.cpp's use_more_bits: the first and last eighth of the layers, and every third layer
// between them.
bool use_more_bits(int il, int n) {
    return il < n / 8 || il >= 7 * n / 8 || (il - n / 8) % 3 == 2;
}

uint32_t block_of(GgmlType t) {
    return type_traits(t)->block_elems;
}

// llama.cpp's model type "70B" (LLM_TYPE_70B), which raises attn_v from Q4_K to Q5_K.
bool is_70b(const MixModel& m) {
    if (m.n_layer != 80) return false;
    if (m.arch == "llama") return m.n_head != m.n_head_kv;  // 80 layers, MHA: "65B"
    return m.arch == "qwen2";
}

// The type before the row-length fallback: llama_tensor_get_type's choices for the file types
// above, on a dense model (no experts), without an importance matrix or --output-tensor-type.
GgmlType chosen_type(FileType ft, GgmlType base, const MixModel& m, std::string_view name,
                     uint64_t ne0) {
    const int il = layer_of(name), n = int(m.n_layer);
    const bool km = ft == FileType::Q4_K_M || ft == FileType::Q5_K_M;
    // The output layer, or token_embd where it doubles as the output: Q6_K (Q8_0 stays Q8_0),
    // or Q8_0 where the row is not a whole number of the base type's blocks.
    if (name == "output.weight" || (!m.has_output && name == "token_embd.weight")) {
        if (ne0 % block_of(base) != 0) return GgmlType::Q8_0;
        return base == GgmlType::Q8_0 ? GgmlType::Q8_0 : GgmlType::Q6_K;
    }
    if (name == "token_embd.weight") return base;
    if (contains(name, "attn_v.weight")) {
        // llama.cpp counts attn_v tensors in layer order: the count is the layer index.
        GgmlType t = base;
        if (km && use_more_bits(il, n))
            t = GgmlType::Q6_K;
        else if (ft == FileType::Q4_K_S && il < 4)
            t = GgmlType::Q5_K;
        // 70B: 8 query heads share each V head, so more bits cost little.
        if (is_70b(m) && t == GgmlType::Q4_K) t = GgmlType::Q5_K;
        return t;
    }
    if (contains(name, "ffn_down")) {
        if (km && use_more_bits(il, n)) return GgmlType::Q6_K;
        if (ft == FileType::Q4_K_S && il < n / 8) return GgmlType::Q5_K;
        return base;
    }
    if (contains(name, "attn_qkv.weight")) {  // fused q/k/v (Phi-3)
        if (ft == FileType::Q4_K_M) return GgmlType::Q5_K;
        if (ft == FileType::Q5_K_M) return GgmlType::Q6_K;
    }
    return base;
}

}  // namespace

std::optional<FileTypeInfo> find_file_type(std::string_view name) {
    std::string upper(name);
    for (auto& c : upper) c = char(std::toupper((unsigned char)c));
    for (const auto& t : kFileTypes)
        if (t.info.name == upper) return t.info;
    return std::nullopt;
}

Result<GgmlType> llamacpp_tensor_type(const FileTypeInfo& ft, const MixModel& m,
                                      std::string_view name, uint64_t ne0, int n_dims, bool pure) {
    // Only matrices are quantized; the converter writes vectors (norms, biases, rope factors)
    // in F32, and llama-quantize keeps them.
    const bool matrix = n_dims >= 2 && name.size() >= 6 &&
                        name.substr(name.size() - 6) == "weight" && !contains(name, "_norm.weight");
    if (!matrix) return GgmlType::F32;
    const auto bad = [&](GgmlType t) {
        return make_error("quant.bad_row_length",
                          "tensor '" + std::string(name) + "' has rows of " + std::to_string(ne0) +
                              " elements, not a multiple of the " + std::to_string(block_of(t)) +
                              " that " + std::string(type_name(t)) +
                              " needs (llama.cpp refuses it too)");
    };
    const bool quantized = block_of(ft.base) > 1;
    if (pure || is_pure_name(ft.name) || !quantized) {
        if (ne0 % block_of(ft.base) != 0) return bad(ft.base);
        return ft.base;
    }
    GgmlType t = chosen_type(ft.ftype, ft.base, m, name, ne0);
    if (ne0 % block_of(t) == 0) return t;
    // llama.cpp's fallbacks for a row that is not a whole number of super-blocks.
    GgmlType fb;
    switch (t) {
        case GgmlType::Q4_K:
            fb = GgmlType::Q5_0;
            break;
        case GgmlType::Q5_K:
            fb = GgmlType::Q5_1;
            break;
        case GgmlType::Q6_K:
            fb = GgmlType::Q8_0;
            break;
        default:
            return bad(t);
    }
    return ne0 % block_of(fb) == 0 ? fb : GgmlType::F16;
}

}  // namespace ember
