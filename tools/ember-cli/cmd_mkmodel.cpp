// mkmodel: a Llama-architecture GGUF with random weights, for tests and benchmarks.
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>

#include "args.h"
#include "common.h"
#include "cpu/threadpool.h"
#include "gguf/gguf.h"
#include "gguf/writer.h"
#include "quant/quant.h"

namespace ember::cli {
namespace {

struct Shape {
    uint32_t embd, layers, heads, kv_heads, ffn, vocab, ctx;
    float rope_base;
    bool tied;
    bool llama3_rope;  // adds a rope_freqs tensor as Llama 3.1+ files have
};

// Real models' shapes (random weights). Vocabulary sizes match the originals.
const std::map<std::string, Shape> kPresets = {
    {"tinyllama-1.1b", {2048, 22, 32, 4, 5632, 32000, 2048, 10000.0f, false, false}},
    {"llama2-7b", {4096, 32, 32, 32, 11008, 32000, 4096, 10000.0f, false, false}},
    {"llama3.2-1b", {2048, 16, 32, 8, 8192, 128256, 131072, 500000.0f, true, true}},
    {"llama3-8b", {4096, 32, 32, 8, 14336, 128256, 8192, 500000.0f, false, false}},
    {"smollm2-135m", {576, 30, 9, 3, 1536, 49152, 8192, 100000.0f, true, false}},
    {"qwen2.5-0.5b", {896, 24, 14, 2, 4864, 151936, 32768, 1000000.0f, true, false}},
};

// A SentencePiece vocabulary of n tokens: <unk>, <s>, </s>, the 256 byte tokens, then
// distinct filler pieces, so the model loads and tokenizes any text (byte fallback).
void synthetic_vocab(gguf::Writer& w, uint32_t n) {
    std::vector<std::string> tokens;
    std::vector<float> scores;
    std::vector<int32_t> types;
    tokens.reserve(n);
    const char* specials[] = {"<unk>", "<s>", "</s>"};
    for (int i = 0; i < 3 && tokens.size() < n; i++) {
        tokens.push_back(specials[i]);
        scores.push_back(0.0f);
        types.push_back(i == 0 ? 2 : 3);
    }
    for (int b = 0; b < 256 && tokens.size() < n; b++) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "<0x%02X>", b);
        tokens.push_back(buf);
        scores.push_back(0.0f);
        types.push_back(6);
    }
    for (uint32_t i = 0; tokens.size() < n; i++) {
        tokens.push_back("\xE2\x96\x81tok" + std::to_string(i));
        scores.push_back(-float(i));
        types.push_back(1);
    }
    w.set_string("tokenizer.ggml.model", "llama");
    w.set_string_array("tokenizer.ggml.tokens", tokens);
    w.set_f32_array("tokenizer.ggml.scores", scores);
    w.set_i32_array("tokenizer.ggml.token_type", types);
    w.set_u32("tokenizer.ggml.bos_token_id", 1);
    w.set_u32("tokenizer.ggml.eos_token_id", 2);
    w.set_u32("tokenizer.ggml.unknown_token_id", 0);
}

// Llama 3.1-style frequency divisors (factor 32, low 1, high 4, original context 8192).
std::vector<float> llama3_rope_freqs(int n_rot, float base) {
    const float factor = 32.0f, low = 1.0f, high = 4.0f, old_ctx = 8192.0f;
    std::vector<float> f(size_t(n_rot / 2));
    for (int i = 0; i < n_rot / 2; i++) {
        const float freq = std::pow(base, -2.0f * i / n_rot);
        const float wavelen = 2.0f * float(M_PI) / freq;
        if (wavelen < old_ctx / high) f[size_t(i)] = 1.0f;
        else if (wavelen > old_ctx / low) f[size_t(i)] = factor;
        else {
            const float smooth = (old_ctx / wavelen - low) / (high - low);
            f[size_t(i)] = 1.0f / ((1 - smooth) / factor + smooth);
        }
    }
    return f;
}

}  // namespace

