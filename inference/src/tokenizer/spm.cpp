// SentencePiece (tokenizer.ggml.model = "llama"): merges by score over UTF-8 characters,
// byte fallback to <0xXX> tokens, and the dummy-prefix space.
#include <cstdio>

#include "common/log.h"
#include "tokenizer/merge.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode.h"

namespace ember::tok {
namespace {

class SpmTokenizer final : public Tokenizer {
public:
    Status init(VocabData& v) {
        if (v.scores.empty()) {
            return make_error("tokenizer.bad_metadata",
                              "tokenizer metadata 'tokenizer.ggml.scores': missing (the 'llama' "
                              "tokenizer merges by score)");
        }
        m_scores = std::move(v.scores);
        // llama.cpp's defaults for SentencePiece vocabularies.
        if (!v.bos && v.tokens.size() > 1) v.bos = 1;
        if (!v.eos && v.tokens.size() > 2) v.eos = 2;
        if (!v.unk) v.unk = 0;
        if (!v.add_bos) v.add_bos = v.bos.has_value();
        if (!v.add_eos) v.add_eos = false;
        m_add_space_prefix = v.add_space_prefix.value_or(true);

        std::vector<std::string> pieces(v.tokens.size());
        m_byte_ids.fill(-1);
        for (size_t i = 0; i < v.tokens.size(); ++i) {
            const std::string& t = v.tokens[i];
            const TokenType type = v.types.empty() ? TokenType::Normal : v.types[i];
            switch (type) {
                case TokenType::Control:
                case TokenType::Unused:
                    break;  // decode to nothing
                case TokenType::Unknown:
                    pieces[i] = kReplacementChar;
                    break;
                case TokenType::Byte: {
                    // Parsed by hand: sscanf's %X also takes a sign or spaces ("<0x-8>"),
                    // which gave an index far outside m_byte_ids.
                    auto hex = [](char c) {
                        if (c >= '0' && c <= '9') return c - '0';
                        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
                        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
                        return -1;
                    };
                    const bool well_formed = t.size() == 6 && t.compare(0, 3, "<0x") == 0 &&
                                             t[5] == '>' && hex(t[3]) >= 0 && hex(t[4]) >= 0;
                    if (well_formed) {
                        const unsigned b = unsigned(hex(t[3]) * 16 + hex(t[4]));
                        pieces[i] = std::string(1, char(b));
                        m_byte_ids[b] = int32_t(i);
                    } else {
                        EMBER_LOG_WARN("tokenizer: byte token %zu '%s' is not of the form <0xXX>",
                                       i, t.c_str());
                        pieces[i] = t;
                    }
                    break;
                }
                default: {  // normal, user-defined, undefined: '▁' stands for a space
                    std::string& p = pieces[i];
                    for (size_t k = 0; k < t.size();) {
                        if (t.compare(k, kSpmSpace.size(), kSpmSpace) == 0) {
                            p += ' ';
                            k += kSpmSpace.size();
                        } else {
                            p += t[k++];
                        }
                    }
                }
            }
        }
        return init_common(v, std::move(pieces));
    }

    std::vector<int32_t> encode(std::string_view text, bool add_special,
                                bool parse_special) const override {
        std::vector<int32_t> out;
        if (add_special && m_add_bos) out.push_back(m_bos);
        // As SentencePiece (and llama.cpp), text that starts the input or follows a special
        // token gets the dummy prefix.
        bool prev_special = true;
        std::string buf;
        for (const Fragment& f : split_special(text, parse_special)) {
            if (f.id >= 0) {
                out.push_back(f.id);
                prev_special = true;
                continue;
            }
            buf.clear();
            if (m_add_space_prefix && prev_special) buf += kSpmSpace;
            for (char c : f.text) {
                if (c == ' ') {
                    buf += kSpmSpace;
                } else {
                    buf += c;
                }
            }
            encode_plain(buf, out);
            prev_special = false;
        }
        if (add_special && m_add_eos) out.push_back(m_eos);
        return out;
    }

    std::string token_to_piece(int32_t id) const override {
        if (id < 0 || size_t(id) >= m_pieces.size()) return {};
        return m_pieces[size_t(id)];
    }

private:
    // text: whitespace already escaped to '▁'.
    void encode_plain(std::string_view text, std::vector<int32_t>& out) const {
        // Higher scores merge first; a pair merges only into a piece of the vocabulary.
        const auto sym = merge_pieces(text, [this](std::string_view l, std::string_view r) {
            const int32_t id = lookup_plain(std::string_view(l.data(), l.size() + r.size()));
            return id < 0 ? std::nullopt : std::optional<double>(m_scores[size_t(id)]);
        });
        for (int i = sym.empty() ? -1 : 0; i >= 0; i = sym[size_t(i)].next) {
            const MergePiece& s = sym[size_t(i)];
            const std::string_view piece = text.substr(s.begin, s.len);
            const int32_t id = lookup_plain(piece);
            if (id >= 0) {
                out.push_back(id);
                continue;
            }
            for (char c : piece) {  // byte fallback
                const int32_t b = m_byte_ids[uint8_t(c)];
                if (b >= 0) {
                    out.push_back(b);
                } else if (m_unk >= 0) {
                    out.push_back(m_unk);
                    break;  // one unknown token for the character
                }
            }
        }
    }

    std::vector<float> m_scores;
    std::array<int32_t, 256> m_byte_ids{};
};

}  // namespace

Result<std::unique_ptr<Tokenizer>> make_spm_tokenizer(VocabData&& v) {
    auto t = std::make_unique<SpmTokenizer>();
    EMBER_TRY(t->init(v));
    return std::unique_ptr<Tokenizer>(std::move(t));
}

}  // namespace ember::tok
