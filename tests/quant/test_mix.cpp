// The per-tensor types of llama.cpp's file types (Q4_K_M, ...), on real models' shapes. Every
// expected type below was worked out by hand from llama.cpp's src/llama-quant.cpp
// (llama_tensor_get_type and its row-length fallbacks, build b4748), not from Ember's code.
// Cross-check: llama-quantize b4748 of mkmodel F16 files (Llama 2 7B, Qwen2.5 7B, Phi-3.5 mini
// and an 80-layer GQA Llama, each 256 wide with the real layer count, in Q4_K_M; Qwen2.5 0.5B at
// 896 wide in Q4_K_M, Q5_K_M, Q6_K, Q8_0 and Q4_0) gave every tensor the type mkmodel gives it.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "quant/mix.h"

using namespace ember;

namespace {

struct Shape {
    const char* arch;
    uint32_t layers, heads, kv_heads, embd, q_dim, ffn;
    bool tied;
};

Shape shape_of(const std::string& model) {
    if (model == "llama2-7b") return {"llama", 32, 32, 32, 4096, 4096, 11008, false};
    if (model == "llama3.1-8b") return {"llama", 32, 32, 8, 4096, 4096, 14336, false};
    if (model == "llama3-70b") return {"llama", 80, 64, 8, 8192, 8192, 28672, false};
    if (model == "qwen2.5-7b") return {"qwen2", 28, 28, 4, 3584, 3584, 18944, false};
    if (model == "qwen2.5-0.5b") return {"qwen2", 24, 14, 2, 896, 896, 4864, true};
    if (model == "gemma3-4b") return {"gemma3", 34, 8, 4, 2560, 2048, 10240, true};
    if (model == "phi3.5-mini") return {"phi3", 32, 32, 32, 3072, 3072, 8192, false};
    ADD_FAILURE() << "no shape " << model;
    return {};
}

// The tensor's name in layer `layer` (-1: a global tensor) and its row length (ne0).
std::string full_name(const std::string& tensor, int layer) {
    const std::string suffix = tensor.find('.') == std::string::npos ? ".weight" : "";
    return (layer < 0 ? "" : "blk." + std::to_string(layer) + ".") + tensor + suffix;
}

uint64_t row_length(const Shape& s, const std::string& tensor) {
    if (tensor == "attn_output") return s.q_dim;
    if (tensor == "ffn_down") return s.ffn;
    return s.embd;
}

Result<GgmlType> type_for(const std::string& ftype, const std::string& model,
                          const std::string& tensor, int layer, int n_dims = 2) {
    const Shape s = shape_of(model);
    auto ft = find_file_type(ftype);
    EXPECT_TRUE(ft.has_value()) << ftype;
    MixModel m{s.arch, s.layers, s.heads, s.kv_heads, !s.tied};
    return llamacpp_tensor_type(*ft, m, full_name(tensor, layer), row_length(s, tensor), n_dims);
}

struct Row {
    const char* ftype;
    const char* model;
    const char* tensor;
    int layer;
    GgmlType want;
};

// (file type, model shape, tensor, layer) -> type.
const Row kTable[] = {
    // Llama 2 7B (32 layers, MHA): Q6_K output; Q6_K attn_v and ffn_down where use_more_bits
    // (layers < 4, >= 28, and 6, 9, ..., 27); Q4_K elsewhere, token_embd included.
    {"Q4_K_M", "llama2-7b", "output", -1, GgmlType::Q6_K},
    {"Q4_K_M", "llama2-7b", "token_embd", -1, GgmlType::Q4_K},
    {"Q4_K_M", "llama2-7b", "attn_v", 0, GgmlType::Q6_K},
    {"Q4_K_M", "llama2-7b", "attn_v", 3, GgmlType::Q6_K},
    {"Q4_K_M", "llama2-7b", "attn_v", 4, GgmlType::Q4_K},
    {"Q4_K_M", "llama2-7b", "attn_v", 5, GgmlType::Q4_K},
    {"Q4_K_M", "llama2-7b", "attn_v", 6, GgmlType::Q6_K},
    {"Q4_K_M", "llama2-7b", "attn_v", 7, GgmlType::Q4_K},
    {"Q4_K_M", "llama2-7b", "attn_v", 26, GgmlType::Q4_K},
    {"Q4_K_M", "llama2-7b", "attn_v", 27, GgmlType::Q6_K},
    {"Q4_K_M", "llama2-7b", "attn_v", 28, GgmlType::Q6_K},
    {"Q4_K_M", "llama2-7b", "attn_v", 31, GgmlType::Q6_K},
    {"Q4_K_M", "llama2-7b", "ffn_down", 2, GgmlType::Q6_K},
    {"Q4_K_M", "llama2-7b", "ffn_down", 8, GgmlType::Q4_K},
    {"Q4_K_M", "llama2-7b", "ffn_down", 9, GgmlType::Q6_K},
    {"Q4_K_M", "llama2-7b", "attn_q", 0, GgmlType::Q4_K},
    {"Q4_K_M", "llama2-7b", "attn_k", 31, GgmlType::Q4_K},
    {"Q4_K_M", "llama2-7b", "attn_output", 0, GgmlType::Q4_K},
    {"Q4_K_M", "llama2-7b", "ffn_gate", 0, GgmlType::Q4_K},
    {"Q4_K_M", "llama2-7b", "ffn_up", 31, GgmlType::Q4_K},
    {"Q4_K_M", "llama2-7b", "attn_norm", 0, GgmlType::F32},
    {"Q4_K_M", "llama2-7b", "rope_freqs", -1, GgmlType::F32},
    // Llama 3.1 8B (GQA 32/8): the same layers; for Q4_K_M llama.cpp's attn_v rule does not
    // look at GQA (only Q2_K and the IQ types do).
    {"Q4_K_M", "llama3.1-8b", "attn_v", 4, GgmlType::Q4_K},
    {"Q4_K_M", "llama3.1-8b", "attn_v", 6, GgmlType::Q6_K},
    {"Q4_K_M", "llama3.1-8b", "ffn_down", 30, GgmlType::Q6_K},
    // Llama 3 70B (80 layers, GQA): model type 70B raises attn_v from Q4_K to Q5_K.
    {"Q4_K_M", "llama3-70b", "attn_v", 10, GgmlType::Q5_K},
    {"Q4_K_M", "llama3-70b", "attn_v", 12, GgmlType::Q6_K},
    {"Q4_K_M", "llama3-70b", "ffn_down", 10, GgmlType::Q4_K},
    // Qwen2.5 7B (28 layers: < 3, >= 24, and 5, 8, ..., 23). 18,944 = 74 x 256: no fallback.
    {"Q4_K_M", "qwen2.5-7b", "attn_v", 2, GgmlType::Q6_K},
    {"Q4_K_M", "qwen2.5-7b", "attn_v", 3, GgmlType::Q4_K},
    {"Q4_K_M", "qwen2.5-7b", "attn_v", 5, GgmlType::Q6_K},
    {"Q4_K_M", "qwen2.5-7b", "attn_v", 22, GgmlType::Q4_K},
    {"Q4_K_M", "qwen2.5-7b", "attn_v", 24, GgmlType::Q6_K},
    {"Q4_K_M", "qwen2.5-7b", "ffn_down", 23, GgmlType::Q6_K},
    {"Q4_K_M", "qwen2.5-7b", "ffn_down", 4, GgmlType::Q4_K},
    {"Q4_K_M", "qwen2.5-7b", "output", -1, GgmlType::Q6_K},
    {"Q4_K_M", "qwen2.5-7b", "attn_q.bias", 0, GgmlType::F32},
    // Qwen2.5 0.5B: tied, and 896 columns are not a multiple of 256: token_embd (the output)
    // Q8_0; Q4_K falls back to Q5_0 and Q6_K to Q8_0. ffn_down's 4,864 = 19 x 256 does not.
    {"Q4_K_M", "qwen2.5-0.5b", "token_embd", -1, GgmlType::Q8_0},
    {"Q4_K_M", "qwen2.5-0.5b", "attn_q", 0, GgmlType::Q5_0},
    {"Q4_K_M", "qwen2.5-0.5b", "attn_v", 0, GgmlType::Q8_0},
    {"Q4_K_M", "qwen2.5-0.5b", "attn_v", 3, GgmlType::Q5_0},
    {"Q4_K_M", "qwen2.5-0.5b", "attn_output", 3, GgmlType::Q5_0},
    {"Q4_K_M", "qwen2.5-0.5b", "ffn_down", 0, GgmlType::Q6_K},
    {"Q4_K_M", "qwen2.5-0.5b", "ffn_down", 3, GgmlType::Q4_K},
    // Gemma 3 4B: tied, so token_embd is quantized as the output (Q6_K); 34 layers: < 4,
    // >= 29, and 6, 9, ..., 27.
    {"Q4_K_M", "gemma3-4b", "token_embd", -1, GgmlType::Q6_K},
    {"Q4_K_M", "gemma3-4b", "attn_v", 4, GgmlType::Q4_K},
    {"Q4_K_M", "gemma3-4b", "attn_v", 27, GgmlType::Q6_K},
    {"Q4_K_M", "gemma3-4b", "attn_v", 28, GgmlType::Q4_K},
    {"Q4_K_M", "gemma3-4b", "attn_v", 29, GgmlType::Q6_K},
    {"Q4_K_M", "gemma3-4b", "attn_output", 0, GgmlType::Q4_K},
    {"Q4_K_M", "gemma3-4b", "attn_q_norm", 0, GgmlType::F32},
    // Phi-3.5 mini: the fused attn_qkv is Q5_K in every layer; the fused ffn_up stays Q4_K.
    {"Q4_K_M", "phi3.5-mini", "attn_qkv", 0, GgmlType::Q5_K},
    {"Q4_K_M", "phi3.5-mini", "attn_qkv", 10, GgmlType::Q5_K},
    {"Q4_K_M", "phi3.5-mini", "ffn_up", 0, GgmlType::Q4_K},
    {"Q4_K_M", "phi3.5-mini", "ffn_down", 0, GgmlType::Q6_K},
    {"Q4_K_M", "phi3.5-mini", "ffn_down", 4, GgmlType::Q4_K},
    {"Q4_K_M", "phi3.5-mini", "output", -1, GgmlType::Q6_K},
    {"Q4_K_M", "phi3.5-mini", "rope_factors_long", -1, GgmlType::F32},
    // Q5_K_M: the same layers, Q5_K elsewhere; attn_qkv Q6_K.
    {"Q5_K_M", "llama2-7b", "attn_v", 0, GgmlType::Q6_K},
    {"Q5_K_M", "llama2-7b", "attn_v", 4, GgmlType::Q5_K},
    {"Q5_K_M", "llama2-7b", "ffn_down", 4, GgmlType::Q5_K},
    {"Q5_K_M", "llama2-7b", "ffn_down", 31, GgmlType::Q6_K},
    {"Q5_K_M", "llama2-7b", "output", -1, GgmlType::Q6_K},
    {"Q5_K_M", "llama2-7b", "token_embd", -1, GgmlType::Q5_K},
    {"Q5_K_M", "phi3.5-mini", "attn_qkv", 5, GgmlType::Q6_K},
    {"Q5_K_M", "qwen2.5-0.5b", "attn_q", 0, GgmlType::Q5_1},
    // Q4_K_S: Q5_K attn_v in the first 4 layers, Q5_K ffn_down in the first eighth.
    {"Q4_K_S", "llama2-7b", "attn_v", 3, GgmlType::Q5_K},
    {"Q4_K_S", "llama2-7b", "attn_v", 4, GgmlType::Q4_K},
    {"Q4_K_S", "llama2-7b", "ffn_down", 3, GgmlType::Q5_K},
    {"Q4_K_S", "llama2-7b", "ffn_down", 4, GgmlType::Q4_K},
    {"Q4_K_S", "llama2-7b", "output", -1, GgmlType::Q6_K},
    // Q6_K and Q8_0 whole files: one type, but a Q6_K row that is not 256-aligned is Q8_0.
    {"Q6_K", "llama2-7b", "attn_v", 4, GgmlType::Q6_K},
    {"Q6_K", "llama2-7b", "output", -1, GgmlType::Q6_K},
    {"Q6_K", "qwen2.5-0.5b", "token_embd", -1, GgmlType::Q8_0},
    {"Q6_K", "qwen2.5-0.5b", "attn_q", 0, GgmlType::Q8_0},
    {"Q6_K", "qwen2.5-0.5b", "ffn_down", 0, GgmlType::Q6_K},
    {"Q8_0", "llama2-7b", "output", -1, GgmlType::Q8_0},
    {"Q8_0", "llama2-7b", "attn_v", 0, GgmlType::Q8_0},
    {"Q8_0", "gemma3-4b", "token_embd", -1, GgmlType::Q8_0},
    // Q4_0: a Q6_K output (Q8_0 where the row is not 256-aligned), Q4_0 elsewhere.
    {"Q4_0", "llama2-7b", "output", -1, GgmlType::Q6_K},
    {"Q4_0", "llama2-7b", "token_embd", -1, GgmlType::Q4_0},
    {"Q4_0", "llama2-7b", "attn_v", 0, GgmlType::Q4_0},
    {"Q4_0", "qwen2.5-0.5b", "token_embd", -1, GgmlType::Q8_0},
    {"Q4_0", "gemma3-4b", "token_embd", -1, GgmlType::Q6_K},
    // F16: every matrix F16, vectors F32. "Q4_K" (--pure Q4_K_S): every matrix Q4_K.
    {"F16", "llama2-7b", "output", -1, GgmlType::F16},
    {"F16", "llama2-7b", "ffn_norm", 3, GgmlType::F32},
    {"Q4_K", "llama2-7b", "output", -1, GgmlType::Q4_K},
    {"Q4_K", "llama2-7b", "attn_v", 0, GgmlType::Q4_K},
};

TEST(LlamaCppMix, TableFromLlamaCppSource) {
    for (const Row& r : kTable) {
        const std::string what =
            std::string(r.ftype) + " " + r.model + " " + full_name(r.tensor, r.layer);
        const bool vector = std::string(r.tensor).find("norm") != std::string::npos ||
                            std::string(r.tensor).find("bias") != std::string::npos ||
                            std::string(r.tensor).rfind("rope_", 0) == 0;
        auto t = type_for(r.ftype, r.model, r.tensor, r.layer, vector ? 1 : 2);
        ASSERT_TRUE(t.ok()) << what << ": " << t.error().message;
        EXPECT_EQ(type_name(*t), type_name(r.want)) << what;
    }
}

// Every layer of two shapes: the Q6_K layers of attn_v and ffn_down in Q4_K_M.
TEST(LlamaCppMix, MoreBitsLayersOfWholeModels) {
    const std::set<int> llama32 = {0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31};
    const std::set<int> qwen28 = {0, 1, 2, 5, 8, 11, 14, 17, 20, 23, 24, 25, 26, 27};
    for (const auto& [model, want] :
         {std::pair{"llama2-7b", llama32}, {"llama3.1-8b", llama32}, {"qwen2.5-7b", qwen28}}) {
        const Shape s = shape_of(model);
        for (int il = 0; il < int(s.layers); il++)
            for (const char* tensor : {"attn_v", "ffn_down"}) {
                auto t = type_for("Q4_K_M", model, tensor, il);
                ASSERT_TRUE(t.ok());
                EXPECT_EQ(type_name(*t),
                          type_name(want.count(il) ? GgmlType::Q6_K : GgmlType::Q4_K))
                    << model << " layer " << il << " " << tensor;
            }
    }
}

TEST(LlamaCppMix, RowsTooShortForAnyBlock) {
    auto q4km = *find_file_type("q4_k_m");
    MixModel m{"llama", 2, 4, 2, true};
    // 48 columns: Q4_K and its fallback Q5_0 both need more, so llama.cpp keeps F16.
    auto t = llamacpp_tensor_type(q4km, m, "blk.1.attn_q.weight", 48, 2);
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(*t, GgmlType::F16);
    // 100 columns: Q4_0 has no fallback and the output's Q8_0 has none: refused, as llama.cpp
    // refuses ("Unsupported tensor size").
    auto q40 = *find_file_type("Q4_0");
    auto bad = llamacpp_tensor_type(q40, m, "blk.0.ffn_up.weight", 100, 2);
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message.find("'blk.0.ffn_up.weight' has rows of 100"), std::string::npos)
        << bad.error().message;
    EXPECT_FALSE(llamacpp_tensor_type(q4km, m, "output.weight", 100, 2).ok());
    // --pure: the base type everywhere, and no fallback.
    auto pure = llamacpp_tensor_type(q4km, m, "output.weight", 256, 2, /*pure=*/true);
    ASSERT_TRUE(pure.ok());
    EXPECT_EQ(*pure, GgmlType::Q4_K);
    EXPECT_FALSE(llamacpp_tensor_type(q4km, m, "blk.0.attn_q.weight", 896, 2, true).ok());
}

TEST(LlamaCppMix, FileTypeNamesAndNumbers) {
    EXPECT_EQ(uint32_t(find_file_type("q4_k_m")->ftype), 15u);
    EXPECT_EQ(uint32_t(find_file_type("Q5_K_M")->ftype), 17u);
    EXPECT_EQ(uint32_t(find_file_type("q6_k")->ftype), 18u);
    EXPECT_EQ(uint32_t(find_file_type("q8_0")->ftype), 7u);
    EXPECT_EQ(uint32_t(find_file_type("q4_0")->ftype), 2u);
    EXPECT_EQ(uint32_t(find_file_type("f16")->ftype), 1u);
    EXPECT_EQ(uint32_t(find_file_type("bf16")->ftype), 32u);
    EXPECT_EQ(find_file_type("q4_k")->base, GgmlType::Q4_K);
    EXPECT_FALSE(find_file_type("q3_k").has_value());
    EXPECT_FALSE(find_file_type("iq4_xs").has_value());
}

}  // namespace
