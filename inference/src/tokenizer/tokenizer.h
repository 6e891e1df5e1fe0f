// Tokenizers read from GGUF metadata: SentencePiece (`llama`) and byte-level BPE (`gpt2`).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ember/result.h"

namespace ember {
namespace gguf {
class File;
}

enum class TokenType : int32_t {  // tokenizer.ggml.token_type
    Undefined = 0,
    Normal = 1,
    Unknown = 2,
    Control = 3,
    UserDefined = 4,
    Unused = 5,
    Byte = 6,
};

// The tokenizer.ggml.* metadata, decoded; from_vocab builds a tokenizer from it without a file
// (tests build small synthetic vocabularies this way).
struct VocabData {
    std::string model;                // "llama" (SentencePiece) or "gpt2" (byte-level BPE)
    std::string pre;                  // tokenizer.ggml.pre; "" means "default"
    std::vector<std::string> tokens;  // tokenizer.ggml.tokens
    std::vector<float> scores;        // tokenizer.ggml.scores (required for "llama")
    std::vector<TokenType> types;     // tokenizer.ggml.token_type; empty: all Normal
    std::vector<std::string> merges;  // tokenizer.ggml.merges, "left right" (required for "gpt2")
    std::optional<int64_t> bos, eos, eot, unk;  // absent or out of range: model defaults
    std::optional<bool> add_bos, add_eos, add_space_prefix;
};

class Tokenizer {
public:
    // Reads tokenizer.ggml.* from the file. Errors name the missing or malformed key.
    static Result<std::unique_ptr<Tokenizer>> from_gguf(const gguf::File& file);
    // The two halves of from_gguf: decode (and type-check) the metadata, then build.
    static Result<VocabData> read_vocab(const gguf::File& file);
    static Result<std::unique_ptr<Tokenizer>> from_vocab(VocabData vocab);
    virtual ~Tokenizer() = default;

    // add_special: BOS (and EOS) as tokenizer.ggml.add_bos_token / add_eos_token say
    // (SentencePiece defaults to BOS on). parse_special: control and user-defined tokens
    // written in the text (e.g. "<|im_end|>") become their ids (longest match first);
    // otherwise they are plain text and never come out of encode().
    virtual std::vector<int32_t> encode(std::string_view text, bool add_special,
                                        bool parse_special) const = 0;
    // The bytes a token stands for (byte tokens give their byte; control tokens give "";
    // the unknown token gives U+FFFD). Out-of-range ids give "".
    virtual std::string token_to_piece(int32_t id) const = 0;
    std::string decode(const std::vector<int32_t>& ids) const;

    int n_vocab() const { return int(m_tokens.size()); }
    const std::string& token_text(int32_t id) const { return m_tokens[size_t(id)]; }
    TokenType token_type(int32_t id) const { return m_types[size_t(id)]; }
    int32_t bos() const { return m_bos; }
    int32_t eos() const { return m_eos; }
    int32_t eot() const { return m_eot; }
    int32_t unk() const { return m_unk; }
    bool add_bos() const { return m_add_bos; }
    bool add_eos() const { return m_add_eos; }
    // EOS, EOT and the known end-of-turn control tokens.
    bool is_end_of_generation(int32_t id) const;
    const std::string& model_name() const { return m_model; }  // "llama" or "gpt2"
    // SentencePiece: '▁' is prepended to text (decode() strips the space it adds).
    bool add_space_prefix() const { return m_add_space_prefix; }
    // Text is normalized to NFC before it is tokenized (Qwen's vocabularies), so decode()
    // gives the NFC form of text that was not NFC.
    bool nfc() const { return m_nfc; }
    // The id whose token text is exactly text (any type), or -1.
    int32_t find_token(std::string_view text) const;

protected:
    // A piece of input: plain text (id < 0) or a special token written in the text.
    struct Fragment {
        std::string_view text;
        int32_t id = -1;
    };
    // A token's text -> the last token with that text (llama.cpp keeps the last duplicate too),
    // and whether plain text may produce it (not control or user-defined). The keys view
    // m_tokens, which does not change once init_common has built the map.
    struct IdEntry {
        int32_t id;
        bool plain;
    };
    using IdMap = std::unordered_map<std::string_view, IdEntry>;

    // Validates ids and types, fills the members below. pieces: what each token decodes to.
    Status init_common(VocabData& v, std::vector<std::string> pieces);
    // Splits text on special token strings, leftmost and longest first: user-defined tokens
    // always (as llama.cpp: they are added vocabulary, e.g. "<think>"), control and unknown
    // tokens only when parse_special.
    std::vector<Fragment> split_special(std::string_view text, bool parse_special) const;
    // Id of a token that plain text may produce (not control or user-defined), or -1.
    int32_t lookup_plain(std::string_view text) const {
        auto it = m_ids.find(text);
        if (it == m_ids.end()) return -1;
        if (it->second.plain) return it->second.id;
        if (m_plain_shadowed.empty()) return -1;
        auto d = m_plain_shadowed.find(text);
        return d == m_plain_shadowed.end() ? -1 : d->second;
    }

    std::vector<std::string> m_pieces;
    IdMap m_ids;
    // Text -> the last plain token with that text, where a later special token has the same
    // text (so m_ids names the special one). Empty in real vocabularies.
    std::unordered_map<std::string_view, int32_t> m_plain_shadowed;
    // Special tokens by their first byte, longest text first.
    std::array<std::vector<int32_t>, 256> m_special_by_byte;
    // Some token is user-defined (split even without parse_special).
    bool m_has_user_defined = false;
    bool m_add_space_prefix = false;
    bool m_nfc = false;
    std::string m_model;
    std::vector<std::string> m_tokens;
    std::vector<TokenType> m_types;
    std::vector<int32_t> m_eog;  // sorted
    int32_t m_bos = -1, m_eos = -1, m_eot = -1, m_unk = -1;
    bool m_add_bos = false, m_add_eos = false;
};

// Turns a stream of tokens into text without ever emitting a broken UTF-8 character:
// bytes of an unfinished character are held until it completes.
class StreamDecoder {
public:
    explicit StreamDecoder(const Tokenizer& tok) : m_tok(&tok) {}
    std::string push(int32_t id);  // complete UTF-8 text so far not yet returned
    std::string flush();           // whatever is held (invalid bytes become U+FFFD)

private:
    const Tokenizer* m_tok;
    std::string m_pending;
};

}  // namespace ember
