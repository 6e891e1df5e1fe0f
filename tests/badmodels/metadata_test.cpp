// Hyperparameter metadata of the wrong type, of an impossible value or inconsistent with the
// tensors: refused with a message naming the key, never replaced by a default. And the
// features Ember does not run yet (other rope scalings, experts, other architectures) refused by
// name.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "bad_model_util.h"

namespace ember::test {
namespace {

gguf::Value scalar(gguf::ValueType type) {
    gguf::Value v;
    v.type = type;
    return v;
}
gguf::Value int_value(gguf::ValueType type, int64_t x) {
    gguf::Value v = scalar(type);
    if (type == gguf::ValueType::UINT8 || type == gguf::ValueType::UINT16 ||
        type == gguf::ValueType::UINT32 || type == gguf::ValueType::UINT64)
        v.u64 = uint64_t(x);
    else
        v.i64 = x;
    return v;
}
gguf::Value float_value(gguf::ValueType type, double x) {
    gguf::Value v = scalar(type);
    v.f64 = x;
    return v;
}
gguf::Value string_value(const std::string& s) {
    gguf::Value v = scalar(gguf::ValueType::STRING);
    v.str = s;
    return v;
}

// A TinyModel plus metadata written over its own (any type, so wrong ones too).
struct MetaModel {
    TinyModel m = TinyModel::make();
    std::vector<std::pair<std::string, gguf::Value>> kv;

