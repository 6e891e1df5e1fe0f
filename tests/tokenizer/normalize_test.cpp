// NFC normalization of tokenizer input: the ICU wrapper, which vocabularies apply it (Qwen's),
// and the real Qwen3 vocabulary on text that is not NFC.
#include <gtest/gtest.h>

#include <filesystem>

#include "synthetic_vocab.h"
#include "test_util.h"
#include "tok_test_util.h"
#include "tokenizer/normalize.h"

namespace ember::test {
namespace {

// Returns the NFC form (text itself when nfc_normalize reports it is NFC already).
std::string nfc(const std::string& text) {
    std::string out = "untouched";
    if (!tok::nfc_normalize(text, out)) {
        EXPECT_EQ(out, "untouched") << "out must not be written when text is NFC";
        return text;
    }
    EXPECT_NE(out, text) << "true means the text changed";
    return out;
}

const std::string kCafeNfd = "Cafe\xCC\x81";  // e + U+0301 COMBINING ACUTE ACCENT
const std::string kCafeNfc = "Caf\xC3\xA9";   // U+00E9

TEST(Nfc, ComposesAndKeepsWhatIsNfcAlready) {
    std::string out;
    EXPECT_FALSE(tok::nfc_normalize("", out));
    EXPECT_FALSE(tok::nfc_normalize("plain ASCII, digits 123 and\ttabs\n", out));
    EXPECT_FALSE(tok::nfc_normalize(kCafeNfc + " \xE4\xBD\xA0\xE5\xA5\xBD \xF0\x9F\xA6\x99", out));
    EXPECT_EQ(nfc(kCafeNfd), kCafeNfc);
    EXPECT_EQ(nfc("n\xCC\x83"), "\xC3\xB1");                     // n + tilde
    EXPECT_EQ(nfc("A\xCC\x8A"), "\xC3\x85");                     // A + ring
    EXPECT_EQ(nfc("\xE2\x84\xAB"), "\xC3\x85");                  // U+212B ANGSTROM SIGN
    EXPECT_EQ(nfc("\xE1\x84\x80\xE1\x85\xA1"), "\xEA\xB0\x80");  // Hangul jamo -> U+AC00
    EXPECT_EQ(nfc("Vie\xCC\xA3\xCC\x82t"), "Vi\xE1\xBB\x87t");   // two marks, reordered
    EXPECT_EQ(nfc("e\xCC\x82\xCC\xA3"), "\xE1\xBB\x87");         // the other mark order
    EXPECT_EQ(nfc("x\xCC\x81"), "x\xCC\x81");  // no precomposed x-acute: NFC already
}

TEST(Nfc, InvalidUtf8BytesAreKeptAsTheyAre) {
    // Invalid bytes split the text; the valid runs around them are normalized.
    const std::string in = "\xFF" + kCafeNfd + "\xC3" + "e\xCC\x81\x80";
    EXPECT_EQ(nfc(in), "\xFF" + kCafeNfc + "\xC3" + "\xC3\xA9\x80");
    std::string out;
    EXPECT_FALSE(tok::nfc_normalize("abc\xFF\xFE def", out));
    // A NUL byte is a character like any other.
    EXPECT_EQ(nfc(std::string("a\0e\xCC\x81", 5)), std::string("a\0\xC3\xA9", 4));
}

std::unique_ptr<Tokenizer> make(VocabData v) {
    auto t = Tokenizer::from_vocab(std::move(v));
    EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
    return t.ok() ? std::move(t).value() : nullptr;
}

// Random mixes of ASCII, combining marks, precomposed letters, Hangul jamo and invalid bytes:
// the output is NFC (normalizing it again changes nothing), and a Qwen-style vocabulary
// decodes its ids to exactly that output.
TEST(Nfc, RandomTextIsNormalizedOnceAndRoundTrips) {
    const std::vector<std::string> parts = {"a",
                                            "e",
                                            " ",
                                            "\n",
                                            "\xCC\x81",
                                            "\xCC\xA3",
                                            "\xCC\x82",
                                            "\xC3\xA9",
                                            "\xE1\x84\x80",
                                            "\xE1\x85\xA1",
                                            "\xE1\x86\xA8",
                                            "\xE2\x84\xAB",
                                            "\xEA\xB0\x80",
                                            "\xFF",
                                            "\xC3",
                                            "\xE1\x84",
                                            "\xF0\x9F\xA6\x99",
                                            "\xE0\xA4\x95",
                                            "\xE0\xA4\xBC"};
    auto t = make(bpe_vocab({{"\xC3", "\xA9"}, {"e", "\xCC\x81"}}, {}, "qwen2"));
    ASSERT_TRUE(t);
    uint32_t seed = 12345;
    auto next = [&seed] { return (seed = seed * 1664525u + 1013904223u) >> 8; };
    for (int round = 0; round < 2000; ++round) {
        std::string text;
        const uint32_t n = next() % 12;
        for (uint32_t i = 0; i < n; ++i) text += parts[next() % parts.size()];
        std::string once = text;
        tok::nfc_normalize(text, once);
        std::string twice;
        EXPECT_FALSE(tok::nfc_normalize(once, twice)) << escaped(text);
        EXPECT_EQ(t->decode(t->encode(text, false, false)), once) << escaped(text);
    }
}

TEST(Nfc, OnlyQwensVocabulariesNormalize) {
    // "é" (U+00E9, bytes C3 A9) is one token; the decomposed form would be "e" + CC 81.
    const auto merges = std::vector<std::pair<std::string, std::string>>{{"\xC3", "\xA9"}};
    const std::string think = "<think>";
    for (const char* pre : {"qwen2", "deepseek-r1-qwen", "llama-bpe", "gpt-2", "stablelm2"}) {
        SCOPED_TRACE(pre);
        auto t = make(bpe_vocab(merges, {{think, TokenType::UserDefined}}, pre));
        ASSERT_TRUE(t);
        const bool qwen = std::string(pre) == "qwen2" || std::string(pre) == "deepseek-r1-qwen";
        EXPECT_EQ(t->nfc(), qwen);
        const auto composed = t->encode("e\xC3\xA9", false, false);
        ASSERT_EQ(composed.size(), 2u) << ids_str(composed);
        const auto decomposed = t->encode("ee\xCC\x81", false, false);
        if (qwen) {
            EXPECT_EQ(decomposed, composed);
            EXPECT_EQ(t->decode(decomposed), "e\xC3\xA9");
        } else {
            EXPECT_EQ(decomposed.size(), 4u) << ids_str(decomposed);  // e e CC 81
            EXPECT_EQ(t->decode(decomposed), "ee\xCC\x81");
        }
        // Special tokens are matched in the text as written; the text around them is
        // normalized on its own.
        const auto with_special = t->encode("e\xCC\x81<think>e\xCC\x81", false, false);
        ASSERT_GE(with_special.size(), 3u) << ids_str(with_special);
        EXPECT_EQ(t->decode(with_special),
                  qwen ? "\xC3\xA9<think>\xC3\xA9" : "e\xCC\x81<think>e\xCC\x81");
    }
}

TEST(Nfc, Qwen3VocabularyMatchesHuggingFaceOnDecomposedText) {
    const std::string path = shared_path("vocab/ggml-vocab-qwen3.gguf");
    if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is not there";
    auto tok = load_tokenizer(path);
    ASSERT_TRUE(tok);
    EXPECT_TRUE(tok->nfc());
    // The ids of the NFC form are Hugging Face's for both forms (its tokenizer.json has an
    // NFC normalizer).
    const std::string nfd =
        "NFD input: " + kCafeNfd + ", n\xCC\x83, A\xCC\x8A, Vie\xCC\xA3\xCC\x82t Nam";
    const std::string composed =
        "NFD input: " + kCafeNfc + ", \xC3\xB1, \xC3\x85, Vi\xE1\xBB\x87t Nam";
    const auto ids = tok->encode(composed, false, false);
    EXPECT_EQ(tok->encode(nfd, false, false), ids);
    EXPECT_EQ(tok->decode(ids), composed);

    auto llama3 = load_tokenizer(shared_path("vocab/ggml-vocab-llama3.gguf"));
    ASSERT_TRUE(llama3);
    EXPECT_FALSE(llama3->nfc());  // Llama 3's tokenizer.json has no normalizer
    EXPECT_NE(llama3->encode(nfd, false, false), llama3->encode(composed, false, false));
}

}  // namespace
}  // namespace ember::test
