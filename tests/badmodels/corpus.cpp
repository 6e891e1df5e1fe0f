// The generators of the hostile corpus (see corpus.h).
#include "corpus.h"

#include <unistd.h>

namespace ember::test {
namespace {

using VT = gguf::ValueType;
constexpr uint64_t kHuge = uint64_t(1) << 62;

const std::vector<uint8_t>& base_bytes() {
    static const std::vector<uint8_t> b = [] {
        auto r = corpus_base().writer().to_bytes();
        if (!r.ok()) throw std::runtime_error(r.error().message);
        return std::move(r).value();
    }();
    return b;
}

// A file made from the base bytes by f.
HostileFile bytes_entry(std::string family, std::string name,
                        std::function<void(std::vector<uint8_t>&, const HeaderMap&)> f,
                        bool must_refuse = false) {
    HostileFile h{family, name, nullptr, must_refuse};
    h.make = [name, f](const std::string& dir) {
        std::vector<uint8_t> b = base_bytes();
        const HeaderMap map(b);
        f(b, map);
        return write_raw(dir, name, b);
    };
    return h;
}

// A file written from the base model after edit.
HostileFile model_entry(std::string family, std::string name, std::function<void(TinyModel&)> edit,
                        bool must_refuse = false) {
    HostileFile h{family, name, nullptr, must_refuse};
    h.make = [name, edit](const std::string& dir) {
        TinyModel m = corpus_base();
        edit(m);
        return write_model(dir, name, m);
    };
    return h;
}

void truncations(std::vector<HostileFile>& out) {
    const size_t size = base_bytes().size(), data = HeaderMap(base_bytes()).data_at;
    std::vector<size_t> cuts;
    for (size_t i = 0; i < 40; i++) cuts.push_back(size * i / 40);
    for (size_t c : {size_t(3), size_t(23), data - 1, data, data + 1, size - 1}) cuts.push_back(c);
    for (size_t c : cuts)
        out.push_back(bytes_entry(
            "cut", "cut-" + std::to_string(c),
            [c](std::vector<uint8_t>& b, const HeaderMap&) { b.resize(c); }, true));
}

void byte_flips(std::vector<HostileFile>& out) {
    for (uint32_t seed = 0; seed < 70; seed++) {
        const bool data = seed >= 55;  // most in the header, where the parser works hardest
        out.push_back(bytes_entry(
            "flip", (data ? "flip-data-" : "flip-header-") + std::to_string(seed),
            [seed, data](std::vector<uint8_t>& b, const HeaderMap& map) {
                std::mt19937 rng(seed * 7919 + 1);
                const size_t lo = data ? map.data_at : 8, hi = data ? b.size() : map.data_at;
                const int n = 1 << (seed % 4);  // 1, 2, 4 or 8 bytes
                for (int i = 0; i < n; i++) {
                    const size_t at = lo + rng() % (hi - lo);
                    b[at] = seed % 3 == 0 ? uint8_t(0xff) : uint8_t(b[at] ^ (1u << (rng() % 8)));
                }
            }));
    }
}

void structure(std::vector<HostileFile>& out) {
    // Most damage is refused, but some leaves a file that still reads (an F16 embedding read
    // from F32 bytes runs): only the version and impossible counts must be refused.
    bool refuse = true;
    auto add = [&](std::string name,
                   std::function<void(std::vector<uint8_t>&, const HeaderMap&)> f) {
        out.push_back(bytes_entry("header", name, std::move(f), refuse));
    };
    for (uint32_t v : {0u, 1u, 4u, 0x03000000u})
        add("version-" + std::to_string(v), [v](auto& b, auto&) { poke<uint32_t>(b, 4, v); });
    for (uint64_t n : {kHuge, uint64_t(1) << 32})
        add("n-tensors-" + std::to_string(n), [n](auto& b, auto&) { poke<uint64_t>(b, 8, n); });
    refuse = false;
    for (uint64_t n : {uint64_t(0), uint64_t(1), uint64_t(16)})
        add("n-tensors-" + std::to_string(n), [n](auto& b, auto&) { poke<uint64_t>(b, 8, n); });
    for (uint64_t n : {uint64_t(0), uint64_t(5)})
        add("n-kv-" + std::to_string(n), [n](auto& b, auto&) { poke<uint64_t>(b, 16, n); });
    refuse = true;
    for (uint64_t n : {kHuge, uint64_t(1) << 32})
        add("n-kv-" + std::to_string(n), [n](auto& b, auto&) { poke<uint64_t>(b, 16, n); });
    refuse = false;
    for (const char* key : {"general.architecture", "llama.block_count", "tokenizer.ggml.tokens"})
        for (uint32_t t : {13u, 0xffffffffu, 9u, 8u, 10u})
            add(std::string("type-") + key + "-" + std::to_string(t),
                [key, t](auto& b, const HeaderMap& m) { poke<uint32_t>(b, m.kv(key).type_at, t); });
    for (uint64_t len : {~uint64_t(0), uint64_t(1) << 40, uint64_t(0xffffffff), uint64_t(0)}) {
        add("key-length-" + std::to_string(len),
            [len](auto& b, const HeaderMap&) { poke<uint64_t>(b, 24, len); });
        add("string-length-" + std::to_string(len), [len](auto& b, const HeaderMap& m) {
            poke<uint64_t>(b, m.kv("general.architecture").value_at, len);
        });
        add("token-length-" + std::to_string(len), [len](auto& b, const HeaderMap& m) {
            poke<uint64_t>(b, m.kv("tokenizer.ggml.tokens").value_at + 12 + 8 * 0, len);
        });
    }
    for (uint64_t n : {kHuge, uint64_t(0), uint64_t(301), uint64_t(1) << 32, uint64_t(299)})
        add("tokens-count-" + std::to_string(n), [n](auto& b, const HeaderMap& m) {
            poke<uint64_t>(b, m.kv("tokenizer.ggml.tokens").value_at + 4, n);
        });
    for (uint32_t et : {9u, 13u, 0u, 7u})
        add("tokens-elem-type-" + std::to_string(et), [et](auto& b, const HeaderMap& m) {
            poke<uint32_t>(b, m.kv("tokenizer.ggml.tokens").value_at, et);
        });
    for (const char* tn : {"token_embd.weight", "blk.0.attn_q.weight", "output_norm.weight"}) {
        const std::string t(tn);
        for (uint32_t nd : {0u, 5u, 9u, 0x80000000u})
            add("ndims-" + t + "-" + std::to_string(nd),
                [t, nd](auto& b, const HeaderMap& m) { poke<uint32_t>(b, m.ti(t).ndims_at, nd); });
        for (uint64_t d :
             {uint64_t(0), uint64_t(1), uint64_t(1) << 63, uint64_t(3), uint64_t(1) << 40})
            add("dim0-" + t + "-" + std::to_string(d),
                [t, d](auto& b, const HeaderMap& m) { poke<uint64_t>(b, m.ti(t).dims_at, d); });
        for (uint32_t ty : {99u, 39u, 1u, 2u, 8u, 14u, 30u})
            add("type-" + t + "-" + std::to_string(ty),
                [t, ty](auto& b, const HeaderMap& m) { poke<uint32_t>(b, m.ti(t).type_at, ty); });
        for (uint64_t off :
             {uint64_t(1), uint64_t(1) << 63, uint64_t(32), uint64_t(0), ~uint64_t(31)})
            add("offset-" + t + "-" + std::to_string(off), [t, off](auto& b, const HeaderMap& m) {
                poke<uint64_t>(b, m.ti(t).offset_at, off);
            });
        for (uint64_t len : {uint64_t(0), ~uint64_t(0)})
            add("name-length-" + t + "-" + std::to_string(len),
                [t, len](auto& b, const HeaderMap& m) { poke<uint64_t>(b, m.ti(t).name_at, len); });
    }
    // Alignment: written as 32 so the layout stays valid, then changed to a bad value.
    for (uint32_t a : {0u, 3u, 1u << 31, 64u, 1u, 48u}) {
        HostileFile h{"header", "alignment-" + std::to_string(a), nullptr, a != 1};
        h.make = [a, name = h.name](const std::string& dir) {
            gguf::Writer w = corpus_base().writer();
            w.set_alignment(32);
            auto r = w.to_bytes();
            std::vector<uint8_t> b = std::move(r).value();
            poke<uint32_t>(b, HeaderMap(b).kv("general.alignment").value_at, a);
            return write_raw(dir, name, b);
        };
        out.push_back(h);
    }
}

void metadata(std::vector<HostileFile>& out) {
    const std::vector<std::pair<std::string, gguf::Value>> ints = {
        {"0", u32v(0)},           {"1", u32v(1)},
        {"3", u32v(3)},           {"u32max", u32v(0xffffffffu)},
        {"i32-neg", i32v(-1)},    {"u64-2e40", u64v(uint64_t(1) << 40)},
        {"string", strv("64")},   {"float", f32v(64.0)},
        {"bool", boolv(true)},    {"array", arrv(VT::UINT32, {u32v(64)})},
        {"2e31", u32v(1u << 31)}, {"65536", u32v(65536)},
    };
    for (const char* k :
         {"context_length", "embedding_length", "block_count", "feed_forward_length",
          "attention.head_count", "attention.head_count_kv", "rope.dimension_count"})
        for (const auto& [vn, v] : ints) {
            const std::string key = std::string("llama.") + k;
            out.push_back(
                model_entry("metadata", key + "-" + vn, [key, v](TinyModel& m) { m.set(key, v); }));
        }
    const std::vector<std::pair<std::string, gguf::Value>> floats = {
        {"0", f32v(0)},          {"neg", f32v(-1)},         {"nan", f32v(std::nan(""))},
        {"inf", f32v(INFINITY)}, {"-inf", f32v(-INFINITY)}, {"tiny", f32v(1e-45)},
        {"1e38", f32v(1e38)},    {"string", strv("1e-5")},
    };
    for (const char* k : {"llama.attention.layer_norm_rms_epsilon", "llama.rope.freq_base",
                          "llama.rope.scaling.factor"})
        for (const auto& [vn, v] : floats) {
            const std::string key = k;
            out.push_back(
                model_entry("metadata", key + "-" + vn, [key, v](TinyModel& m) { m.set(key, v); }));
        }
    for (const auto& [vn, v] :
         std::vector<std::pair<std::string, gguf::Value>>{{"empty", strv("")},
                                                          {"nul", strv(std::string("llama\0x", 7))},
                                                          {"upper", strv("LLAMA")},
                                                          {"u32", u32v(7)},
                                                          {"unknown", strv("x-arch")},
                                                          {"long", strv(std::string(70000, 'a'))}})
        out.push_back(model_entry("metadata", "arch-" + vn,
                                  [v](TinyModel& m) { m.set("general.architecture", v); }));
}

void tokenizer(std::vector<HostileFile>& out) {
    for (const char* k : {"bos_token_id", "eos_token_id", "unknown_token_id"})
        for (const auto& [vn, v] :
             std::vector<std::pair<std::string, gguf::Value>>{{"neg", i32v(-1)},
                                                              {"300", u32v(300)},
                                                              {"2e31", u32v(1u << 31)},
                                                              {"u32max", u32v(0xffffffffu)},
                                                              {"string", strv("1")}}) {
            const std::string key = std::string("tokenizer.ggml.") + k;
            out.push_back(model_entry("tokenizer", key + "-" + vn,
                                      [key, v](TinyModel& m) { m.set(key, v); }));
        }
    for (const char* model : {"gpt2", "bert", "", "none", "llama\xff", "rwkv"}) {
        const std::string mv = model;
        out.push_back(model_entry("tokenizer", "model-" + std::to_string(out.size()),
                                  [mv](TinyModel& m) { m.set("tokenizer.ggml.model", strv(mv)); }));
    }
    auto tokens = [&](std::string name, std::function<std::string(uint32_t)> text) {
        out.push_back(model_entry("tokenizer", "tokens-" + name, [text](TinyModel& m) {
            for (uint32_t i = 0; i < m.vocab; i++)
                if (std::string t = text(i); t != "\x01keep") m.token_text[i] = t;
        }));
    };
    tokens("empty", [](uint32_t) { return std::string(); });
    tokens("huge", [](uint32_t i) { return i == 280 ? std::string(65536, 'x') : "\x01keep"; });
    tokens("bad-utf8",
           [](uint32_t i) { return i > 260 ? std::string("\xff\xfe\xc0", 3) : "\x01keep"; });
    tokens("same", [](uint32_t) { return std::string("a"); });
    tokens("control",
           [](uint32_t i) { return i > 258 ? std::string(1, char(i % 32)) : "\x01keep"; });
    tokens("nul", [](uint32_t i) { return i > 258 ? std::string("a\0b", 3) : "\x01keep"; });
    auto array = [&](std::string name, std::string key, gguf::Value v) {
        out.push_back(model_entry("tokenizer", name, [key, v](TinyModel& m) { m.set(key, v); }));
    };
    std::vector<gguf::Value> nan_scores(300, f32v(std::nan(""))), short_scores(10, f32v(0));
    std::vector<gguf::Value> inf_scores(300, f32v(-INFINITY));
    array("scores-nan", "tokenizer.ggml.scores", arrv(VT::FLOAT32, nan_scores));
    array("scores-inf", "tokenizer.ggml.scores", arrv(VT::FLOAT32, inf_scores));
    array("scores-short", "tokenizer.ggml.scores", arrv(VT::FLOAT32, short_scores));
    array("scores-strings", "tokenizer.ggml.scores", arrv(VT::STRING, {strv("a")}));
    for (int64_t t : {int64_t(0), int64_t(-1), int64_t(100), int64_t(7), int64_t(4)})
        array("token-type-" + std::to_string(t), "tokenizer.ggml.token_type",
              arrv(VT::INT32, std::vector<gguf::Value>(300, i32v(t))));
    array("token-type-short", "tokenizer.ggml.token_type", arrv(VT::INT32, {i32v(1)}));
    for (const auto& [vn, merges] : std::vector<std::pair<std::string, std::vector<std::string>>>{
             {"one-word", {"a"}},
             {"empty", {""}},
             {"three", {"a b c"}},
             {"unknown", {"zz qq"}},
             {"many", std::vector<std::string>(5000, "a b")}}) {
        std::vector<gguf::Value> mv;
        for (const auto& s : merges) mv.push_back(strv(s));
        out.push_back(model_entry("tokenizer", "gpt2-merges-" + vn, [mv](TinyModel& m) {
            m.set("tokenizer.ggml.model", strv("gpt2"));
            m.set("tokenizer.ggml.merges", arrv(VT::STRING, mv));
        }));
    }
    for (const auto& [vn, tpl] : std::vector<std::pair<std::string, std::string>>{
             {"unclosed", "{% for m in messages %}"},
             {"deep", std::string(3000, '(')},
             {"include", "{% include 'x' %}"},
             {"loop", "{% for i in range(1000000000) %}x{% endfor %}"}})
        out.push_back(model_entry("tokenizer", "template-" + vn, [tpl](TinyModel& m) {
            m.set("tokenizer.chat_template", strv(tpl));
        }));
}

void tensors(std::vector<HostileFile>& out) {
    const std::vector<std::string> names = {
        "token_embd.weight",      "output_norm.weight",       "output.weight",
        "blk.0.attn_norm.weight", "blk.0.attn_q.weight",      "blk.0.attn_k.weight",
        "blk.0.attn_v.weight",    "blk.0.attn_output.weight", "blk.0.ffn_norm.weight",
        "blk.0.ffn_gate.weight",  "blk.0.ffn_up.weight",      "blk.0.ffn_down.weight"};
    for (const auto& n : names) {
        out.push_back(model_entry(
            "tensor", "missing-" + n, [n](TinyModel& m) { m.remove(n); }, n != "output.weight"));
        out.push_back(model_entry("tensor", "huge-" + n, [n](TinyModel& m) {
            TensorSpec& t = m.tensor(n);
            for (size_t i = 0; i < t.bytes.size() / 4; i++) set_f32(t, i, i % 3 ? 3e38f : -3e38f);
        }));
        out.push_back(model_entry(
            "tensor", "nan-" + n, [n](TinyModel& m) { set_f32(m.tensor(n), 1, std::nanf("")); },
            true));
        out.push_back(model_entry("tensor", "transposed-" + n, [n](TinyModel& m) {
            TensorSpec& t = m.tensor(n);
            if (t.dims.size() == 2)
                std::swap(t.dims[0], t.dims[1]);
            else
                t.dims = {t.dims[0] / 2, 2};
        }));
    }
    for (const auto& [vn, v] : std::vector<std::pair<std::string, float>>{{"zero", 0.0f},
                                                                          {"neg", -1.0f},
                                                                          {"nan", std::nanf("")},
                                                                          {"inf", INFINITY},
                                                                          {"tiny", 1e-40f}}) {
        const float x = v;
        out.push_back(model_entry(
            "tensor", "rope-freqs-" + vn,
            [x](TinyModel& m) {
                m.tensors.push_back(
                    {"rope_freqs.weight", GgmlType::F32, {8}, f32_bytes(std::vector<float>(8, x))});
            },
            vn == "zero" || vn == "nan"));
    }
    for (uint64_t len : {uint64_t(3), uint64_t(16), uint64_t(1)})
        out.push_back(
            model_entry("tensor", "rope-freqs-length-" + std::to_string(len), [len](TinyModel& m) {
                m.tensors.push_back({"rope_freqs.weight",
                                     GgmlType::F32,
                                     {len},
                                     f32_bytes(std::vector<float>(len, 1.0f))});
            }));
    // Aliases: legal ones run; overlaps are refused; many aliased layers stay small.
    out.push_back(model_entry("alias", "alias-output", [](TinyModel& m) {
        m.remove("output.weight");
        m.views["output.weight"] = "token_embd.weight";
    }));
    for (uint32_t layers : {2u, 64u, 1024u})
        out.push_back(model_entry("alias", "alias-layers-" + std::to_string(layers),
                                  [layers](TinyModel& m) { m.alias_layers(layers); }));
    // A KV cache of 512 GiB for the whole context: refused before anything is allocated.
    for (uint32_t ctx : {1u << 20, 1u << 31}) {
        auto edit = [ctx](TinyModel& m) {
            m.alias_layers(1024);
            m.ctx = ctx;
        };
        HostileFile h = model_entry("alias", "alias-kv-ctx-" + std::to_string(ctx), edit, true);
        h.args = {"--ctx", "1048576"};
        out.push_back(h);
    }
    auto overlap = [&](std::string name, std::string view, std::string of, GgmlType type,
                       std::vector<uint64_t> dims, uint64_t at) {
        HostileFile h{"alias", name, nullptr, true};
        h.make = [=](const std::string& dir) {
            TinyModel m = corpus_base();
            m.remove(view);
            gguf::Writer w = m.writer();
            w.add_view(view, type, dims, of, at);
            const std::string path = dir + "/" + name + ".gguf";
            if (!w.write(path).ok()) throw std::runtime_error("cannot write " + path);
            return path;
        };
        out.push_back(h);
    };
    overlap("overlap-partial", "blk.0.ffn_up.weight", "blk.0.ffn_gate.weight", GgmlType::F32,
            {64, 64}, 512);
    overlap("overlap-inside", "blk.0.attn_norm.weight", "blk.0.attn_q.weight", GgmlType::F32, {64},
            1024);
    overlap("overlap-shape", "blk.0.attn_k.weight", "blk.0.attn_q.weight", GgmlType::F32, {32, 128},
            0);
    overlap("overlap-type", "blk.0.attn_v.weight", "blk.0.attn_q.weight", GgmlType::F16, {64, 128},
            0);
    overlap("overlap-embd", "output.weight", "token_embd.weight", GgmlType::F32, {64, 300}, 64);
    for (GgmlType t : {GgmlType::Q2_K, GgmlType::IQ2_XXS, GgmlType::Q3_K, GgmlType::IQ4_NL,
                       GgmlType::Q8_0, GgmlType::Q4_0})
        out.push_back(model_entry(
            "tensor", "norm-type-" + std::string(type_name(t)),
            [t](TinyModel& m) {
                TensorSpec& n = m.tensor("blk.0.attn_norm.weight");
                n.type = t;
                n.bytes = random_bytes(t, 256, 1, 1.0f, 5);
                n.dims = {256};
            },
            true));
}

void whole_models(std::vector<HostileFile>& out) {
    for (GgmlType t : {GgmlType::F16, GgmlType::BF16, GgmlType::Q4_0, GgmlType::Q8_0,
                       GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::Q5_0, GgmlType::Q2_K}) {
        HostileFile h{"tensor", "model-" + std::string(type_name(t)), nullptr, t == GgmlType::Q2_K};
        h.make = [t, name = h.name](const std::string& dir) {
            const bool k = t == GgmlType::Q4_K || t == GgmlType::Q6_K || t == GgmlType::Q2_K;
            return write_model(dir, name, TinyModel::make(t, k ? 256 : 64, k ? 256 : 64));
        };
        out.push_back(h);
    }
}

void not_regular(std::vector<HostileFile>& out) {
    auto add = [&](std::string name, std::function<std::string(const std::string&)> make) {
        out.push_back({"path", name, std::move(make), true});
    };
    add("fifo", [](const std::string& dir) {
        const std::string p = dir + "/fifo.gguf";
        ::mkfifo(p.c_str(), 0600);
        return p;
    });
    add("directory", [](const std::string& dir) {
        const std::string p = dir + "/dir.gguf";
        ::mkdir(p.c_str(), 0700);
        return p;
    });
    add("socket", [](const std::string& dir) {
        const std::string p = dir + "/sock.gguf";
        sockaddr_un a = {};
        a.sun_family = AF_UNIX;
        std::snprintf(a.sun_path, sizeof a.sun_path, "%s", p.c_str());
        const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
        ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
        ::close(fd);  // the socket file stays
        return p;
    });
    for (const char* target : {"/dev/zero", "/dev/null", "/nonexistent/model.gguf", "/dev/stdin"}) {
        const std::string t = target;
        const std::string name = "symlink-" + std::to_string(out.size());
        add(name, [t, name](const std::string& dir) {
            const std::string p = dir + "/" + name + ".gguf";
            ::symlink(t.c_str(), p.c_str());
            return p;
        });
    }
    for (const auto& [name, bytes] : std::vector<std::pair<std::string, std::vector<uint8_t>>>{
             {"empty", {}},
             {"zeros", std::vector<uint8_t>(1 << 20, 0)},
             {"magic-only", {'G', 'G', 'U', 'F'}},
             {"header-only", {'G', 'G', 'U', 'F', 3, 0, 0, 0}}}) {
        const auto b = bytes;
        add("raw-" + name,
            [b, name](const std::string& dir) { return write_raw(dir, "raw-" + name, b); });
    }
}

}  // namespace

std::vector<HostileFile> hostile_corpus() {
    std::vector<HostileFile> out;
    truncations(out);
    byte_flips(out);
    structure(out);
    metadata(out);
    tokenizer(out);
    tensors(out);
    whole_models(out);
    not_regular(out);
    return out;
}

}  // namespace ember::test