int cmd_mkmodel(int argc, char** argv) {
    Args a({}, {"--output", "--preset", "--embd", "--layers", "--heads", "--kv-heads", "--ffn",
                "--vocab-from", "--vocab", "--ctx", "--type", "--seed", "--threads", "--rope-base"},
           {{"-o", "--output"}, {"-t", "--threads"}});
    if (auto st = a.parse(argc, argv, 2); !st) return fail(st.error());
    auto out = a.require("--output");
    if (!out) return fail(out.error());
    auto type_s = a.require("--type");
    if (!type_s) return fail(type_s.error());
    GgmlType type = GgmlType::F32;
    bool found = false;
    std::string upper = *type_s;
    for (auto& c : upper) c = char(std::toupper((unsigned char)c));
    // llama.cpp's Q4_K_M and Q5_K_M mixes: Q6_K for the output, and for attn_v and ffn_down in
    // the layers its use_more_bits picks; general.file_type 15 and 17 as llama.cpp writes.
    std::optional<GgmlType> more_bits;
    uint32_t file_type = 0;
    if (upper == "Q4_K_M" || upper == "Q5_K_M") {
        more_bits = GgmlType::Q6_K;
        file_type = upper == "Q4_K_M" ? 15 : 17;
        upper = upper.substr(0, 4);
    }
    for (uint32_t id = 0; id < 64 && !found; id++) {
        auto tt = type_traits(id);
        if (tt && tt->supported && tt->name == upper) {
            type = GgmlType(id);
            found = true;
        }
    }
    if (!found)
        return fail("--type '" + *type_s +
                    "' is not a supported weight type (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, "
                    "Q5_1, Q4_K, Q5_K, Q6_K, or the mixes Q4_K_M, Q5_K_M)");

    Shape s{};
    if (auto preset = a.get("--preset")) {
        auto it = kPresets.find(*preset);
        if (it == kPresets.end()) {
            std::string names;
            for (const auto& [k, v] : kPresets) names += (names.empty() ? "" : ", ") + k;
            return fail("unknown preset '" + *preset + "' (known: " + names + ")");
        }
        s = it->second;
    } else {
        auto req = [&](const char* name, long long lo, long long hi) -> Result<long long> {
            if (!a.has(name)) return make_error("cli.missing_option", std::string("missing ") + name + " (or use --preset)");
            return a.get_int(name, 0, lo, hi);
        };
        auto e = req("--embd", 1, 65536), l = req("--layers", 1, 1024), h = req("--heads", 1, 1024),
             k = req("--kv-heads", 1, 1024), f = req("--ffn", 1, 1 << 20);
        for (auto* r : {&e, &l, &h, &k, &f}) if (!*r) return fail(r->error());
        s = {uint32_t(*e), uint32_t(*l), uint32_t(*h), uint32_t(*k), uint32_t(*f), 0, 2048, 10000.0f, false, false};
    }
    if (auto c = a.get_int("--ctx", s.ctx, 1, 1 << 24); c) s.ctx = uint32_t(*c); else return fail(c.error());
    if (auto rb = a.get_double("--rope-base", s.rope_base, 1, 1e9); rb) s.rope_base = float(*rb); else return fail(rb.error());
    if (s.embd % s.heads || s.heads % s.kv_heads)
        return fail("--embd must be a multiple of --heads, and --heads of --kv-heads");
    const auto tt = *type_traits(type);
    if (s.embd % tt.block_elems || s.ffn % tt.block_elems)
        return fail("--embd and --ffn must be multiples of " + std::to_string(tt.block_elems) +
                    " for type " + std::string(tt.name));
    auto seed = a.get_int("--seed", 1, 0, 1LL << 62);
    if (!seed) return fail(seed.error());
    auto threads = a.get_int("--threads", 0, 0, 1024);
    if (!threads) return fail(threads.error());

    gguf::Writer w;
    std::unique_ptr<gguf::File> vocab_file;
    if (auto vf = a.get("--vocab-from")) {
        auto f = gguf::File::open(*vf);
        if (!f) return fail(f.error());
        vocab_file = std::move(*f);
        for (const auto& kv : vocab_file->metadata())
            if (kv.key.rfind("tokenizer.", 0) == 0) w.set_value(kv.key, kv.value);
        const auto* toks = vocab_file->get_array("tokenizer.ggml.tokens");
        if (!toks) return fail(*vf + ": has no tokenizer.ggml.tokens");
        s.vocab = uint32_t(toks->size());
    } else {
        auto v = a.get_int("--vocab", s.vocab ? s.vocab : 512, 260, 1 << 22);
        if (!v) return fail(v.error());
        s.vocab = uint32_t(*v);
        synthetic_vocab(w, s.vocab);
    }

    const uint32_t head_dim = s.embd / s.heads;
    w.set_string("general.architecture", "llama");
    w.set_string("general.name", a.get_or("--preset", "synthetic") + " (random weights)");
    w.set_u32("general.file_type", more_bits ? file_type : uint32_t(type));
    w.set_u32("llama.context_length", s.ctx);
    w.set_u32("llama.embedding_length", s.embd);
    w.set_u32("llama.block_count", s.layers);
    w.set_u32("llama.feed_forward_length", s.ffn);
    w.set_u32("llama.attention.head_count", s.heads);
    w.set_u32("llama.attention.head_count_kv", s.kv_heads);
    w.set_u32("llama.rope.dimension_count", head_dim);
    w.set_f32("llama.rope.freq_base", s.rope_base);
    w.set_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
    w.set_u32("llama.vocab_size", s.vocab);

    cpu::ThreadPool pool(*threads > 0 ? int(*threads) : cpu::physical_cores());
    uint64_t tensor_seed = uint64_t(*seed) * 0x9E3779B97F4A7C15ULL;
    // Random blocks written directly in the target type, in parallel chunks of rows.
    auto matrix = [&](const std::string& name, uint32_t cols, uint32_t rows, GgmlType t, float scale) {
        const uint64_t tseed = tensor_seed++;
        w.add_tensor(name, t, {cols, rows}, [&pool, t, cols, rows, scale, tseed](uint8_t* dst, uint64_t) {
            const auto tr = *type_traits(t);
            const uint64_t rb = row_bytes(tr, cols);
            const int chunks = int(std::min<uint64_t>(rows, 256));
            pool.parallel_for(chunks, [&](int c, int) {
                const uint64_t r0 = uint64_t(rows) * c / chunks, r1 = uint64_t(rows) * (c + 1) / chunks;
                fill_random(t, dst + r0 * rb, int64_t((r1 - r0) * cols), tseed * 1000003ULL + c, scale);
            });
        });
    };
    auto vector = [&](const std::string& name, uint32_t n, float center, float spread) {
        const uint64_t tseed = tensor_seed++;
        w.add_tensor(name, GgmlType::F32, {n}, [n, center, spread, tseed](uint8_t* dst, uint64_t) {
            std::vector<float> tmp(n);
            fill_random(GgmlType::F32, tmp.data(), n, tseed, spread);
            for (auto& v : tmp) v += center;
            std::memcpy(dst, tmp.data(), n * sizeof(float));
        });
    };
    const uint32_t qd = s.heads * head_dim, kvd = s.kv_heads * head_dim;
    matrix("token_embd.weight", s.embd, s.vocab, type, 1.0f);
    vector("output_norm.weight", s.embd, 1.0f, 0.1f);
    if (!s.tied)
        matrix("output.weight", s.embd, s.vocab, more_bits.value_or(type),
               1.0f / std::sqrt(float(s.embd)));
    if (s.llama3_rope) {
        auto f = llama3_rope_freqs(int(head_dim), s.rope_base);
        std::vector<uint8_t> bytes(f.size() * 4);
        std::memcpy(bytes.data(), f.data(), bytes.size());
        w.add_tensor("rope_freqs.weight", GgmlType::F32, {uint64_t(f.size())}, std::move(bytes));
    }
    for (uint32_t l = 0; l < s.layers; l++) {
        const std::string p = "blk." + std::to_string(l) + ".";
        const uint32_t n = s.layers;
        const bool use_more_bits =
            l < n / 8 || l >= 7 * n / 8 || (l >= n / 8 && (l - n / 8) % 3 == 2);
        const GgmlType vd_type = use_more_bits ? more_bits.value_or(type) : type;
        const float in_scale = 1.0f / std::sqrt(float(s.embd)), ff_scale = 1.0f / std::sqrt(float(s.ffn));
        vector(p + "attn_norm.weight", s.embd, 1.0f, 0.1f);
        matrix(p + "attn_q.weight", s.embd, qd, type, in_scale);
        matrix(p + "attn_k.weight", s.embd, kvd, type, in_scale);
        matrix(p + "attn_v.weight", s.embd, kvd, vd_type, in_scale);
        matrix(p + "attn_output.weight", qd, s.embd, type, 1.0f / std::sqrt(float(qd)));
        vector(p + "ffn_norm.weight", s.embd, 1.0f, 0.1f);
        matrix(p + "ffn_gate.weight", s.embd, s.ffn, type, in_scale);
        matrix(p + "ffn_up.weight", s.embd, s.ffn, type, in_scale);
        matrix(p + "ffn_down.weight", s.ffn, s.embd, vd_type, ff_scale);
    }
    const auto t0 = std::chrono::steady_clock::now();
    if (auto st = w.write(*out); !st) return fail(st.error());
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "ember-cli: wrote %s (%s, %u layers, vocab %u) in %.1f s\n", out->c_str(),
                 more_bits ? type_s->c_str() : std::string(tt.name).c_str(), s.layers, s.vocab,
                 secs);
    return 0;
}

}  // namespace ember::cli
