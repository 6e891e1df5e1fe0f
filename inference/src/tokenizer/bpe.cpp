// Byte-level BPE (tokenizer.ggml.model = "gpt2"): regex pre-tokenization, GPT-2 byte-to-unicode
// mapping, merges by rank (the index in tokenizer.ggml.merges).

#include "tokenizer/merge.h"
#include "tokenizer/normalize.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode.h"

namespace ember::tok {
namespace {

// tokenizer.ggml.merges ("left right") by pair, for the merge's rank (its index): one flat
// open-addressing table of 8-byte slots over the merge strings themselves. Loading Llama 3's
// 280,147 merges then writes one slot each, with no allocation or token lookup (a map of
// "left\0right" strings was most of the vocabulary's load time), and a lookup allocates nothing.
class MergeTable {
public:
    // merges: checked to be of the form "left right" (split at the first space after the
    // first character). The first occurrence of a pair keeps its rank.
    void build(std::vector<std::string> merges) {
        m_merges = std::move(merges);
        size_t cap = 16;
        while (cap < m_merges.size() + m_merges.size() / 2) cap <<= 1;  // load at most 2/3
        m_slots.assign(cap, Slot{0, -1});
        m_mask = cap - 1;
        for (size_t i = 0; i < m_merges.size(); ++i) {
            const std::string_view m = m_merges[i];
            const uint64_t h = hash(m, {});
            for (size_t k = h & m_mask;; k = (k + 1) & m_mask) {
                Slot& s = m_slots[k];
                if (s.rank < 0) {
                    s = Slot{tag(h), int32_t(i)};
                    break;
                }
                if (s.tag == tag(h) && m_merges[size_t(s.rank)] == m) break;  // a duplicate
            }
        }
    }
    // Rank of merging l and r, or -1.
    int32_t find(std::string_view l, std::string_view r) const {
        if (m_slots.empty() || l.empty() || r.empty()) return -1;
        const uint64_t h = hash(l, r);
        for (size_t k = h & m_mask;; k = (k + 1) & m_mask) {
            const Slot& s = m_slots[k];
            if (s.rank < 0) return -1;
            if (s.tag == tag(h) && is_merge(m_merges[size_t(s.rank)], l, r)) return s.rank;
        }
    }

private:
    struct Slot {
        uint32_t tag;  // the hash's upper half, to skip most string comparisons
        int32_t rank;  // -1: empty
    };
    // FNV-1a of "l r" (or of m alone when r is empty), so that a pair hashes as its merge.
    static uint64_t hash(std::string_view l, std::string_view r) {
        uint64_t h = 0xCBF29CE484222325ull;
        auto add = [&h](std::string_view s) {
            for (char c : s) h = (h ^ uint8_t(c)) * 0x100000001B3ull;
        };
        add(l);
        if (!r.empty()) {
            add(" ");
            add(r);
        }
        return h ^ (h >> 29);
    }
    static uint32_t tag(uint64_t h) { return uint32_t(h >> 32); }
    // m == l + " " + r, split where the merge is split (its first space after position 0).
    static bool is_merge(std::string_view m, std::string_view l, std::string_view r) {
        return m.size() == l.size() + 1 + r.size() && m[l.size()] == ' ' && m.starts_with(l) &&
               m.ends_with(r) && m.find(' ', 1) == l.size();
    }

    std::vector<std::string> m_merges;
    std::vector<Slot> m_slots;
    size_t m_mask = 0;
};

class BpeTokenizer final : public Tokenizer {
public:
    Status init(VocabData& v) {
        if (v.merges.empty()) {
            return make_error("tokenizer.bad_metadata",
                              "tokenizer metadata 'tokenizer.ggml.merges': missing or empty (the "
                              "'gpt2' tokenizer needs its merges)");
        }
        EMBER_TRY(read_merges(v.merges));
        EMBER_ASSIGN_OR_RETURN(m_pre, PreTokenizer::create(v.pre));
        m_nfc = m_pre->spec().nfc;
        if (!v.add_bos) v.add_bos = m_pre->spec().add_bos && v.bos.has_value();
        if (!v.add_eos) v.add_eos = false;

        std::vector<std::string> pieces(v.tokens.size());
        for (size_t i = 0; i < v.tokens.size(); ++i) {
            const std::string& t = v.tokens[i];
            const TokenType type = v.types.empty() ? TokenType::Normal : v.types[i];
            if (type == TokenType::Control || type == TokenType::Unused) continue;
            if (type == TokenType::UserDefined) {  // added tokens are stored as plain text
                pieces[i] = t;
                continue;
            }
            if (type == TokenType::Unknown) {
                pieces[i] = kReplacementChar;
                continue;
            }
            std::string& p = pieces[i];
            for (size_t k = 0; k < t.size();) {
                const size_t start = k;
                const uint32_t cp = utf8_decode(t, k);
                const int b = unicode_to_byte(cp);
                if (b >= 0) {
                    p += char(b);
                } else {
                    p.append(t, start, k - start);  // not a mapped byte: keep it as written
                }
            }
        }
        EMBER_TRY(init_common(v, std::move(pieces)));
        const auto& map = byte_to_unicode();
        for (int b = 0; b < 256; ++b) m_byte_ids[size_t(b)] = lookup_plain(map[size_t(b)]);
        return {};
    }

