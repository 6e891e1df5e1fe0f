// Fuzzes the tokenizers built from real vocabularies (SentencePiece and byte-level BPE):
// encode with special-token parsing on and off, decode and StreamDecoder on arbitrary ids.
// Input: one flags byte, then text (encode) or little-endian int32 ids (decode).
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"

using namespace ember;

namespace {

struct Vocab {
    std::string name;
    std::unique_ptr<Tokenizer> tok;
};
std::vector<Vocab> g_vocabs;

std::string shared_dir() {
    if (const char* env = std::getenv("EMBER_SHARED_DIR")) return env;
    return EMBER_SHARED_DIR;
}

void load(const std::string& rel) {
    const std::string path = shared_dir() + "/" + rel;
    auto f = gguf::File::open(path);
    if (!f) {
        std::fprintf(stderr, "fuzz_tokenizer: %s\n", f.error().message.c_str());
        std::exit(2);
    }
    auto tok = Tokenizer::from_gguf(**f);
    if (!tok) {
        std::fprintf(stderr, "fuzz_tokenizer: %s: %s\n", path.c_str(), tok.error().message.c_str());
        std::exit(2);
    }
    g_vocabs.push_back({rel, std::move(tok).value()});
}

void check_encode(const Tokenizer& t, std::string_view text, bool add_special, bool parse_special) {
    const std::vector<int32_t> ids = t.encode(text, add_special, parse_special);
    for (size_t i = 0; i < ids.size(); i++) {
        const int32_t id = ids[i];
        EMBER_FUZZ_REQUIRE(id >= 0 && id < t.n_vocab(), "id " + std::to_string(id));
        // Without parse_special, control tokens come only from add_special (user-defined ones
        // are added vocabulary and may come from the text, as in llama.cpp).
        const bool added =
            add_special && ((i == 0 && id == t.bos()) || (i + 1 == ids.size() && id == t.eos()));
        const TokenType type = t.token_type(id);
        if (!parse_special && !added)
            EMBER_FUZZ_REQUIRE(type != TokenType::Control,
                               "special token " + t.token_text(id) + " from plain text");
    }
    // Plain valid UTF-8 text comes back unchanged (SentencePiece writes spaces as U+2581,
    // so text that already holds one cannot round-trip there).
    const bool spm = t.model_name() == "llama";
    if (!add_special && !parse_special && fuzz::valid_utf8(text) &&
        !(spm && text.find("\xE2\x96\x81") != std::string_view::npos)) {
        const std::string back = t.decode(ids);
        EMBER_FUZZ_REQUIRE(back == text, "round trip gave '" + back + "'");
    }
}

void check_decode(const Tokenizer& t, const std::vector<int32_t>& ids) {
    (void)t.decode(ids);
    StreamDecoder sd(t);
    std::string streamed, pieces;
    for (int32_t id : ids) {
        const std::string part = sd.push(id);
        EMBER_FUZZ_REQUIRE(fuzz::valid_utf8(part), "StreamDecoder::push gave invalid UTF-8");
        streamed += part;
        pieces += t.token_to_piece(id);
    }
    const std::string rest = sd.flush();
    EMBER_FUZZ_REQUIRE(fuzz::valid_utf8(rest), "StreamDecoder::flush gave invalid UTF-8");
    streamed += rest;
    if (fuzz::valid_utf8(pieces))
        EMBER_FUZZ_REQUIRE(streamed == pieces, "stream differs from the concatenated pieces");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    load("vocab/ggml-vocab-llama-spm.gguf");
    load("vocab/ggml-vocab-gpt-2.gguf");
    load("models/stories260K.gguf");
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1) return 0;
    const uint8_t flags = data[0];
    const Tokenizer& t = *g_vocabs[(flags & 3) % g_vocabs.size()].tok;
    const bool parse_special = flags & 4, add_special = flags & 8;
    const bool decode = flags & 16;
    const std::string_view payload(reinterpret_cast<const char*>(data + 1), size - 1);
    if (!decode) {
        check_encode(t, payload, add_special, parse_special);
        return 0;
    }
    std::vector<int32_t> ids(payload.size() / 4);
    if (!ids.empty()) std::memcpy(ids.data(), payload.data(), ids.size() * 4);
    // Mostly ids in range, where the interesting pieces are; raw values test the bounds checks.
    if (flags & 32)
        for (auto& id : ids) id = int32_t(uint32_t(id) % uint32_t(t.n_vocab()));
    check_decode(t, ids);
    return 0;
}
