// mkmodel: a GGUF model of a real shape with random weights, for tests and benchmarks, with the
// per-tensor types llama.cpp's quantizer gives the chosen file type (quant/mix.h).
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "args.h"
#include "common.h"
#include "cpu/threadpool.h"
#include "gguf/gguf.h"
#include "gguf/writer.h"
#include "mkmodel_shapes.h"
#include "quant/mix.h"
#include "quant/quant.h"

namespace ember::cli {
namespace {

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

// The shape: a preset, or --embd/--layers/--heads/--kv-heads/--ffn (a Llama); the same options
// given with a preset override its numbers and keep its architecture's structure, so a test can
// write a 2-layer Gemma 3 with a small vocabulary.
Result<mkmodel::Shape> read_shape(const Args& a) {
    mkmodel::Shape s;
    const bool preset = a.has("--preset");
    if (preset) {
        const auto& all = mkmodel::presets();
        auto it = all.find(*a.get("--preset"));
        if (it == all.end()) {
            std::string names;
            for (const auto& [k, v] : all) names += (names.empty() ? "" : ", ") + k;
            return make_error("cli.bad_option",
                              "unknown preset '" + *a.get("--preset") + "' (known: " + names + ")");
        }
        s = it->second;
    }
    struct Field {
        const char* name;
        uint32_t* dst;
        long long lo, hi;
    };
    const Field fields[] = {
        {"--embd", &s.embd, 1, 65536},  {"--layers", &s.layers, 1, 1024},
        {"--heads", &s.heads, 1, 1024}, {"--kv-heads", &s.kv_heads, 1, 1024},
        {"--ffn", &s.ffn, 1, 1 << 20},  {"--head-dim", &s.head_dim, 2, 4096},
        {"--ctx", &s.ctx, 1, 1 << 24},  {"--orig-ctx", &s.orig_ctx, 1, 1 << 24}};
    for (const Field& f : fields) {
        const bool required = !preset && std::string(f.name) != "--head-dim" &&
                              std::string(f.name) != "--ctx" && std::string(f.name) != "--orig-ctx";
        if (!a.has(f.name)) {
            if (required)
                return make_error("cli.missing_option",
                                  std::string("missing ") + f.name + " (or use --preset)");
            continue;
        }
        EMBER_ASSIGN_OR_RETURN(auto v, a.get_int(f.name, 0, f.lo, f.hi));
        *f.dst = uint32_t(v);
    }
    EMBER_ASSIGN_OR_RETURN(auto rb, a.get_double("--rope-base", s.rope_base, 1, 1e9));
    s.rope_base = float(rb);
    // YaRN over the model's context, as Qwen's config.json adds it for long inputs.
    EMBER_ASSIGN_OR_RETURN(auto yarn, a.get_double("--yarn", 0.0, 1.0, 1024.0));
    s.yarn = float(yarn);
    return s;
}

// Writes the tokenizer: copied from --vocab-from, or a synthetic one of --vocab tokens.
Status write_vocab(const Args& a, gguf::Writer& w, mkmodel::Shape& s) {
    if (auto vf = a.get("--vocab-from")) {
        EMBER_ASSIGN_OR_RETURN(auto f, gguf::File::open(*vf));
        for (const auto& kv : f->metadata())
            if (kv.key.rfind("tokenizer.", 0) == 0) w.set_value(kv.key, kv.value);
        const auto* toks = f->get_array("tokenizer.ggml.tokens");
        if (!toks) return make_error("cli.bad_option", *vf + ": has no tokenizer.ggml.tokens");
        s.vocab = uint32_t(toks->size());
        return {};
    }
    EMBER_ASSIGN_OR_RETURN(auto v, a.get_int("--vocab", s.vocab ? s.vocab : 512, 260, 1 << 22));
    s.vocab = uint32_t(v);
    synthetic_vocab(w, s.vocab);
    return {};
}

// --chat-template FILE: the Jinja text becomes tokenizer.chat_template (after --vocab-from's,
// which it replaces), so a small file can carry a family's real template.
Status write_chat_template(const Args& a, gguf::Writer& w) {
    auto path = a.get("--chat-template");
    if (!path) return {};
    std::ifstream in(*path, std::ios::binary);
    if (!in) return make_error("cli.bad_option", "--chat-template: cannot read '" + *path + "'");
    std::ostringstream text;
    text << in.rdbuf();
    if (text.str().empty())
        return make_error("cli.bad_option", "--chat-template: '" + *path + "' is empty");
    w.set_string("tokenizer.chat_template", text.str());
    return {};
}

}  // namespace

int cmd_mkmodel(int argc, char** argv) {
    Args a({"--pure"},
           {"--output", "--preset", "--embd", "--layers", "--heads", "--kv-heads", "--head-dim",
            "--ffn", "--vocab-from", "--vocab", "--ctx", "--type", "--seed", "--threads",
            "--rope-base", "--chat-template", "--yarn", "--orig-ctx"},
           {{"-o", "--output"}, {"-t", "--threads"}});
    if (auto st = a.parse(argc, argv, 2); !st) return fail(st.error());
    auto out = a.require("--output");
    if (!out) return fail(out.error());
    auto type_s = a.require("--type");
    if (!type_s) return fail(type_s.error());
    const auto ft = find_file_type(*type_s);
    if (!ft)
        return fail("--type '" + *type_s +
                    "' is not a type mkmodel writes (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, "
                    "Q6_K, the mixes Q4_K_M, Q5_K_M, Q4_K_S, Q5_K_S, or all-Q4_K / all-Q5_K as "
                    "Q4_K, Q5_K)");
    auto shape = read_shape(a);
    if (!shape) return fail(shape.error());
    mkmodel::Shape s = *shape;
    auto seed = a.get_int("--seed", 1, 0, 1LL << 62);
    if (!seed) return fail(seed.error());
    auto threads = a.get_int("--threads", 0, 0, 1024);
    if (!threads) return fail(threads.error());

    gguf::Writer w;
    if (auto st = write_vocab(a, w, s); !st) return fail(st.error());
    if (auto st = write_chat_template(a, w); !st) return fail(st.error());
    if (auto st = mkmodel::check_shape(s); !st) return fail(st.error());

    // Each tensor's type, as llama-quantize would give it (or the one type with --pure); a
    // shape llama.cpp could not quantize fails here, before anything is written.
    const bool pure = a.has("--pure");
    const MixModel mix{s.arch, s.layers, s.heads, s.kv_heads, !s.tied};
    const auto specs = mkmodel::tensor_list(s);
    std::vector<GgmlType> types;
    std::map<std::string, int> per_type;
    for (const auto& t : specs) {
        auto ty = llamacpp_tensor_type(*ft, mix, t.name, t.dims[0], int(t.dims.size()), pure);
        if (!ty) return fail(ty.error().message + " (--type " + *type_s + ")");
        types.push_back(*ty);
        if (t.dims.size() >= 2) per_type[std::string(type_name(*ty))]++;
    }

    w.set_string("general.architecture", s.arch);
    w.set_string("general.name", a.get_or("--preset", "synthetic") + " (random weights)");
    w.set_u32("general.file_type", uint32_t(ft->ftype));
    w.set_u32("general.quantization_version", 2);
    mkmodel::write_hparams(w, s);

    cpu::ThreadPool pool(*threads > 0 ? int(*threads) : cpu::physical_cores());
    uint64_t tensor_seed = uint64_t(*seed) * 0x9E3779B97F4A7C15ULL;
    for (size_t i = 0; i < specs.size(); i++) {
        const auto& t = specs[i];
        const GgmlType ty = types[i];
        const uint64_t tseed = tensor_seed++;
        if (!t.values.empty()) {  // fixed F32 values
            std::vector<uint8_t> bytes(t.values.size() * sizeof(float));
            std::memcpy(bytes.data(), t.values.data(), bytes.size());
            w.add_tensor(t.name, GgmlType::F32, t.dims, std::move(bytes));
        } else if (t.dims.size() == 1) {  // F32 vector: center + [-scale, scale]
            const uint64_t n = t.dims[0];
            const float center = t.center, spread = t.scale;
            w.add_tensor(t.name, GgmlType::F32, t.dims,
                         [n, center, spread, tseed](uint8_t* dst, uint64_t) {
                             std::vector<float> tmp(n);
                             fill_random(GgmlType::F32, tmp.data(), int64_t(n), tseed, spread);
                             for (auto& v : tmp) v += center;
                             std::memcpy(dst, tmp.data(), n * sizeof(float));
                         });
        } else {  // a matrix: random blocks written directly in its type, in parallel chunks of
                  // rows
            const uint64_t cols = t.dims[0], rows = t.dims[1];
            const float scale = t.scale;
            w.add_tensor(
                t.name, ty, t.dims, [&pool, ty, cols, rows, scale, tseed](uint8_t* dst, uint64_t) {
                    const uint64_t rb = row_bytes(*type_traits(ty), cols);
                    const int chunks = int(std::min<uint64_t>(rows, 256));
                    pool.parallel_for(chunks, [&](int c, int) {
                        const uint64_t r0 = rows * c / chunks, r1 = rows * (c + 1) / chunks;
                        fill_random(ty, dst + r0 * rb, int64_t((r1 - r0) * cols),
                                    tseed * 1000003ULL + c, scale);
                    });
                });
        }
    }
    const auto t0 = std::chrono::steady_clock::now();
    if (auto st = w.write(*out); !st) return fail(st.error());
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::string mixdesc;
    for (const auto& [name, n] : per_type)
        mixdesc += (mixdesc.empty() ? "" : ", ") + std::to_string(n) + " " + name;
    std::fprintf(stderr,
                 "ember-cli: wrote %s (%s %s%s, %u layers, vocab %u; matrices: %s) in %.1f s\n",
                 out->c_str(), s.arch.c_str(), std::string(ft->name).c_str(), pure ? " pure" : "",
                 s.layers, s.vocab, mixdesc.c_str(), secs);
    return 0;
}

}  // namespace ember::cli
