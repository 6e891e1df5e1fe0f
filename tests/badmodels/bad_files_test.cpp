// Damaged and unsupported model files: each must be refused with an error naming the file and
// what is wrong, by Model::load and by ember-cli (exit status 1, never a crash).
#include "bad_model_util.h"
#include "gguf/gguf.h"

namespace ember::test {
namespace {

TEST(BadModels, TheUnbrokenModelLoadsAndGenerates) {
    // The control: every other test breaks exactly one thing in this file.
    const std::string path = TinyModel::make().write("good.gguf");
    LoadParams p;
    p.backend = BackendKind::Cpu;
    auto m = Model::load(path, p);
    ASSERT_TRUE(m.ok()) << m.error().message;
    EXPECT_EQ((*m)->n_vocab(), 300);
    auto r = run_cli(cli_path(), {"generate", "-m", path, "-p", "Once", "-n", "4", "--temp", "0",
                                  "--backend", "cpu"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    for (GgmlType t :
         {GgmlType::F16, GgmlType::BF16, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0,
          GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K}) {
        const std::string qp =
            TinyModel::make(t).write("good-" + std::string(type_name(t)) + ".gguf");
        auto qm = Model::load(qp, p);
        EXPECT_TRUE(qm.ok()) << type_name(t) << ": " << qm.error().message;
    }
}

TEST(BadModels, MissingFile) {
    const std::string path = (temp_dir() / "does-not-exist.gguf").string();
    expect_refused(path, "gguf.io", {"cannot open"});
}

TEST(BadModels, Directory) {
    const std::string path = temp_dir().string();
    expect_refused(path, "gguf.io", {"not a regular file"});
}

TEST(BadModels, EmptyFile) {
    const std::string path = (temp_dir() / "empty.gguf").string();
    write_bytes(path, {});
    expect_refused(path, "gguf.truncated", {});
}

TEST(BadModels, NotGguf) {
    const std::string path = (temp_dir() / "text.gguf").string();
    const std::string text = "<html>404 Not Found</html> -- a download error page saved as a model";
    write_bytes(path, std::vector<uint8_t>(text.begin(), text.end()));
    expect_refused(path, "gguf.bad_magic", {"not a GGUF file"});
    expect_cli_error({"info", "-m", path}, path, {"not a GGUF file"});
}

TEST(BadModels, FutureGgufVersion) {
    const std::string path = TinyModel::make().write("v99.gguf");
    auto bytes = read_bytes(path);
    bytes[4] = 99;  // the version follows the 4-byte magic
    write_bytes(path, bytes);
    expect_refused(path, "gguf.bad_version", {"99"});
}

// A download cut short: truncated in the header, in the metadata, in the tensor table and in
// the data. Every cut must be refused, never read past the end of the mapping.
TEST(BadModels, Truncated) {
    const std::string good = TinyModel::make().write("whole.gguf");
    const auto bytes = read_bytes(good);
    auto file = gguf::File::open(good);
    ASSERT_TRUE(file.ok());
    const uint64_t data = (*file)->data_offset();
    const auto& last = (*file)->tensors().back();
    const uint64_t last_end = data + last.offset + last.n_bytes;
    ASSERT_EQ(last_end, bytes.size());
    struct Cut {
        uint64_t size;
        std::vector<std::string> mentions;
    };
    const std::vector<Cut> cuts = {
        {3, {}},                                              // inside the magic
        {10, {}},                                             // inside the counts
        {2000, {"metadata key #"}},                           // inside the vocabulary
        {data - 40, {"tensor"}},                              // inside the tensor table
        {data + 16, {"extends past the end"}},                // just after the table
        {last_end - 1, {last.name, "extends past the end"}},  // one byte short
    };
    for (const Cut& c : cuts) {
        SCOPED_TRACE("cut at " + std::to_string(c.size) + " of " + std::to_string(bytes.size()));
        const std::string path =
            (temp_dir() / ("cut-" + std::to_string(c.size) + ".gguf")).string();
        write_bytes(path, std::vector<uint8_t>(bytes.begin(), bytes.begin() + long(c.size)));
        expect_refused(path, "gguf.truncated", c.mentions);
        expect_cli_error({"info", "-m", path}, path, c.mentions);
    }
}

TEST(BadModels, WrongArchitecture) {
    TinyModel m = TinyModel::make();
    m.arch = "mpt";
    const std::string path = m.write("mpt.gguf");
    expect_refused(path, "model.unsupported_architecture", {"'mpt'", "not supported"});
    // info describes what it can and says why the file cannot run.
    auto r = run_cli(cli_path(), {"info", "-m", path});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("'mpt' is not supported"), std::string::npos) << r.out;
}

TEST(BadModels, MissingArchitectureKey) {
    TinyModel m = TinyModel::make();
    m.drop_keys.insert("general.architecture");
    expect_refused(m.write("no-arch.gguf"), "model.missing_key", {"'general.architecture'"});
}

TEST(BadModels, MissingHyperparameterKey) {
    for (const char* key : {"llama.embedding_length", "llama.block_count",
                            "llama.attention.head_count", "llama.feed_forward_length"}) {
        SCOPED_TRACE(key);
        TinyModel m = TinyModel::make();
        m.drop_keys.insert(key);
        expect_refused(m.write(std::string("no-") + key + ".gguf"), "model.missing_key",
                       {std::string("'") + key + "'"});
    }
}

TEST(BadModels, MissingTokenizerKeys) {
    for (const char* key :
         {"tokenizer.ggml.model", "tokenizer.ggml.tokens", "tokenizer.ggml.scores"}) {
        SCOPED_TRACE(key);
        TinyModel m = TinyModel::make();
        m.drop_keys.insert(key);
        expect_refused(m.write(std::string("no-") + key + ".gguf"), "tokenizer.bad_metadata",
                       {std::string("'") + key + "'"});
    }
}

TEST(BadModels, UnsupportedTensorType) {
    for (GgmlType t : {GgmlType::Q2_K, GgmlType::IQ2_XXS, GgmlType::Q3_K, GgmlType::IQ4_NL}) {
        const std::string name(type_name(t));
        SCOPED_TRACE(name);
        TinyModel m = TinyModel::make();
        TensorSpec& wq = m.tensor("blk.0.attn_q.weight");
        wq.type = t;
        wq.bytes = random_bytes(t, wq.dims[0], wq.dims[1], 0.1f, 7);
        expect_refused(m.write("type-" + name + ".gguf"), "model.unsupported_type",
                       {"'blk.0.attn_q.weight'", name});
    }
}

TEST(BadModels, QuantizedNormVector) {
    TinyModel m = TinyModel::make();
    TensorSpec& n = m.tensor("blk.0.ffn_norm.weight");
    n.type = GgmlType::Q8_0;
    n.bytes = random_bytes(GgmlType::Q8_0, n.dims[0], 1, 1.0f, 3);
    expect_refused(m.write("q8-norm.gguf"), "model.unsupported_type",
                   {"'blk.0.ffn_norm.weight'", "expected F32"});
}

TEST(BadModels, TensorShapeDoesNotMatchMetadata) {
    TinyModel m = TinyModel::make();
    TensorSpec& wk = m.tensor("blk.0.attn_k.weight");
    wk.dims = {256, 128};  // head_count_kv says 256 rows
    wk.bytes.resize(256 * 128 * 4);
    expect_refused(m.write("shape.gguf"), "model.bad_shape",
                   {"'blk.0.attn_k.weight'", "[256, 128, 1, 1]", "expected [256, 256]"});

    TinyModel m2 = TinyModel::make();
    TensorSpec& norm = m2.tensor("output_norm.weight");
    norm.dims = {128};
    norm.bytes.resize(128 * 4);
    expect_refused(m2.write("shape-norm.gguf"), "model.bad_shape", {"'output_norm.weight'"});
}

TEST(BadModels, MissingTensors) {
    for (const char* name : {"token_embd.weight", "output_norm.weight", "blk.0.ffn_down.weight",
                             "blk.0.attn_norm.weight"}) {
        SCOPED_TRACE(name);
        TinyModel m = TinyModel::make();
        m.remove(name);
        expect_refused(m.write(std::string("missing-") + name + ".gguf"), "model.missing_tensor",
                       {std::string("'") + name + "'"});
    }
}

TEST(BadModels, MissingLayer) {
    TinyModel m = TinyModel::make();
    m.n_layer = 2;  // the metadata promises a second layer that the file does not have
    expect_refused(m.write("missing-layer.gguf"), "model.missing_tensor",
                   {"'blk.1.attn_norm.weight'"});
}

TEST(BadModels, VocabularyDoesNotMatchEmbeddingRows) {
    TinyModel m = TinyModel::make();
    m.vocab_tokens = 290;  // the embedding and output still have 300 rows
    expect_refused(m.write("vocab-short.gguf"), "model.bad_hparams",
                   {"token_embd.weight", "300 rows", "290 tokens"});
    TinyModel m2 = TinyModel::make();
    m2.vocab_tokens = 320;
    expect_refused(m2.write("vocab-long.gguf"), "model.bad_hparams", {"300 rows", "320 tokens"});
}

TEST(BadModels, OutputRowsDoNotMatchEmbedding) {
    TinyModel m = TinyModel::make();
    TensorSpec& out = m.tensor("output.weight");
    out.dims = {256, 299};
    out.bytes.resize(256 * 299 * 4);
    expect_refused(m.write("output-rows.gguf"), "model.bad_shape", {"'output.weight'"});
}

TEST(BadModels, ImpossibleHyperparameters) {
    TinyModel m = TinyModel::make();
    m.heads = 3;  // 256 is not a multiple of 3
    expect_refused(m.write("heads.gguf"), "model.bad_hparams", {"head_count"});
    TinyModel c = TinyModel::make();
    c.ctx = 0;
    expect_refused(c.write("ctx0.gguf"), "model.bad_hparams", {"context_length"});
}

// Found by fuzz_gguf: sscanf's %X took "<0x-8>" as byte -8 and indexed far outside the byte
// table. Malformed byte tokens are now plain tokens (with a warning); the model still works.
TEST(BadModels, MalformedByteTokens) {
    TinyModel m = TinyModel::make();
    m.token_text = {{3 + 0x41, "<0x-8>"},
                    {3 + 0x42, "<0x 8>"},
                    {3 + 0x43, "<0x+F>"},
                    {3 + 0x44, "<0xG1>"},
                    {3 + 0x45, "<0x4"}};
    const std::string path = m.write("byte-tokens.gguf");
    LoadParams p;
    p.backend = BackendKind::Cpu;
    auto model = Model::load(path, p);
    ASSERT_TRUE(model.ok()) << model.error().message;
    // 'A' lost its byte token; other bytes still fall back to theirs.
    const auto ids = (*model)->tokenize("zq", false, false);
    EXPECT_NE((*model)->detokenize(ids).find("zq"), std::string::npos);
    auto r = run_cli(cli_path(), {"generate", "-m", path, "-p", "ABCD", "-n", "4", "--temp", "0",
                                  "--backend", "cpu"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
}

}  // namespace
}  // namespace ember::test
