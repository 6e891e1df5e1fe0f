// Builds tiny but complete Llama GGUF files that tests then break in one specific way.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "gguf/writer.h"
#include "quant/quant.h"
#include "run_cli.h"
#include "test_util.h"

namespace ember::test {

struct TensorSpec {
    std::string name;
    GgmlType type;
    std::vector<uint64_t> dims;  // dims[0] is the row length
    std::vector<uint8_t> bytes;
};

// Random values quantized to type; sized from dims.
inline std::vector<uint8_t> random_bytes(GgmlType type, uint64_t cols, uint64_t rows, float scale,
                                         uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-scale, scale);
    std::vector<float> values(cols * rows);
    for (auto& v : values) v = dist(rng);
    const auto tt = *type_traits(type);
    std::vector<uint8_t> out(row_bytes(tt, cols) * rows);
    if (tt.supported) {
        quantize_row(type, values.data(), out.data(), int64_t(values.size()));
    } else {
        for (auto& b : out) b = uint8_t(rng());  // Ember cannot encode it; any bytes will do
    }
    return out;
}

inline std::vector<uint8_t> f32_bytes(const std::vector<float>& v) {
    std::vector<uint8_t> out(v.size() * 4);
    std::memcpy(out.data(), v.data(), out.size());
    return out;
}

// A one-layer Llama with a synthetic SentencePiece vocabulary; valid until a test edits it.
struct TinyModel {
    uint32_t embd = 256, n_layer = 1, heads = 4, ffn = 256, vocab = 300, ctx = 128;
    std::string arch = "llama";
    std::vector<TensorSpec> tensors;
    std::set<std::string> drop_keys;
    uint32_t vocab_tokens = 0;                   // entries in tokenizer.ggml.tokens; 0: vocab
    std::map<uint32_t, std::string> token_text;  // replaces the text of these token ids
    std::map<std::string, std::string> views;    // tensor -> the tensor whose bytes it shares
    std::vector<std::pair<std::string, gguf::Value>> values;  // metadata set last

    static TinyModel make(GgmlType type = GgmlType::F32, uint32_t embd = 256, uint32_t ffn = 256) {
        TinyModel m;
        m.embd = embd;
        m.ffn = ffn;
        uint32_t seed = 1;
        auto matrix = [&](const std::string& name, uint32_t cols, uint32_t rows) {
            m.tensors.push_back(
                {name, type, {cols, rows}, random_bytes(type, cols, rows, 0.1f, seed++)});
        };
        auto norm = [&](const std::string& name) {
            m.tensors.push_back(
                {name, GgmlType::F32, {m.embd}, f32_bytes(std::vector<float>(m.embd, 1.0f))});
        };
        matrix("token_embd.weight", m.embd, m.vocab);
        norm("output_norm.weight");
        matrix("output.weight", m.embd, m.vocab);
        for (uint32_t l = 0; l < m.n_layer; l++) {
            const std::string p = "blk." + std::to_string(l) + ".";
            norm(p + "attn_norm.weight");
            matrix(p + "attn_q.weight", m.embd, m.embd);
            matrix(p + "attn_k.weight", m.embd, m.embd);
            matrix(p + "attn_v.weight", m.embd, m.embd);
            matrix(p + "attn_output.weight", m.embd, m.embd);
            norm(p + "ffn_norm.weight");
            matrix(p + "ffn_gate.weight", m.embd, m.ffn);
            matrix(p + "ffn_up.weight", m.embd, m.ffn);
            matrix(p + "ffn_down.weight", m.ffn, m.embd);
        }
        return m;
    }

    // n layers whose tensors all alias layer 0's bytes (identical aliases: same type and shape).
    void alias_layers(uint32_t n) {
        n_layer = n;
        std::vector<std::string> layer0;
        for (const auto& t : tensors)
            if (t.name.rfind("blk.0.", 0) == 0) layer0.push_back(t.name.substr(6));
        for (uint32_t l = 1; l < n; l++)
            for (const auto& suffix : layer0)
                views["blk." + std::to_string(l) + "." + suffix] = "blk.0." + suffix;
    }
    void set(const std::string& key, gguf::Value v) { values.emplace_back(key, std::move(v)); }

    TensorSpec& tensor(const std::string& name) {
        for (auto& t : tensors)
            if (t.name == name) return t;
        ADD_FAILURE() << "no tensor " << name;
        return tensors.front();
    }
    void remove(const std::string& name) {
        std::erase_if(tensors, [&](const TensorSpec& t) { return t.name == name; });
    }

