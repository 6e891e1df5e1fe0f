// NaN and Inf weights are refused at load time, naming the tensor and the element or block.
#include <cfloat>
#include <chrono>
#include <limits>

#include "bad_model_util.h"
#include "gguf/gguf.h"
#include "model/llama.h"
#include "model/validate.h"

namespace ember::test {
namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

TEST(NonFinite, NaNInF32Norm) {
    TinyModel m = TinyModel::make();
    set_f32(m.tensor("blk.0.attn_norm.weight"), 5, kNaN);
    expect_refused(m.write("nan-norm.gguf"), "model.nonfinite_weights",
                   {"'blk.0.attn_norm.weight'", "NaN", "element 5"});
}

TEST(NonFinite, InfInF32Matrix) {
    TinyModel m = TinyModel::make();
    set_f32(m.tensor("token_embd.weight"), 3 * 256 + 17, -kInf);
    expect_refused(m.write("inf-embd.gguf"), "model.nonfinite_weights",
                   {"'token_embd.weight'", "Inf", "element 785", "row 3"});
}

TEST(NonFinite, InfInF16AndBF16) {
    TinyModel m = TinyModel::make(GgmlType::F16);
    set_u16(m.tensor("blk.0.attn_v.weight").bytes, 2 * 77, kF16Inf);
    expect_refused(m.write("inf-f16.gguf"), "model.nonfinite_weights",
                   {"'blk.0.attn_v.weight' (F16)", "Inf", "element 77"});

    TinyModel b = TinyModel::make(GgmlType::BF16);
    set_u16(b.tensor("blk.0.ffn_gate.weight").bytes, 2 * 300, kBF16Inf | 0x8000);
    expect_refused(b.write("inf-bf16.gguf"), "model.nonfinite_weights",
                   {"'blk.0.ffn_gate.weight' (BF16)", "Inf", "element 300", "row 1"});
}

// The fp16 scales of quantized blocks: d in every type, and the min (m / dmin) where present.
TEST(NonFinite, NonFiniteQuantizedScales) {
    struct Case {
        GgmlType type;
        size_t block_bytes, scale_offset;
        const char* scale;
        uint16_t value;
    };
    const Case cases[] = {
        {GgmlType::Q8_0, sizeof(BlockQ8_0), 0, "d", kF16NaN},
        {GgmlType::Q4_0, sizeof(BlockQ4_0), 0, "d", kF16Inf},
        {GgmlType::Q5_0, sizeof(BlockQ5_0), 0, "d", kF16NaN},
        {GgmlType::Q4_1, sizeof(BlockQ4_1), offsetof(BlockQ4_1, m), "m", kF16NaN},
        {GgmlType::Q5_1, sizeof(BlockQ5_1), offsetof(BlockQ5_1, m), "m", kF16Inf},
        {GgmlType::Q4_K, sizeof(BlockQ4_K), offsetof(BlockQ4_K, dmin), "dmin", kF16Inf},
        {GgmlType::Q5_K, sizeof(BlockQ5_K), 0, "d", kF16NaN},
        {GgmlType::Q6_K, sizeof(BlockQ6_K), offsetof(BlockQ6_K, d), "d", kF16NaN},
    };
    for (const Case& c : cases) {
        const std::string tn(type_name(c.type));
        SCOPED_TRACE(tn);
        TinyModel m = TinyModel::make(c.type);
        const size_t block = 3;
        set_u16(m.tensor("blk.0.ffn_up.weight").bytes, block * c.block_bytes + c.scale_offset,
                c.value);
        expect_refused(m.write("scale-" + tn + ".gguf"), "model.nonfinite_weights",
                       {"'blk.0.ffn_up.weight' (" + tn + ")", c.value == kF16NaN ? "NaN" : "Inf",
                        std::string("scale ") + c.scale + " of block 3"});
    }
}

// The way a real file gets damaged: ember-cli writes a model, then a byte edit breaks one block.
TEST(NonFinite, ByteEditedMkmodelFile) {
    const std::string path = (temp_dir() / "mkmodel-q4k.gguf").string();
    auto r = run_cli(cli_path(), {"mkmodel", "-o", path, "--embd", "256", "--layers", "2",
                                  "--heads", "4", "--kv-heads", "2", "--ffn", "512", "--vocab",
                                  "320", "--type", "Q4_K", "--threads", "1"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    uint64_t at = 0;
    {
        auto f = gguf::File::open(path);
        ASSERT_TRUE(f.ok()) << f.error().message;
        const gguf::TensorInfo* t = (*f)->find_tensor("blk.1.ffn_down.weight");
        ASSERT_NE(t, nullptr);
        ASSERT_EQ(t->type, GgmlType::Q4_K);
        at = (*f)->data_offset() + t->offset + 5 * sizeof(BlockQ4_K) + offsetof(BlockQ4_K, dmin);
    }
    auto bytes = read_bytes(path);
    set_u16(bytes, at, kF16NaN);
    write_bytes(path, bytes);
    expect_refused(path, "model.nonfinite_weights",
                   {"'blk.1.ffn_down.weight' (Q4_K)", "NaN", "scale dmin of block 5", "row 2"});
}

TEST(NonFinite, ExtremeButFiniteValuesLoad) {
    TinyModel m = TinyModel::make();
    TensorSpec& e = m.tensor("token_embd.weight");
    set_f32(e, 0, FLT_MAX);
    set_f32(e, 1, -FLT_MAX);
    set_f32(e, 2, FLT_TRUE_MIN);  // subnormal
    set_f32(e, 3, -0.0f);
    const std::string path = m.write("extreme.gguf");
    LoadParams p;
    p.backend = BackendKind::Cpu;
    auto model = Model::load(path, p);
    EXPECT_TRUE(model.ok()) << model.error().message;

    TinyModel h = TinyModel::make(GgmlType::F16);
    set_u16(h.tensor("token_embd.weight").bytes, 0, 0x7bff);  // largest finite half
    set_u16(h.tensor("token_embd.weight").bytes, 2, 0xfbff);
    auto hm = Model::load(h.write("extreme-f16.gguf"), p);
    EXPECT_TRUE(hm.ok()) << hm.error().message;
}

// check_finite_weights directly, on tensors big enough to be split between threads.
Tensor f32_tensor(const std::string& name, std::vector<float>& data, int64_t cols) {
    Tensor t;
    t.name = name;
    t.type = GgmlType::F32;
    t.ne[0] = cols;
    t.ne[1] = int64_t(data.size()) / cols;
    t.data = reinterpret_cast<const uint8_t*>(data.data());
    t.n_bytes = data.size() * 4;
    t.row_stride = uint64_t(cols) * 4;
    return t;
}

TEST(NonFinite, ReportsTheFirstBadValueWhateverTheThreadCount) {
    // 48 MiB: a dozen chunks. Bad values late in chunk 1, early in chunk 7, and in a later tensor.
    std::vector<float> big(12u << 20, 0.5f), small(4096, 1.0f);
    big[(1u << 20) + 1000] = kInf;
    big[(7u << 20) + 3] = kNaN;
    small[10] = kNaN;
    LlamaModel m;
    m.tok_embd = f32_tensor("token_embd.weight", big, 4096);
    m.output_norm = f32_tensor("output_norm.weight", small, 4096);
    for (int threads : {1, 2, 3, 8}) {
        SCOPED_TRACE(threads);
        for (int rep = 0; rep < 5; rep++) {
            auto st = check_finite_weights(m, "mem.gguf", threads);
            ASSERT_FALSE(st.ok());
            EXPECT_EQ(st.error().code, "model.nonfinite_weights");
            EXPECT_NE(st.error().message.find("'token_embd.weight' (F32) has Inf at element " +
                                              std::to_string((1u << 20) + 1000)),
                      std::string::npos)
                << st.error().message;
        }
    }
    big[(1u << 20) + 1000] = 0.0f;
    big[(7u << 20) + 3] = 0.0f;
    auto st = check_finite_weights(m, "mem.gguf", 2);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("'output_norm.weight' (F32) has NaN at element 10"),
              std::string::npos)
        << st.error().message;
    small[10] = 1.0f;
    EXPECT_TRUE(check_finite_weights(m, "mem.gguf", 2).ok());
}

TEST(NonFinite, CheckIsFastEnoughForLargeModels) {
    // 512 MiB of F16 (a quarter of a 1B model's F16 weights): must take well under a second
    // in a release build; the bound is loose so that sanitizer builds pass too.
    std::vector<uint16_t> data(256u << 20, 0x3c00);
    Tensor t;
    t.name = "token_embd.weight";
    t.type = GgmlType::F16;
    t.ne[0] = 4096;
    t.ne[1] = int64_t(data.size() / 4096);
    t.data = reinterpret_cast<const uint8_t*>(data.data());
    t.n_bytes = data.size() * 2;
    t.row_stride = 4096 * 2;
    LlamaModel m;
    m.tok_embd = t;
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_TRUE(check_finite_weights(m, "mem.gguf").ok());
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("checked 512 MiB of F16 in %.3f s (%.1f GB/s)\n", s, 0.537 / s);
    EXPECT_LT(s, 5.0);
}

}  // namespace
}  // namespace ember::test
