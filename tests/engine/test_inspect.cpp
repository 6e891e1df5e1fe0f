// ember::inspect and ember::supported_tensor_types: what the app and tools ask of the engine
// instead of keeping rules and lists of their own.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "ember/ember.h"
#include "gguf/writer.h"
#include "quant/types.h"
#include "test_util.h"

namespace {

using ember::GgmlType;

// A file whose all-tensor byte count is mostly F32 (one large 1-D tensor) while its 2-D
// weights are Q8_0: the label counts the 2-D weights only, as model hubs name a quantization.
std::string write_mixed_file(const std::filesystem::path& dir) {
    ember::gguf::Writer w;
    w.set_string("general.architecture", "llama");
    w.set_string("general.name", "mixed");
    w.add_zeros("blk.0.attn_q.weight", GgmlType::Q8_0, {64, 64});  // 4352 bytes
    w.add_zeros("blk.0.attn_norm.weight", GgmlType::F32, {4096});  // 16384 bytes
    const std::string path = (dir / "mixed.gguf").string();
    EXPECT_TRUE(bool(w.write(path)));
    return path;
}

}  // namespace

TEST(Inspect, QuantizationLabelCountsTheMatrices) {
    const auto dir = ember::test::temp_dir() / "inspect";
    std::filesystem::create_directories(dir);
    auto info = ember::inspect(write_mixed_file(dir));
    ASSERT_TRUE(info.ok()) << info.error().message;
    EXPECT_EQ(info->quantization, "Q8_0");
    EXPECT_EQ(info->architecture, "llama");
    EXPECT_EQ(info->name, "mixed");
    EXPECT_EQ(info->n_tensors, 2u);
    EXPECT_EQ(info->n_params, 64u * 64u + 4096u);
    // Every type is in the mix, with its bytes.
    ASSERT_EQ(info->bytes_per_type.size(), 2u);
    std::filesystem::remove_all(dir);
}

TEST(Inspect, RealModelAsModelInfoSaysIt) {
    const std::string path = ember::test::stories_model();
    auto info = ember::inspect(path);
    ASSERT_TRUE(info.ok()) << info.error().message;
    ember::LoadParams params;
    params.backend = ember::BackendKind::Cpu;
    auto model = ember::Model::load(path, params);
    ASSERT_TRUE(model.ok()) << model.error().message;
    // Every field agrees: the app's model list (inspect) and the loaded model's info never
    // tell the same file apart differently.
    const ember::ModelInfo& loaded = (*model)->info();
    EXPECT_EQ(info->path, loaded.path);
    EXPECT_EQ(info->architecture, loaded.architecture);
    EXPECT_EQ(info->name, loaded.name);
    EXPECT_EQ(info->gguf_version, loaded.gguf_version);
    EXPECT_EQ(info->file_size, loaded.file_size);
    EXPECT_EQ(info->n_params, loaded.n_params);
    EXPECT_EQ(info->weight_bytes, loaded.weight_bytes);
    EXPECT_EQ(info->n_tensors, loaded.n_tensors);
    EXPECT_EQ(info->bytes_per_type, loaded.bytes_per_type);
    EXPECT_EQ(info->quantization, loaded.quantization);
    EXPECT_EQ(info->n_vocab, loaded.n_vocab);
    EXPECT_EQ(info->n_ctx_train, loaded.n_ctx_train);
    EXPECT_EQ(info->n_ctx_max, loaded.n_ctx_max);
    EXPECT_EQ(info->n_embd, loaded.n_embd);
    EXPECT_EQ(info->n_layer, loaded.n_layer);
    EXPECT_EQ(info->n_head, loaded.n_head);
    EXPECT_EQ(info->n_head_kv, loaded.n_head_kv);
    EXPECT_EQ(info->n_ff, loaded.n_ff);
    EXPECT_EQ(info->head_dim, loaded.head_dim);
    EXPECT_EQ(info->n_rot, loaded.n_rot);
    EXPECT_EQ(info->sliding_window, loaded.sliding_window);
    EXPECT_EQ(info->n_swa_layers, loaded.n_swa_layers);
    EXPECT_EQ(info->tokenizer_model, loaded.tokenizer_model);
    EXPECT_EQ(info->chat_template, loaded.chat_template);
    EXPECT_GT(info->n_ctx_max, 0u);
}

TEST(Inspect, NotAModelIsRefused) {
    const auto dir = ember::test::temp_dir() / "inspect-bad";
    std::filesystem::create_directories(dir);
    ember::gguf::Writer w;
    w.set_string("general.name", "no architecture");
    w.add_zeros("t", GgmlType::F32, {4});
    const std::string path = (dir / "x.gguf").string();
    ASSERT_TRUE(bool(w.write(path)));
    auto info = ember::inspect(path);
    ASSERT_FALSE(info.ok());
    EXPECT_EQ(info.error().code, "inspect.not_a_model");
    EXPECT_FALSE(ember::inspect((dir / "missing.gguf").string()).ok());
    std::filesystem::remove_all(dir);
}

TEST(SupportedTensorTypes, AreTheTypesTheEngineComputesWith) {
    const std::vector<std::string> types = ember::supported_tensor_types();
    for (uint32_t id = 0; id < 64; id++) {
        const auto traits = ember::type_traits(id);
        if (!traits) continue;
        const bool listed =
            std::find(types.begin(), types.end(), std::string(traits->name)) != types.end();
        EXPECT_EQ(listed, traits->supported) << traits->name;
    }
    for (const char* t : {"F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_K", "Q6_K"})
        EXPECT_NE(std::find(types.begin(), types.end(), t), types.end()) << t;
}