    gguf::Writer writer() const {
        gguf::Writer w;
        auto keep = [&](const std::string& k) { return !drop_keys.count(k); };
        auto u32 = [&](const std::string& k, uint32_t v) {
            if (keep(k)) w.set_u32(k, v);
        };
        if (keep("general.architecture")) w.set_string("general.architecture", arch);
        w.set_string("general.name", "badmodels test");
        u32(arch + ".context_length", ctx);
        u32(arch + ".embedding_length", embd);
        u32(arch + ".block_count", n_layer);
        u32(arch + ".feed_forward_length", ffn);
        u32(arch + ".attention.head_count", heads);
        u32(arch + ".attention.head_count_kv", heads);
        if (keep(arch + ".attention.layer_norm_rms_epsilon"))
            w.set_f32(arch + ".attention.layer_norm_rms_epsilon", 1e-5f);

        const uint32_t n_tok = vocab_tokens ? vocab_tokens : vocab;
        std::vector<std::string> toks = {"<unk>", "<s>", "</s>"};
        std::vector<int32_t> types = {2, 3, 3};
        for (int b = 0; b < 256; b++) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "<0x%02X>", b);
            toks.push_back(buf);
            types.push_back(6);
        }
        for (uint32_t i = 0; toks.size() < n_tok; i++) {
            toks.push_back("\xE2\x96\x81w" + std::to_string(i));
            types.push_back(1);
        }
        toks.resize(n_tok);
        for (const auto& [id, text] : token_text) toks.at(id) = text;
        types.resize(n_tok);
        std::vector<float> scores(n_tok);
        for (uint32_t i = 0; i < n_tok; i++) scores[i] = -float(i);
        if (keep("tokenizer.ggml.model")) w.set_string("tokenizer.ggml.model", "llama");
        if (keep("tokenizer.ggml.tokens")) w.set_string_array("tokenizer.ggml.tokens", toks);
        if (keep("tokenizer.ggml.scores")) w.set_f32_array("tokenizer.ggml.scores", scores);
        if (keep("tokenizer.ggml.token_type")) w.set_i32_array("tokenizer.ggml.token_type", types);
        u32("tokenizer.ggml.bos_token_id", 1);
        u32("tokenizer.ggml.eos_token_id", 2);
        u32("tokenizer.ggml.unknown_token_id", 0);
        for (const auto& t : tensors) w.add_tensor(t.name, t.type, t.dims, t.bytes);
        for (const auto& [name, of] : views) {
            for (const auto& t : tensors)
                if (t.name == of) w.add_view(name, t.type, t.dims, of);
        }
        for (const auto& [key, v] : values) w.set_value(key, v);
        return w;
    }

    // Writes the file under the test's scratch folder and returns its path.
    std::string write(const std::string& file_name) const {
        const std::string path = (temp_dir() / file_name).string();
        auto st = writer().write(path);
        EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message);
        return path;
    }
};

// Float element i of a tensor's bytes.
inline void set_f32(TensorSpec& t, size_t i, float v) {
    std::memcpy(t.bytes.data() + 4 * i, &v, 4);
}
inline void set_u16(std::vector<uint8_t>& bytes, size_t offset, uint16_t v) {
    std::memcpy(bytes.data() + offset, &v, 2);
}
constexpr uint16_t kF16NaN = 0x7e00, kF16Inf = 0x7c00, kBF16Inf = 0x7f80;

inline std::vector<uint8_t> read_bytes(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}
inline void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

// Model::load must fail with code, and the message must name the file and every `mentions`.
inline void expect_load_error(const std::string& path, const std::string& code,
                              const std::vector<std::string>& mentions) {
    LoadParams p;
    p.backend = BackendKind::Cpu;
    auto m = Model::load(path, p);
    ASSERT_FALSE(m.ok()) << path << " loaded but should not have";
    const Error& e = m.error();
    EXPECT_EQ(e.code, code) << e.message;
    EXPECT_NE(e.message.find(path), std::string::npos)
        << "message must name the file: " << e.message;
    for (const auto& s : mentions)
        EXPECT_NE(e.message.find(s), std::string::npos)
            << "message must mention '" << s << "': " << e.message;
}

// A load of `path` with `lp`, stopped once the progress passes a half, once by the cancel flag
// and once by the progress callback saying no: each must fail with "model.cancelled" part way
// (the last progress seen from 0.5 up to but not 1). `after` then checks what the cancelled load
// left (memory freed).
inline void expect_load_cancels_midway(const std::string& path, const LoadParams& lp,
                                       const std::function<void()>& after) {
    for (bool by_flag : {true, false}) {
        SCOPED_TRACE(by_flag ? "cancel flag" : "progress callback");
        std::atomic<bool> cancel{false};
        float last = 0;
        LoadParams p = lp;
        p.cancel = &cancel;
        p.progress = [&](float f) {
            last = f;
            if (f < 0.5f) return true;
            if (!by_flag) return false;
            cancel = true;
            return true;
        };
        auto model = Model::load(path, p);
        ASSERT_FALSE(model.ok()) << "the load was not cancelled";
        EXPECT_EQ(model.error().code, "model.cancelled") << model.error().message;
        EXPECT_GE(last, 0.5f);
        EXPECT_LT(last, 1.0f);
        after();
    }
}

// ember-cli `args` must exit with status 1 (no signal, nothing on stdout) and say why on stderr.
inline void expect_cli_error(const std::vector<std::string>& args, const std::string& path,
                             const std::vector<std::string>& mentions) {
    auto r = run_cli(cli_path(), args);
    EXPECT_EQ(r.signal, 0) << "ember-cli died by signal " << r.signal << "; stderr: " << r.err;
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
    EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
    for (const auto& s : mentions) EXPECT_NE(r.err.find(s), std::string::npos) << r.err;
}

inline void expect_generate_error(const std::string& path,
                                  const std::vector<std::string>& mentions) {
    expect_cli_error({"generate", "-m", path, "-p", "Once", "-n", "4", "--backend", "cpu"}, path,
                     mentions);
}

// Both the API and ember-cli generate refuse the file the same way.
inline void expect_refused(const std::string& path, const std::string& code,
                           const std::vector<std::string>& mentions) {
    expect_load_error(path, code, mentions);
    expect_generate_error(path, mentions);
}

}  // namespace ember::test
