// Regex pre-tokenizers of byte-level BPE, chosen by tokenizer.ggml.pre (PCRE2, UTF + UCP).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ember/result.h"

namespace ember::tok {

struct PreTokenizerSpec {
    std::vector<const char*> regexes;  // applied in turn, each one splitting the previous pieces
    bool ignore_merges = false;        // a word that is a whole token is not merged (Llama 3)
    bool add_bos = false;              // default of tokenizer.ggml.add_bos_token
    bool nfc = false;                  // text is normalized to NFC first (Qwen)
};

// Spec for a tokenizer.ggml.pre name; nullptr when the name is unknown.
const PreTokenizerSpec* find_pre_tokenizer(std::string_view name);
// Every name find_pre_tokenizer knows.
std::vector<std::string> pre_tokenizer_names();

class PreTokenizer {
public:
    // Unknown names log a warning and use the gpt-2 regex.
    static Result<std::unique_ptr<PreTokenizer>> create(std::string_view name);
    ~PreTokenizer();
    PreTokenizer(const PreTokenizer&) = delete;
    PreTokenizer& operator=(const PreTokenizer&) = delete;

    // Splits text into words, as [begin, end) byte ranges that together cover the text.
    // Each regex splits every current piece on its own: text between matches stays a piece,
    // and a match never extends past its piece. Bytes that are not valid UTF-8 become
    // single-byte pieces.
    std::vector<std::pair<size_t, size_t>> split(std::string_view text) const;

    const std::string& name() const { return m_name; }
    const PreTokenizerSpec& spec() const { return *m_spec; }

private:
    PreTokenizer() = default;
    struct Regex;
    std::string m_name;
    const PreTokenizerSpec* m_spec = nullptr;
    std::vector<std::unique_ptr<Regex>> m_regexes;
};

}  // namespace ember::tok
