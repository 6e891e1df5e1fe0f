// Loading from GGUF, what both tokenizers share (special tokens, end of generation, decode),
// and StreamDecoder.
#include "tokenizer/tokenizer.h"

#include <algorithm>

#include "common/log.h"
#include "gguf/gguf.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode.h"

namespace ember {
namespace {

Error key_error(const std::string& key, const std::string& what) {
    return make_error("tokenizer.bad_metadata", "tokenizer metadata '" + key + "': " + what);
}

std::string type_name_of(const gguf::Value& v) {
    std::string s(gguf::value_type_name(v.type));
    if (v.type == gguf::ValueType::ARRAY)
        s += " of " + std::string(gguf::value_type_name(v.elem_type));
    return s;
}

// The array under key, checked to be of elem (nullptr when absent).
Result<const std::vector<gguf::Value>*> find_array(const gguf::File& f, const std::string& key,
                                                   std::initializer_list<gguf::ValueType> elems,
                                                   const char* expected) {
    const gguf::Value* v = f.find(key);
    if (!v) return static_cast<const std::vector<gguf::Value>*>(nullptr);
    bool ok = v->type == gguf::ValueType::ARRAY;
    if (ok) ok = std::find(elems.begin(), elems.end(), v->elem_type) != elems.end();
    if (!ok)
        return key_error(
            key, std::string("expected an array of ") + expected + ", found " + type_name_of(*v));
    return &v->arr;
}

Result<std::optional<int64_t>> optional_int(const gguf::File& f, const std::string& key) {
    const gguf::Value* v = f.find(key);
    if (!v) return std::optional<int64_t>();
    auto i = v->as_int();
    if (!i || v->type == gguf::ValueType::BOOL) {
        return key_error(key, "expected an integer, found " + type_name_of(*v));
    }
    return std::optional<int64_t>(*i);
}

Result<std::optional<bool>> optional_bool(const gguf::File& f, const std::string& key) {
    const gguf::Value* v = f.find(key);
    if (!v) return std::optional<bool>();
    if (v->type == gguf::ValueType::BOOL) return std::optional<bool>(v->b);
    if (auto i = v->as_int()) return std::optional<bool>(*i != 0);
    return key_error(key, "expected a bool, found " + type_name_of(*v));
}

// Control tokens that end a turn in common chat formats.
constexpr std::string_view kEndOfTurnTexts[] = {
    "<|eot_id|>", "<|im_end|>", "<end_of_turn>", "<|end|>", "</s>", "<|endoftext|>",
};

}  // namespace

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_gguf(const gguf::File& f) {
    EMBER_ASSIGN_OR_RETURN(VocabData v, read_vocab(f));
    return from_vocab(std::move(v));
}

Result<VocabData> Tokenizer::read_vocab(const gguf::File& f) {
    VocabData v;
    const gguf::Value* model = f.find("tokenizer.ggml.model");
    if (!model) return key_error("tokenizer.ggml.model", "missing (the file has no tokenizer)");
    if (model->type != gguf::ValueType::STRING) {
        return key_error("tokenizer.ggml.model",
                         "expected a string, found " + type_name_of(*model));
    }
    v.model = model->str;
    if (const gguf::Value* pre = f.find("tokenizer.ggml.pre")) {
        if (pre->type != gguf::ValueType::STRING) {
            return key_error("tokenizer.ggml.pre",
                             "expected a string, found " + type_name_of(*pre));
        }
        v.pre = pre->str;
    }

    EMBER_ASSIGN_OR_RETURN(
        auto tokens, find_array(f, "tokenizer.ggml.tokens", {gguf::ValueType::STRING}, "strings"));
    if (!tokens) return key_error("tokenizer.ggml.tokens", "missing");
    v.tokens.reserve(tokens->size());
    for (const auto& t : *tokens) v.tokens.push_back(t.str);

    using VT = gguf::ValueType;
    EMBER_ASSIGN_OR_RETURN(
        auto scores, find_array(f, "tokenizer.ggml.scores", {VT::FLOAT32, VT::FLOAT64}, "floats"));
    if (scores) {
        v.scores.reserve(scores->size());
        for (const auto& s : *scores) v.scores.push_back(float(s.as_number().value_or(0.0)));
    }
    EMBER_ASSIGN_OR_RETURN(auto types, find_array(f, "tokenizer.ggml.token_type",
                                                  {VT::INT32, VT::UINT32, VT::INT8, VT::UINT8,
                                                   VT::INT16, VT::UINT16, VT::INT64, VT::UINT64},
                                                  "integers"));
    if (types) {
        v.types.reserve(types->size());
        for (size_t i = 0; i < types->size(); ++i) {
            const int64_t t = (*types)[i].as_int().value_or(-1);
            if (t < 0 || t > int64_t(TokenType::Byte)) {
                return key_error("tokenizer.ggml.token_type", "entry " + std::to_string(i) +
                                                                  " is " + std::to_string(t) +
                                                                  ", expected a token type 0..6");
            }
            v.types.push_back(TokenType(t));
        }
    }
    EMBER_ASSIGN_OR_RETURN(auto merges,
                           find_array(f, "tokenizer.ggml.merges", {VT::STRING}, "strings"));
    if (merges) {
        v.merges.reserve(merges->size());
        for (const auto& m : *merges) v.merges.push_back(m.str);
    }

    EMBER_ASSIGN_OR_RETURN(v.bos, optional_int(f, "tokenizer.ggml.bos_token_id"));
    EMBER_ASSIGN_OR_RETURN(v.eos, optional_int(f, "tokenizer.ggml.eos_token_id"));
    EMBER_ASSIGN_OR_RETURN(v.eot, optional_int(f, "tokenizer.ggml.eot_token_id"));
    EMBER_ASSIGN_OR_RETURN(v.unk, optional_int(f, "tokenizer.ggml.unknown_token_id"));
    EMBER_ASSIGN_OR_RETURN(v.add_bos, optional_bool(f, "tokenizer.ggml.add_bos_token"));
    EMBER_ASSIGN_OR_RETURN(v.add_eos, optional_bool(f, "tokenizer.ggml.add_eos_token"));
    EMBER_ASSIGN_OR_RETURN(v.add_space_prefix, optional_bool(f, "tokenizer.ggml.add_space_prefix"));
    return v;
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_vocab(VocabData v) {
    if (v.model != "llama" && v.model != "gpt2") {
        return make_error(
            "tokenizer.unsupported",
            "tokenizer.ggml.model '" + v.model + "' is not supported (expected 'llama' or 'gpt2')");
    }
    const size_t n = v.tokens.size();
    if (n == 0) return key_error("tokenizer.ggml.tokens", "empty");
    if (n > size_t(INT32_MAX)) return key_error("tokenizer.ggml.tokens", "too many tokens");
    if (!v.types.empty() && v.types.size() != n) {
        return key_error("tokenizer.ggml.token_type", std::to_string(v.types.size()) +
                                                          " entries, expected one per token (" +
                                                          std::to_string(n) + ")");
    }
    if (!v.scores.empty() && v.scores.size() != n) {
        return key_error("tokenizer.ggml.scores", std::to_string(v.scores.size()) +
                                                      " entries, expected one per token (" +
                                                      std::to_string(n) + ")");
    }
    // Out-of-range ids are tolerated (some converters write -1 as 2^32-1): ignored with a warning.
    const std::pair<std::optional<int64_t>*, const char*> ids[] = {
        {&v.bos, "bos"}, {&v.eos, "eos"}, {&v.eot, "eot"}, {&v.unk, "unknown"}};
    for (auto [id, name] : ids) {
        if (*id && (**id < 0 || **id >= int64_t(n))) {
            EMBER_LOG_WARN(
                "tokenizer.ggml.%s_token_id = %lld is outside the vocabulary (%zu tokens); ignored",
                name, (long long)**id, n);
            id->reset();
        }
    }
    if (v.model == "llama") return tok::make_spm_tokenizer(std::move(v));
    return tok::make_bpe_tokenizer(std::move(v));
}

Status Tokenizer::init_common(VocabData& v, std::vector<std::string> pieces) {
    m_model = v.model;
    m_tokens = std::move(v.tokens);
    m_types = v.types.empty() ? std::vector<TokenType>(m_tokens.size(), TokenType::Normal)
                              : std::move(v.types);
    m_pieces = std::move(pieces);
    m_bos = v.bos ? int32_t(*v.bos) : -1;
    m_eos = v.eos ? int32_t(*v.eos) : -1;
    m_unk = v.unk ? int32_t(*v.unk) : -1;
    m_eot = v.eot ? int32_t(*v.eot) : -1;
    m_add_bos = v.add_bos.value_or(false);
    m_add_eos = v.add_eos.value_or(false);
    if (m_add_bos && m_bos < 0) {
        EMBER_LOG_WARN("tokenizer: add_bos_token is set but there is no BOS token; not adding one");
        m_add_bos = false;
    }
    if (m_add_eos && m_eos < 0) {
        EMBER_LOG_WARN("tokenizer: add_eos_token is set but there is no EOS token; not adding one");
        m_add_eos = false;
    }

    m_ids.clear();
    m_plain_shadowed.clear();
    m_ids.reserve(m_tokens.size());
    for (auto& b : m_special_by_byte) b.clear();
    m_has_user_defined = false;
    for (size_t i = 0; i < m_tokens.size(); ++i) {
        const std::string& t = m_tokens[i];
        const auto id = int32_t(i);
        const TokenType type = m_types[i];
        const bool plain = type != TokenType::Control && type != TokenType::UserDefined;
        auto [it, inserted] = m_ids.try_emplace(t, IdEntry{id, plain});
        if (!inserted) {  // a duplicate text: the last one wins, as in llama.cpp
            if (!plain && it->second.plain) m_plain_shadowed[t] = it->second.id;
            it->second = IdEntry{id, plain};
        }
        if ((type == TokenType::Control || type == TokenType::UserDefined ||
             type == TokenType::Unknown) &&
            !t.empty()) {
            m_special_by_byte[uint8_t(t[0])].push_back(id);
            if (type == TokenType::UserDefined) m_has_user_defined = true;
        }
    }
    for (auto& b : m_special_by_byte) {
        std::stable_sort(b.begin(), b.end(), [this](int32_t a, int32_t c) {
            return m_tokens[size_t(a)].size() > m_tokens[size_t(c)].size();
        });
    }

    m_eog.clear();
    if (m_eos >= 0) m_eog.push_back(m_eos);
    if (m_eot >= 0) m_eog.push_back(m_eot);
    for (std::string_view text : kEndOfTurnTexts) {
        const int32_t id = find_token(text);
        if (id < 0 || m_types[size_t(id)] == TokenType::Byte) continue;
        m_eog.push_back(id);
        // As llama.cpp, the first end-of-turn marker found stands for EOT when none is named.
        if (m_eot < 0 && id != m_eos && text != "</s>" && text != "<|endoftext|>") m_eot = id;
    }
    std::sort(m_eog.begin(), m_eog.end());
    m_eog.erase(std::unique(m_eog.begin(), m_eog.end()), m_eog.end());
    return {};
}

int32_t Tokenizer::find_token(std::string_view text) const {
    auto it = m_ids.find(text);
    return it == m_ids.end() ? -1 : it->second.id;
}

bool Tokenizer::is_end_of_generation(int32_t id) const {
    return std::binary_search(m_eog.begin(), m_eog.end(), id);
}

std::vector<Tokenizer::Fragment> Tokenizer::split_special(std::string_view text,
                                                          bool parse_special) const {
    std::vector<Fragment> out;
    if (text.empty()) return out;
    if (!parse_special && !m_has_user_defined) {
        out.push_back({text, -1});
        return out;
    }
    size_t plain = 0, i = 0;
    while (i < text.size()) {
        int32_t hit = -1;
        for (int32_t id : m_special_by_byte[uint8_t(text[i])]) {
            if (!parse_special && m_types[size_t(id)] != TokenType::UserDefined) continue;
            if (text.substr(i).starts_with(m_tokens[size_t(id)])) {
                hit = id;
                break;
            }
        }
        if (hit < 0) {
            ++i;
            continue;
        }
        if (plain < i) out.push_back({text.substr(plain, i - plain), -1});
        const size_t len = m_tokens[size_t(hit)].size();
        out.push_back({text.substr(i, len), hit});
        i += len;
        plain = i;
    }
    if (plain < text.size()) out.push_back({text.substr(plain), -1});
    return out;
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids) const {
    std::string out;
    // The space of SentencePiece's dummy prefix: the first text token's leading space
    // (leading control tokens such as BOS decode to nothing and are passed over).
    bool strip = m_add_space_prefix;
    for (int32_t id : ids) {
        std::string piece = token_to_piece(id);
        if (strip && !piece.empty()) {
            if (piece[0] == ' ') piece.erase(0, 1);
            strip = false;
        }
        out += piece;
    }
    return out;
}

std::string StreamDecoder::push(int32_t id) {
    m_pending += m_tok->token_to_piece(id);
    std::string out;
    size_t i = 0;
    while (i < m_pending.size()) {
        const tok::Utf8Check c = tok::utf8_check(m_pending, i);
        if (c.status == tok::Utf8Status::Incomplete) break;  // wait for the next token
        if (c.status == tok::Utf8Status::Valid) {
            out.append(m_pending, i, c.len);
        } else {
            out += tok::kReplacementChar;
        }
        i += c.len;
    }
    m_pending.erase(0, i);
    return out;
}

std::string StreamDecoder::flush() {
    std::string out;
    size_t i = 0;
    while (i < m_pending.size()) {
        const tok::Utf8Check c = tok::utf8_check(m_pending, i);
        if (c.status == tok::Utf8Status::Valid) {
            out.append(m_pending, i, c.len);
        } else {
            out += tok::kReplacementChar;
        }
        i += c.len;
    }
    m_pending.clear();
    return out;
}

}  // namespace ember