    void set(const std::string& key, gguf::Value v) { kv.emplace_back(key, std::move(v)); }
    void set_float(const std::string& key, float f) {
        set(key, float_value(gguf::ValueType::FLOAT32, f));
    }
    // Copies of layer 0's tensors as layers 1 .. n-1.
    void copy_layers(uint32_t n) {
        std::vector<TensorSpec> extra;
        for (uint32_t l = 1; l < n; l++)
            for (const TensorSpec& t : m.tensors)
                if (t.name.rfind("blk.0.", 0) == 0) {
                    TensorSpec c = t;
                    c.name = "blk." + std::to_string(l) + "." + t.name.substr(6);
                    extra.push_back(std::move(c));
                }
        m.tensors.insert(m.tensors.end(), extra.begin(), extra.end());
        m.n_layer = n;
    }
    std::string write(const std::string& name) const {
        gguf::Writer w = m.writer();
        for (const auto& [key, v] : kv) w.set_value(key, v);
        const std::string path = (temp_dir() / name).string();
        auto st = w.write(path);
        EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message);
        return path;
    }
};

Result<std::unique_ptr<Model>> load_cpu(const std::string& path) {
    LoadParams p;
    p.backend = BackendKind::Cpu;
    p.n_threads = 1;
    return Model::load(path, p);
}

void expect_refused(const std::string& path, const std::string& code,
                    const std::vector<std::string>& mentions) {
    auto m = load_cpu(path);
    ASSERT_FALSE(m.ok()) << path << " loaded";
    EXPECT_EQ(m.error().code, code) << m.error().message;
    for (const auto& s : mentions)
        EXPECT_NE(m.error().message.find(s), std::string::npos)
            << "'" << s << "' not in: " << m.error().message;
}

TEST(Metadata, AnyIntegerTypeHoldingTheValueIsAccepted) {
    using T = gguf::ValueType;
    for (T t : {T::UINT8, T::INT8, T::UINT16, T::INT16, T::UINT32, T::INT32, T::UINT64, T::INT64}) {
        SCOPED_TRACE(std::string(gguf::value_type_name(t)));
        MetaModel m;
        m.set("llama.context_length", int_value(t, 100));
        m.set("llama.attention.head_count", int_value(t, 4));
        auto model = load_cpu(m.write("ctx-" + std::string(gguf::value_type_name(t)) + ".gguf"));
        ASSERT_TRUE(model.ok()) << model.error().message;
        EXPECT_EQ((*model)->info().n_ctx_train, 100u);
        EXPECT_EQ((*model)->info().n_head, 4u);
    }
}

TEST(Metadata, ImpossibleContextLengthIsRefused) {
    using T = gguf::ValueType;
    MetaModel big;
    big.set("llama.context_length", int_value(T::UINT64, int64_t(1) << 40));
    expect_refused(big.write("ctx-2p40.gguf"), "model.bad_hparams",
                   {"'llama.context_length'", "1099511627776"});
    MetaModel neg;
    neg.set("llama.context_length", int_value(T::INT32, -1));
    expect_refused(neg.write("ctx-minus1.gguf"), "model.bad_hparams",
                   {"'llama.context_length'", "-1"});
}

TEST(Metadata, WrongTypeIsRefusedNotDefaulted) {
    MetaModel s;
    s.set("llama.context_length", string_value("4096"));
    expect_refused(s.write("ctx-string.gguf"), "model.bad_hparams",
                   {"'llama.context_length'", "STRING", "integer"});
    MetaModel f;
    f.set("llama.context_length", float_value(gguf::ValueType::FLOAT32, 4096.0));
    expect_refused(f.write("ctx-float.gguf"), "model.bad_hparams",
                   {"'llama.context_length'", "FLOAT32"});
    MetaModel e;
    e.set("llama.attention.layer_norm_rms_epsilon", string_value("1e-5"));
    expect_refused(e.write("eps-string.gguf"), "model.bad_hparams",
                   {"'llama.attention.layer_norm_rms_epsilon'", "STRING"});
    MetaModel a;
    a.set("general.architecture", int_value(gguf::ValueType::UINT32, 7));
    expect_refused(a.write("arch-int.gguf"), "model.bad_hparams",
                   {"'general.architecture'", "string"});
}

TEST(Metadata, BlockCountBelowTheFilesLayersIsRefused) {
    MetaModel m;
    m.copy_layers(3);  // tensors for blk.0 .. blk.2
    m.set("llama.block_count", int_value(gguf::ValueType::UINT32, 2));
    expect_refused(m.write("block-count.gguf"), "model.bad_hparams",
                   {"'llama.block_count'", "is 2", "3 layers"});
}

TEST(Metadata, RopeFreqBaseMustBeFinitePositive) {
    const double inf = std::numeric_limits<double>::infinity();
    for (double base : {inf, -inf, std::nan(""), 0.0, -10000.0, 1e300}) {
        SCOPED_TRACE(base);
        MetaModel m;
        m.set("llama.rope.freq_base", float_value(gguf::ValueType::FLOAT64, base));
        expect_refused(m.write("freq-base.gguf"), "model.bad_hparams", {"'llama.rope.freq_base'"});
    }
    MetaModel f32inf;
    f32inf.set_float("llama.rope.freq_base", std::numeric_limits<float>::infinity());
    expect_refused(f32inf.write("freq-base-f32.gguf"), "model.bad_hparams",
                   {"'llama.rope.freq_base'"});
}

TEST(Metadata, RopeFreqsMustBeFinitePositive) {
    for (float bad : {0.0f, -1.0f, std::numeric_limits<float>::infinity()}) {
        SCOPED_TRACE(bad);
        MetaModel m;
        std::vector<float> ff(32, 1.0f);  // head size 64: 32 divisors
        ff[5] = bad;
        m.m.tensors.push_back({"rope_freqs.weight", GgmlType::F32, {32}, f32_bytes(ff)});
        expect_refused(m.write("rope-freqs.gguf"), "model.bad_rope_freqs",
                       {"'rope_freqs.weight'", "element 5"});
    }
}

TEST(Metadata, UnsupportedRopeScalingIsRefusedByName) {
    // YaRN and LongRoPE run (tests/families/rope_scaling_test.cpp); other types do not.
    MetaModel y;
    y.set("llama.rope.scaling.type", string_value("dynamic"));
    y.set_float("llama.rope.scaling.factor", 4.0f);
    expect_refused(y.write("dynamic.gguf"), "model.unsupported_feature", {"'dynamic'"});
    MetaModel l;  // LongRoPE needs the short factors too
    l.m.tensors.push_back(
        {"rope_factors_long.weight", GgmlType::F32, {32}, f32_bytes(std::vector<float>(32, 1))});
    expect_refused(l.write("longrope.gguf"), "model.missing_tensor",
                   {"LongRoPE", "rope_factors_short"});
    MetaModel e;
    e.set("llama.expert_count", int_value(gguf::ValueType::UINT32, 8));
    expect_refused(e.write("moe.gguf"), "model.unsupported_feature", {"mixture-of-experts"});
}

TEST(Metadata, UnknownArchitectureNamesWhatRuns) {
    MetaModel m;
    m.m.arch = "mpt";
    expect_refused(m.write("mpt.gguf"), "model.unsupported_architecture",
                   {"'mpt' is not supported", "qwen2", "gemma3", "phi3"});
}

}  // namespace
}  // namespace ember::test
