// The reader against real files in ../shared.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

#include "gguf/gguf.h"
#include "test_util.h"

using namespace ember;
using namespace ember::gguf;

namespace {

std::vector<uint8_t> read_all(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

TEST(GgufRealFiles, Stories260K) {
    auto r = File::open(test::stories_model());
    ASSERT_TRUE(r.ok()) << r.error().message;
    const File& f = **r;
    EXPECT_EQ(f.version(), 3u);
    EXPECT_EQ(f.alignment(), 32u);
    EXPECT_EQ(f.metadata().size(), 19u);
    EXPECT_EQ(f.get_string("general.architecture"), "llama");
    EXPECT_EQ(f.get_string("tokenizer.ggml.model"), "llama");
    EXPECT_EQ(f.get_u32("llama.context_length"), 2048u);
    EXPECT_EQ(f.get_u32("llama.embedding_length"), 64u);
    EXPECT_EQ(f.get_u32("llama.block_count"), 5u);
    EXPECT_EQ(f.get_u32("llama.attention.head_count"), 8u);
    EXPECT_EQ(f.get_u32("llama.attention.head_count_kv"), 4u);
    EXPECT_EQ(f.get_int("llama.feed_forward_length"), 172);
    EXPECT_EQ(f.get_u32("tokenizer.ggml.seperator_token_id"), 4294967295u);
    auto eps = f.get_f32("llama.attention.layer_norm_rms_epsilon");
    ASSERT_TRUE(eps);
    EXPECT_NEAR(*eps, 1e-5f, 1e-9f);
    EXPECT_FALSE(f.get_string("llama.block_count"));  // wrong type
    EXPECT_FALSE(f.get_u32("no.such.key"));

    const auto* tokens = f.get_array("tokenizer.ggml.tokens");
    ASSERT_NE(tokens, nullptr);
    ASSERT_EQ(tokens->size(), 512u);
    EXPECT_EQ((*tokens)[0].str, "<unk>");
    EXPECT_EQ((*tokens)[1].str, "<s>");
    EXPECT_EQ((*tokens)[2].str, "</s>");
    const auto* types = f.get_array("tokenizer.ggml.token_type");
    ASSERT_NE(types, nullptr);
    ASSERT_EQ(types->size(), 512u);
    EXPECT_EQ((*types)[0].as_int(), 2);
    EXPECT_EQ((*types)[1].as_int(), 3);
    EXPECT_EQ(f.find("tokenizer.ggml.scores")->elem_type, ValueType::FLOAT32);

    ASSERT_EQ(f.tensors().size(), 48u);
    EXPECT_EQ(f.data_offset(), 14176u);  // 14152 bytes of header, aligned to 32
    const TensorInfo* emb = f.find_tensor("token_embd.weight");
    ASSERT_NE(emb, nullptr);
    EXPECT_EQ(emb->n_dims, 2u);
    EXPECT_EQ(emb->ne[0], 64u);
    EXPECT_EQ(emb->ne[1], 512u);
    EXPECT_EQ(emb->type, GgmlType::F32);
    EXPECT_EQ(emb->n_bytes, 64u * 512u * 4u);
    EXPECT_EQ(emb->offset, 0u);
    const TensorInfo* last = f.find_tensor("blk.4.ffn_norm.weight");
    ASSERT_NE(last, nullptr);
    EXPECT_EQ(last->offset, 1170944u);
    EXPECT_EQ(f.data_offset() + last->offset + last->n_bytes, f.file_size());
    EXPECT_EQ(f.find_tensor("blk.5.ffn_norm.weight"), nullptr);
    for (const TensorInfo& t : f.tensors())
        EXPECT_LE(f.data_offset() + t.offset + t.n_bytes, f.file_size()) << t.name;

    // The mapped bytes are the file's bytes.
    auto bytes = read_all(test::stories_model());
    ASSERT_EQ(bytes.size(), f.file_size());
    const TensorInfo* q = f.find_tensor("blk.0.attn_q.weight");
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(
        std::memcmp(f.tensor_data(*q), bytes.data() + f.data_offset() + q->offset, q->n_bytes), 0);

    // from_bytes parses the same way.
    auto m = File::from_bytes(bytes, "stories");
    ASSERT_TRUE(m.ok()) << m.error().message;
    EXPECT_EQ((*m)->tensors().size(), 48u);
    EXPECT_EQ((*m)->data_offset(), f.data_offset());
    EXPECT_EQ(std::memcmp((*m)->tensor_data(*q), f.tensor_data(*q), q->n_bytes), 0);
}

TEST(GgufRealFiles, ReleaseTensorDataKeepsMetadata) {
    auto r = File::open(test::stories_model());
    ASSERT_TRUE(r.ok()) << r.error().message;
    File& f = **r;
    EXPECT_NE(f.base(), nullptr);
    f.release_tensor_data();
    EXPECT_EQ(f.base(), nullptr);
    EXPECT_EQ(f.get_string("general.architecture"), "llama");
    EXPECT_EQ(f.get_array("tokenizer.ggml.tokens")->at(1).str, "<s>");
    EXPECT_NE(f.find_tensor("output.weight"), nullptr);
    f.release_tensor_data();  // twice is harmless
}

TEST(GgufRealFiles, VocabOnlyFilesLoad) {
    auto gpt2 = File::open(test::shared_path("vocab/ggml-vocab-gpt-2.gguf"));
    ASSERT_TRUE(gpt2.ok()) << gpt2.error().message;
    EXPECT_EQ((*gpt2)->tensors().size(), 0u);
    EXPECT_EQ((*gpt2)->get_string("general.architecture"), "gpt2");
    EXPECT_EQ((*gpt2)->get_string("tokenizer.ggml.pre"), "gpt-2");
    EXPECT_EQ((*gpt2)->get_u32("tokenizer.ggml.bos_token_id"), 50256u);
    ASSERT_NE((*gpt2)->get_array("tokenizer.ggml.tokens"), nullptr);
    EXPECT_EQ((*gpt2)->get_array("tokenizer.ggml.tokens")->size(), 50257u);
    const auto* merges = (*gpt2)->get_array("tokenizer.ggml.merges");
    ASSERT_NE(merges, nullptr);
    ASSERT_EQ(merges->size(), 50000u);
    EXPECT_EQ((*merges)[0].str, "\xc4\xa0 t");  // "Ġ t"

    auto spm = File::open(test::shared_path("vocab/ggml-vocab-llama-spm.gguf"));
    ASSERT_TRUE(spm.ok()) << spm.error().message;
    EXPECT_EQ((*spm)->tensors().size(), 0u);
    EXPECT_EQ((*spm)->metadata().size(), 22u);
    EXPECT_EQ((*spm)->get_string("general.name"), "llama-spm");
    EXPECT_EQ((*spm)->get_bool("tokenizer.ggml.add_bos_token"), true);
    EXPECT_EQ((*spm)->get_bool("tokenizer.ggml.add_eos_token"), false);
    EXPECT_EQ((*spm)->get_array("tokenizer.ggml.scores")->size(), 32000u);
}

TEST(GgufRealFiles, ParsesLargeVocabQuickly) {
    auto path = test::shared_path("vocab/ggml-vocab-gpt-2.gguf");
    auto t0 = std::chrono::steady_clock::now();
    auto r = File::open(path);
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_TRUE(r.ok()) << r.error().message;
    std::printf("parsed 100k strings in %.1f ms\n", ms);
    EXPECT_LT(ms, 2000.0);  // generous: sanitizer builds and a shared machine
}

TEST(GgufRealFiles, OpenErrorsNameThePath) {
    auto missing = File::open("/nonexistent/dir/model.gguf");
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.error().code, "gguf.io");
    EXPECT_NE(missing.error().message.find("/nonexistent/dir/model.gguf"), std::string::npos);

    auto dir = File::open(test::shared_dir());
    ASSERT_FALSE(dir.ok());
    EXPECT_NE(dir.error().message.find(test::shared_dir()), std::string::npos);

    // A real file that is not GGUF.
    auto json = File::open(test::shared_path("models/stories260K.reference.json"));
    ASSERT_FALSE(json.ok());
    EXPECT_EQ(json.error().code, "gguf.bad_magic");
}

}  // namespace