    std::vector<int32_t> encode(std::string_view text, bool add_special,
                                bool parse_special) const override {
        std::vector<int32_t> out;
        if (add_special && m_add_bos) out.push_back(m_bos);
        std::string word, normalized;
        for (const Fragment& f : split_special(text, parse_special)) {
            if (f.id >= 0) {
                out.push_back(f.id);
                continue;
            }
            // As Hugging Face's tokenizers, the text between special tokens is normalized
            // (the special tokens themselves are matched as written).
            std::string_view plain = f.text;
            if (m_nfc && nfc_normalize(plain, normalized)) plain = normalized;
            for (auto [b, e] : m_pre->split(plain)) {
                word.clear();
                for (size_t i = b; i < e; ++i) word += byte_to_unicode()[uint8_t(plain[i])];
                encode_word(word, out);
            }
        }
        if (add_special && m_add_eos) out.push_back(m_eos);
        return out;
    }

    std::string token_to_piece(int32_t id) const override {
        if (id < 0 || size_t(id) >= m_pieces.size()) return {};
        return m_pieces[size_t(id)];
    }

private:
    // Ranks are the merges' indices.
    Status read_merges(std::vector<std::string>& merges) {
        for (size_t i = 0; i < merges.size(); ++i) {
            const std::string& m = merges[i];
            const size_t sp = m.size() > 1 ? m.find(' ', 1) : std::string::npos;
            if (sp == std::string::npos || sp + 1 >= m.size()) {
                return make_error("tokenizer.bad_metadata",
                                  "tokenizer metadata 'tokenizer.ggml.merges': entry " +
                                      std::to_string(i) + " '" + m +
                                      "' is not of the form 'left right'");
            }
        }
        m_ranks.build(std::move(merges));
        return {};
    }

    // word: one pre-tokenized piece, in the byte-to-unicode alphabet.
    void encode_word(std::string_view word, std::vector<int32_t>& out) const {
        if (word.empty()) return;
        if (m_pre->spec().ignore_merges) {
            const int32_t id = lookup_plain(word);
            if (id >= 0) {
                out.push_back(id);
                return;
            }
        }
        // Lower merge ranks merge first.
        const auto sym = merge_pieces(word, [this](std::string_view l, std::string_view r) {
            const int32_t k = m_ranks.find(l, r);
            return k < 0 ? std::nullopt : std::optional<double>(-double(k));
        });
        for (int i = 0; i >= 0; i = sym[size_t(i)].next) {
            const MergePiece& s = sym[size_t(i)];
            const std::string_view piece = word.substr(s.begin, s.len);
            const int32_t id = lookup_plain(piece);
            if (id >= 0) {
                out.push_back(id);
                continue;
            }
            // A merge result that is not in the vocabulary: fall back to its characters.
            for (size_t k = 0; k < piece.size();) {
                const size_t start = k;
                const int b = unicode_to_byte(utf8_decode(piece, k));
                int32_t cid = b >= 0 ? m_byte_ids[size_t(b)] : -1;
                if (cid < 0) cid = lookup_plain(piece.substr(start, k - start));
                if (cid < 0) cid = m_unk;
                if (cid >= 0) out.push_back(cid);
            }
        }
    }

    std::unique_ptr<PreTokenizer> m_pre;
    MergeTable m_ranks;
    std::array<int32_t, 256> m_byte_ids{};
};

}  // namespace

Result<std::unique_ptr<Tokenizer>> make_bpe_tokenizer(VocabData&& v) {
    auto t = std::make_unique<BpeTokenizer>();
    EMBER_TRY(t->init(v));
    return std::unique_ptr<Tokenizer>(std::move(t));
}

}  // namespace ember::tok
