// Small in-memory vocabularies for the tokenizer tests.
#pragma once

#include <cstdio>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace ember::test {

// SentencePiece: <unk>, <s>, </s>, optionally the 256 byte tokens, then the pieces with scores
// ("_" in a piece is written as U+2581).
inline VocabData spm_vocab(const std::vector<std::pair<std::string, float>>& pieces,
                           bool byte_tokens = true) {
    VocabData v;
    v.model = "llama";
    auto add = [&](std::string t, float score, TokenType type) {
        v.tokens.push_back(std::move(t));
        v.scores.push_back(score);
        v.types.push_back(type);
    };
    add("<unk>", 0, TokenType::Unknown);
    add("<s>", 0, TokenType::Control);
    add("</s>", 0, TokenType::Control);
    if (byte_tokens) {
        for (int b = 0; b < 256; ++b) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "<0x%02X>", b);
            add(buf, 0, TokenType::Byte);
        }
    }
    for (const auto& [text, score] : pieces) {
        std::string t;
        for (char c : text) {
            if (c == '_') {
                t += "\xE2\x96\x81";
            } else {
                t += c;
            }
        }
        add(t, score, TokenType::Normal);
    }
    v.bos = 1;
    v.eos = 2;
    v.unk = 0;
    return v;
}

// Byte-level BPE: the 256 byte symbols (id = byte), then one token per merge result (in merge
// order), then the special tokens. Merges are written with plain bytes; ' ' inside a merge
// side is written as U+0120 as in GPT-2 ("Ġ").
inline VocabData bpe_vocab(const std::vector<std::pair<std::string, std::string>>& merges,
                           const std::vector<std::pair<std::string, TokenType>>& specials = {},
                           const std::string& pre = "gpt-2") {
    const auto& map = tok::byte_to_unicode();
    auto enc = [&](const std::string& s) {
        std::string out;
        for (unsigned char c : s) out += map[c];
        return out;
    };
    VocabData v;
    v.model = "gpt2";
    v.pre = pre;
    for (int b = 0; b < 256; ++b) {
        v.tokens.push_back(map[size_t(b)]);
        v.types.push_back(TokenType::Normal);
    }
    std::set<std::string> seen(v.tokens.begin(), v.tokens.end());
    for (const auto& [l, r] : merges) {
        v.merges.push_back(enc(l) + " " + enc(r));
        const std::string t = enc(l + r);
        if (seen.insert(t).second) {
            v.tokens.push_back(t);
            v.types.push_back(TokenType::Normal);
        }
    }
    for (const auto& [text, type] : specials) {
        v.tokens.push_back(text);
        v.types.push_back(type);
    }
    return v;
}

}  // namespace ember::test
