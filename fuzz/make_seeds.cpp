// Writes the seed GGUF files of fuzz/corpus/gguf: small, valid files that reach deep into the
// reader, the Llama loader and both tokenizers, for the fuzzer to mutate.
// Usage: fuzz_make_seeds DIR
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gguf/writer.h"
#include "quant/quant.h"

using namespace ember;
using gguf::Value;
using gguf::ValueType;

namespace {

std::mt19937 g_rng(42);

std::vector<uint8_t> random_tensor(GgmlType type, uint64_t cols, uint64_t rows) {
    const auto tt = *type_traits(type);
    std::vector<uint8_t> out(row_bytes(tt, cols) * rows);
    if (tt.supported) {
        std::uniform_real_distribution<float> d(-0.2f, 0.2f);
        std::vector<float> v(cols * rows);
        for (auto& x : v) x = d(g_rng);
        quantize_row(type, v.data(), out.data(), int64_t(v.size()));
    } else {
        for (auto& b : out) b = uint8_t(g_rng());
    }
    return out;
}

std::vector<uint8_t> ones(uint64_t n) {
    std::vector<float> v(n, 1.0f);
    std::vector<uint8_t> out(n * 4);
    std::memcpy(out.data(), v.data(), out.size());
    return out;
}

void spm_vocab(gguf::Writer& w, uint32_t n) {
    std::vector<std::string> toks = {"<unk>", "<s>", "</s>"};
    std::vector<int32_t> types = {2, 3, 3};
    for (int b = 0; b < 256; b++) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "<0x%02X>", b);
        toks.push_back(buf);
        types.push_back(6);
    }
    const char* words[] = {"\xE2\x96\x81",
                           "\xE2\x96\x81the",
                           "e",
                           "\xE2\x96\x81"
                           "a",
                           "th",
                           "<|im_end|>"};
    for (uint32_t i = 0; toks.size() < n; i++) {
        toks.push_back(i < 6 ? words[i] : "w" + std::to_string(i));
        types.push_back(i == 5 ? 4 : 1);
    }
    std::vector<float> scores(n);
    for (uint32_t i = 0; i < n; i++) scores[i] = -float(i) * 0.5f;
    w.set_string("tokenizer.ggml.model", "llama");
    w.set_string_array("tokenizer.ggml.tokens", toks);
    w.set_f32_array("tokenizer.ggml.scores", scores);
    w.set_i32_array("tokenizer.ggml.token_type", types);
    w.set_u32("tokenizer.ggml.bos_token_id", 1);
    w.set_u32("tokenizer.ggml.eos_token_id", 2);
    w.set_u32("tokenizer.ggml.unknown_token_id", 0);
    w.set_bool("tokenizer.ggml.add_bos_token", true);
    w.set_string("tokenizer.chat_template",
                 "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}");
}

// A complete one-layer Llama; F32 needs embd 16, block types a multiple of their block size.
gguf::Writer tiny_llama(GgmlType type, uint32_t embd, uint32_t ffn, bool tied) {
    gguf::Writer w;
    const uint32_t vocab = 266, heads = 2;
    w.set_string("general.architecture", "llama");
    w.set_string("general.name", "fuzz seed");
    w.set_u32("llama.context_length", 64);
    w.set_u32("llama.embedding_length", embd);
    w.set_u32("llama.block_count", 1);
    w.set_u32("llama.feed_forward_length", ffn);
    w.set_u32("llama.attention.head_count", heads);
    w.set_u32("llama.attention.head_count_kv", 1);
    w.set_u32("llama.rope.dimension_count", embd / heads);
    w.set_f32("llama.rope.freq_base", 10000.0f);
    w.set_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
    spm_vocab(w, vocab);
    const uint32_t kvd = embd / heads;
    w.add_tensor("token_embd.weight", type, {embd, vocab}, random_tensor(type, embd, vocab));
    w.add_tensor("output_norm.weight", GgmlType::F32, {embd}, ones(embd));
    if (!tied) w.add_tensor("output.weight", type, {embd, vocab}, random_tensor(type, embd, vocab));
    w.add_tensor("rope_freqs.weight", GgmlType::F32, {kvd / 2}, ones(kvd / 2));
    w.add_tensor("blk.0.attn_norm.weight", GgmlType::F32, {embd}, ones(embd));
    w.add_tensor("blk.0.attn_q.weight", type, {embd, embd}, random_tensor(type, embd, embd));
    w.add_tensor("blk.0.attn_k.weight", type, {embd, kvd}, random_tensor(type, embd, kvd));
    w.add_tensor("blk.0.attn_v.weight", type, {embd, kvd}, random_tensor(type, embd, kvd));
    w.add_tensor("blk.0.attn_output.weight", type, {embd, embd}, random_tensor(type, embd, embd));
    w.add_tensor("blk.0.ffn_norm.weight", GgmlType::F32, {embd}, ones(embd));
    w.add_tensor("blk.0.ffn_gate.weight", type, {embd, ffn}, random_tensor(type, embd, ffn));
    w.add_tensor("blk.0.ffn_up.weight", type, {embd, ffn}, random_tensor(type, embd, ffn));
    w.add_tensor("blk.0.ffn_down.weight", type, {ffn, embd}, random_tensor(type, ffn, embd));
    return w;
}

