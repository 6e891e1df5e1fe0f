// SentencePiece on small in-memory vocabularies.
#include <gtest/gtest.h>

#include "gguf/writer.h"
#include "synthetic_vocab.h"
#include "tok_test_util.h"

namespace ember::test {
namespace {

std::unique_ptr<Tokenizer> make(VocabData v) {
    auto t = Tokenizer::from_vocab(std::move(v));
    EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
    return t.ok() ? std::move(t).value() : nullptr;
}

// Ids of the pieces in spm_vocab: 3 specials + 256 bytes come first.
constexpr int32_t kFirstPiece = 3 + 256;

TEST(Spm, MergesFollowScores) {
    // "_abc" can be split as "_ab" + "c" or "_a" + "bc"; the best-scored pair merges first.
    auto a = make(spm_vocab({{"_", -1},
                             {"a", -1},
                             {"b", -1},
                             {"c", -1},
                             {"_a", -2},
                             {"ab", -3},
                             {"bc", -6},
                             {"_ab", -4}}));
    ASSERT_TRUE(a);
    // _a (-2) merges first, then _ab (-4) beats bc (-6); c stays.
    EXPECT_EQ(a->encode("abc", false, false),
              (std::vector<int32_t>{kFirstPiece + 7, kFirstPiece + 3}));

    auto b = make(spm_vocab({{"_", -1},
                             {"a", -1},
                             {"b", -1},
                             {"c", -1},
                             {"_a", -5},
                             {"ab", -3},
                             {"bc", -2},
                             {"_ab", -4}}));
    ASSERT_TRUE(b);
    // bc (-2) first; then _a (-5) is the only pair left: "_a" "bc".
    EXPECT_EQ(b->encode("abc", false, false),
              (std::vector<int32_t>{kFirstPiece + 4, kFirstPiece + 6}));
}

TEST(Spm, EqualScoresMergeLeftmostFirst) {
    auto t = make(spm_vocab({{"_", -1}, {"a", -1}, {"aa", -2}}));
    ASSERT_TRUE(t);
    // "_aaa": pairs "aa" at 1 and 2 tie; the left one wins, leaving "_" "aa" "a".
    EXPECT_EQ(t->encode("aaa", false, false),
              (std::vector<int32_t>{kFirstPiece + 0, kFirstPiece + 2, kFirstPiece + 1}));
}

TEST(Spm, ByteFallbackAndUnknown) {
    auto t = make(spm_vocab({{"_", -1}, {"a", -1}}));
    ASSERT_TRUE(t);
    // U+00E9 is not a piece: its UTF-8 bytes C3 A9 become byte tokens (id 3 + byte).
    EXPECT_EQ(t->encode("a\xC3\xA9", false, false),
              (std::vector<int32_t>{kFirstPiece + 0, kFirstPiece + 1, 3 + 0xC3, 3 + 0xA9}));
    EXPECT_EQ(t->decode(t->encode("a\xC3\xA9", false, false)), "a\xC3\xA9");

    auto no_bytes = make(spm_vocab({{"_", -1}, {"a", -1}}, /*byte_tokens=*/false));
    ASSERT_TRUE(no_bytes);
    // Without byte tokens, a missing character is one <unk>.
    EXPECT_EQ(no_bytes->encode("a\xC3\xA9"
                               "a",
                               false, false),
              (std::vector<int32_t>{3, 4, 0, 4}));
}

TEST(Spm, DummyPrefixAndSpaces) {
    auto t = make(spm_vocab({{"_", -1}, {"a", -1}, {"_a", -2}, {"__", -3}}));
    ASSERT_TRUE(t);
    EXPECT_TRUE(t->add_space_prefix());
    const int32_t sp = kFirstPiece, a = kFirstPiece + 1, sa = kFirstPiece + 2, ss = kFirstPiece + 3;
    EXPECT_EQ(t->encode("a", false, false), (std::vector<int32_t>{sa}));
    EXPECT_EQ(t->encode(" a", false, false), (std::vector<int32_t>{sp, sa}));
    EXPECT_EQ(t->encode("a a", false, false), (std::vector<int32_t>{sa, sa}));
    EXPECT_EQ(t->encode("", false, false), (std::vector<int32_t>{}));
    EXPECT_EQ(t->decode({sa, sa}), "a a");
    EXPECT_EQ(t->decode({sp, sa}), " a");  // only the one prefix space is removed
    EXPECT_EQ(t->token_to_piece(sa), " a");
    EXPECT_EQ(t->token_to_piece(ss), "  ");

    VocabData v = spm_vocab({{"_", -1}, {"a", -1}, {"_a", -2}});
    v.add_space_prefix = false;
    auto np = make(std::move(v));
    ASSERT_TRUE(np);
    EXPECT_FALSE(np->add_space_prefix());
    EXPECT_EQ(np->encode("a", false, false), (std::vector<int32_t>{a}));
    EXPECT_EQ(np->encode(" a", false, false), (std::vector<int32_t>{sa}));
    EXPECT_EQ(np->decode({sa}), " a");
}

TEST(Spm, BosEosFromMetadataAndDefaults) {
    auto def = make(spm_vocab({{"_", -1}, {"a", -1}, {"_a", -2}}));
    ASSERT_TRUE(def);
    EXPECT_TRUE(def->add_bos());
    EXPECT_FALSE(def->add_eos());
    const int32_t sa = kFirstPiece + 2;
    EXPECT_EQ(def->encode("a", true, false), (std::vector<int32_t>{1, sa}));
    EXPECT_EQ(def->encode("", true, false), (std::vector<int32_t>{1}));

    VocabData v = spm_vocab({{"_", -1}, {"a", -1}, {"_a", -2}});
    v.add_bos = false;
    v.add_eos = true;
    auto t = make(std::move(v));
    ASSERT_TRUE(t);
    EXPECT_EQ(t->encode("a", true, false), (std::vector<int32_t>{sa, 2}));
    EXPECT_EQ(t->encode("a", false, false), (std::vector<int32_t>{sa}));
}

TEST(Spm, TokenToPiece) {
    auto t = make(spm_vocab({{"_hi", -1}}));
    ASSERT_TRUE(t);
    EXPECT_EQ(t->token_to_piece(1), "");  // <s>: control
    EXPECT_EQ(t->token_to_piece(2), "");
    EXPECT_EQ(t->token_to_piece(3 + 0x0A), "\n");
    EXPECT_EQ(t->token_to_piece(3 + 0xF0), "\xF0");
    EXPECT_EQ(t->token_to_piece(kFirstPiece), " hi");
    EXPECT_EQ(t->token_to_piece(-1), "");
    EXPECT_EQ(t->token_to_piece(100000), "");
}

TEST(Spm, ParseSpecial) {
    VocabData v = spm_vocab({{"_", -1}, {"a", -1}, {"_a", -2}, {"<", -9}, {"s", -9}, {">", -9}});
    v.tokens.push_back("<|user|>");
    v.scores.push_back(0);
    v.types.push_back(TokenType::UserDefined);
    const auto user = int32_t(v.tokens.size() - 1);
    auto t = make(std::move(v));
    ASSERT_TRUE(t);
    const int32_t sa = kFirstPiece + 2;
    const auto plain = t->encode("<s>a", false, false);
    EXPECT_EQ(std::count(plain.begin(), plain.end(), 1), 0);
    EXPECT_EQ(t->decode(plain), "<s>a");
    EXPECT_EQ(t->encode("<s>a", false, true), (std::vector<int32_t>{1, sa}));
    // User-defined tokens are added vocabulary: found in plain text too (as llama.cpp does),
    // and text after one gets the dummy prefix again; control tokens only when asked.
    EXPECT_EQ(t->encode("<|user|>a", false, false), (std::vector<int32_t>{user, sa}));
    EXPECT_EQ(t->decode(t->encode("a<|user|>a", false, false)), "a<|user|> a");
    EXPECT_EQ(t->encode("<|user|>a</s>", false, true), (std::vector<int32_t>{user, sa, 2}));
}

TEST(Spm, EndOfGeneration) {
    VocabData v = spm_vocab({{"_a", -1}});
    for (const char* s :
         {"<|im_end|>", "<end_of_turn>", "<|eot_id|>", "<|end|>", "<|endoftext|>", "<|other|>"}) {
        v.tokens.push_back(s);
        v.scores.push_back(0);
        v.types.push_back(TokenType::Control);
    }
    const auto first = int32_t(v.tokens.size() - 6);
    auto t = make(std::move(v));
    ASSERT_TRUE(t);
    EXPECT_TRUE(t->is_end_of_generation(2));  // eos
    for (int32_t i = first; i < first + 5; ++i) EXPECT_TRUE(t->is_end_of_generation(i)) << i;
    EXPECT_FALSE(t->is_end_of_generation(first + 5));
    EXPECT_FALSE(t->is_end_of_generation(1));
    EXPECT_FALSE(t->is_end_of_generation(kFirstPiece));
    EXPECT_GE(t->eot(), first);  // detected from the vocabulary

    VocabData w = spm_vocab({{"_a", -1}, {"_b", -1}});
    w.eot = kFirstPiece + 1;  // tokenizer.ggml.eot_token_id, whatever its text
    auto u = make(std::move(w));
    ASSERT_TRUE(u);
    EXPECT_EQ(u->eot(), kFirstPiece + 1);
    EXPECT_TRUE(u->is_end_of_generation(kFirstPiece + 1));
    EXPECT_FALSE(u->is_end_of_generation(kFirstPiece));
}

// Gemma's SentencePiece vocabulary, as llama.cpp's converter writes it: BOS 2, EOS 1, no
// dummy prefix (tokenizer.ggml.add_space_prefix false), turn markers as control tokens.
// Read through a GGUF so that the key itself is covered.
TEST(Spm, GemmaVocabularyHasNoDummyPrefix) {
    const std::vector<std::pair<std::string, int32_t>> toks = {{"<pad>", 3},
                                                               {"<eos>", 3},
                                                               {"<bos>", 3},
                                                               {"<unk>", 2},
                                                               {"<start_of_turn>", 3},
                                                               {"<end_of_turn>", 3},
                                                               {"\n", 1},
                                                               {"\xE2\x96\x81", 1},
                                                               {"H", 1},
                                                               {"i", 1},
                                                               {"Hi", 1},
                                                               {"\xE2\x96\x81Hi", 1},
                                                               {"u", 1},
                                                               {"s", 1},
                                                               {"e", 1},
                                                               {"r", 1},
                                                               {"us", 1},
                                                               {"er", 1},
                                                               {"user", 1}};
    const auto build = [&](std::optional<bool> add_space_prefix) {
        gguf::Writer w;
        w.set_string("tokenizer.ggml.model", "llama");
        std::vector<std::string> texts;
        std::vector<float> scores;
        std::vector<int32_t> types;
        for (const auto& [text, type] : toks) {
            texts.push_back(text);
            scores.push_back(-float(texts.size()));  // earlier pieces merge first
            types.push_back(type);
        }
        w.set_string_array("tokenizer.ggml.tokens", texts);
        w.set_f32_array("tokenizer.ggml.scores", scores);
        w.set_i32_array("tokenizer.ggml.token_type", types);
        w.set_u32("tokenizer.ggml.bos_token_id", 2);
        w.set_u32("tokenizer.ggml.eos_token_id", 1);
        w.set_u32("tokenizer.ggml.unknown_token_id", 3);
        w.set_bool("tokenizer.ggml.add_bos_token", true);
        if (add_space_prefix) w.set_bool("tokenizer.ggml.add_space_prefix", *add_space_prefix);
        auto bytes = w.to_bytes();
        EXPECT_TRUE(bytes.ok());
        auto file = gguf::File::from_bytes(std::move(bytes).value(), "gemma-vocab.gguf");
        EXPECT_TRUE(file.ok());
        auto t = Tokenizer::from_gguf(**file);
        EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
        return t.ok() ? std::move(t).value() : nullptr;
    };
    const int32_t bos = 2, sot = 4, eot = 5, nl = 6, hi = 10, space_hi = 11, user = 18;

    auto gemma = build(false);
    ASSERT_TRUE(gemma);
    EXPECT_FALSE(gemma->add_space_prefix());
    EXPECT_EQ(gemma->encode("Hi", false, false), (std::vector<int32_t>{hi}));
    EXPECT_EQ(gemma->encode(" Hi", false, false), (std::vector<int32_t>{space_hi}));
    EXPECT_EQ(gemma->encode("Hi", true, false), (std::vector<int32_t>{bos, hi}));
    // No space after a special token either: a chat turn tokenizes as written.
    EXPECT_EQ(gemma->encode("<start_of_turn>user\nHi<end_of_turn>", false, true),
              (std::vector<int32_t>{sot, user, nl, hi, eot}));
    EXPECT_EQ(gemma->decode({bos, space_hi}), " Hi");  // no dummy prefix to take off
    EXPECT_EQ(gemma->decode({bos, hi}), "Hi");

    // The same vocabulary without the key: SentencePiece's default adds the prefix.
    auto llama = build(std::nullopt);
    ASSERT_TRUE(llama);
    EXPECT_TRUE(llama->add_space_prefix());
    EXPECT_EQ(llama->encode("Hi", false, false), (std::vector<int32_t>{space_hi}));
    EXPECT_EQ(llama->decode({bos, space_hi}), "Hi");
}

TEST(Spm, InvalidUtf8InputRoundTrips) {
    auto t = make(spm_vocab({{"_", -1}, {"a", -1}}));
    ASSERT_TRUE(t);
    const std::string text = "a\xFF\xC3(\xE2\x82";
    EXPECT_EQ(t->decode(t->encode(text, false, false)), text);
}

}  // namespace
}  // namespace ember::test