// GPT-2's byte-to-unicode table: printable bytes stand for themselves, the rest map to U+0100+.
std::vector<std::string> byte_symbols() {
    std::vector<std::string> out(256);
    int extra = 0;
    for (int b = 0; b < 256; b++) {
        const bool printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || b >= 0xae;
        const unsigned cp = printable ? unsigned(b) : 0x100u + unsigned(extra++);
        std::string s;
        if (cp < 0x80) {
            s += char(cp);
        } else {
            s += char(0xc0 | (cp >> 6));
            s += char(0x80 | (cp & 0x3f));
        }
        out[size_t(b)] = s;
    }
    return out;
}

gguf::Writer gpt2_vocab() {
    gguf::Writer w;
    std::vector<std::string> toks = byte_symbols();
    std::vector<std::string> merges = {"\xC4\xA0 t", "h e", "\xC4\xA0t he", "i n", "\xC4\xA0 a",
                                       "e r",        "o n", "\xC4\xA0 w",   "r e", "a t"};
    for (const auto& m : merges) {
        const size_t sp = m.find(' ');
        toks.push_back(m.substr(0, sp) + m.substr(sp + 1));
    }
    std::vector<int32_t> types(toks.size(), 1);
    toks.push_back("<|endoftext|>");
    types.push_back(3);
    toks.push_back("<|user|>");
    types.push_back(4);
    w.set_string("general.architecture", "gpt2");
    w.set_string("tokenizer.ggml.model", "gpt2");
    w.set_string("tokenizer.ggml.pre", "default");
    w.set_string_array("tokenizer.ggml.tokens", toks);
    w.set_i32_array("tokenizer.ggml.token_type", types);
    w.set_string_array("tokenizer.ggml.merges", merges);
    w.set_u32("tokenizer.ggml.bos_token_id", uint32_t(toks.size() - 2));
    w.set_u32("tokenizer.ggml.eos_token_id", uint32_t(toks.size() - 2));
    return w;
}

Value scalar(ValueType t, int64_t i, double f = 0) {
    Value v;
    v.type = t;
    if (t == ValueType::FLOAT32 || t == ValueType::FLOAT64)
        v.f64 = f;
    else if (t == ValueType::BOOL)
        v.b = i != 0;
    else
        v.i64 = i;
    return v;
}

// Every value type, nested arrays, an unusual alignment and a tensor of every type.
gguf::Writer all_types() {
    gguf::Writer w;
    w.set_alignment(64);
    const ValueType ints[] = {ValueType::UINT8,  ValueType::INT8,   ValueType::UINT16,
                              ValueType::INT16,  ValueType::UINT32, ValueType::INT32,
                              ValueType::UINT64, ValueType::INT64,  ValueType::BOOL};
    for (ValueType t : ints)
        w.set_value("test." + std::string(gguf::value_type_name(t)), scalar(t, 1));
    w.set_value("test.f32", scalar(ValueType::FLOAT32, 0, 0.5));
    w.set_value("test.f64", scalar(ValueType::FLOAT64, 0, -1e300));
    w.set_string("test.string", std::string("odd \0 bytes \xff\xfe '", 17));
    Value inner;
    inner.type = ValueType::ARRAY;
    inner.elem_type = ValueType::INT16;
    inner.arr = {scalar(ValueType::INT16, -3), scalar(ValueType::INT16, 7)};
    Value outer;
    outer.type = ValueType::ARRAY;
    outer.elem_type = ValueType::ARRAY;
    outer.arr = {inner, inner};
    w.set_value("test.nested", outer);
    Value empty;
    empty.type = ValueType::ARRAY;
    empty.elem_type = ValueType::STRING;
    w.set_value("test.empty", empty);
    for (uint32_t id = 0; id < 40; id++) {
        auto tt = type_traits(id);
        if (!tt) continue;
        const uint64_t cols = tt->block_elems;
        w.add_tensor("t." + std::string(tt->name), GgmlType(id), {cols, 1, 1, 2},
                     random_tensor(GgmlType(id), cols, 2));
    }
    return w;
}

bool write(const gguf::Writer& w, const std::string& dir, const char* name) {
    const std::string path = dir + "/" + name;
    auto st = w.write(path);
    if (!st) std::fprintf(stderr, "%s\n", st.error().message.c_str());
    return st.ok();
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: fuzz_make_seeds DIR\n");
        return 2;
    }
    const std::string dir = argv[1];
    bool ok = write(tiny_llama(GgmlType::F32, 16, 32, true), dir, "llama-f32-tied.gguf");
    ok &= write(tiny_llama(GgmlType::Q8_0, 32, 32, false), dir, "llama-q8_0.gguf");
    ok &= write(tiny_llama(GgmlType::Q4_0, 32, 64, true), dir, "llama-q4_0.gguf");
    ok &= write(gpt2_vocab(), dir, "gpt2-vocab.gguf");
    ok &= write(all_types(), dir, "all-types.gguf");
    return ok ? 0 : 1;
}
