// StreamDecoder, loading errors, and encoding speed.
#include <gtest/gtest.h>

#include <chrono>
#include <utility>

#include "gguf/writer.h"
#include "synthetic_vocab.h"
#include "test_util.h"
#include "tok_test_util.h"

namespace ember::test {
namespace {

std::unique_ptr<Tokenizer> make(VocabData v) {
    auto t = Tokenizer::from_vocab(std::move(v));
    EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
    return t.ok() ? std::move(t).value() : nullptr;
}

int32_t byte_id(uint8_t b) {
    return 3 + b;
}  // spm_vocab: byte tokens follow 3 specials

TEST(StreamDecoder, HoldsSplitUtf8UntilComplete) {
    auto t = make(spm_vocab({{"_hi", -1}, {"!", -1}}));
    ASSERT_TRUE(t);
    const int32_t hi = 3 + 256, bang = hi + 1;
    StreamDecoder d(*t);
    EXPECT_EQ(d.push(hi), " hi");
    // U+1F999 (llama emoji) = F0 9F A6 99, one byte token at a time.
    EXPECT_EQ(d.push(byte_id(0xF0)), "");
    EXPECT_EQ(d.push(byte_id(0x9F)), "");
    EXPECT_EQ(d.push(byte_id(0xA6)), "");
    EXPECT_EQ(d.push(byte_id(0x99)), "\xF0\x9F\xA6\x99");
    EXPECT_EQ(d.push(bang), "!");
    EXPECT_EQ(d.flush(), "");
    // Control tokens add nothing.
    EXPECT_EQ(d.push(1), "");
    EXPECT_EQ(d.push(2), "");
}

TEST(StreamDecoder, BpeEmojiAcrossTokens) {
    auto t = make(bpe_vocab({{"\xF0", "\x9F"}, {"\xA6", "\x99"}}));
    ASSERT_TRUE(t);
    const auto ids = t->encode("\xF0\x9F\xA6\x99", false, false);
    ASSERT_EQ(ids.size(), 2u);
    StreamDecoder d(*t);
    EXPECT_EQ(d.push(ids[0]), "");
    EXPECT_EQ(d.push(ids[1]), "\xF0\x9F\xA6\x99");
}

TEST(StreamDecoder, InvalidBytesBecomeReplacementChars) {
    auto t = make(spm_vocab({{"a", -1}}));
    ASSERT_TRUE(t);
    const int32_t a = 3 + 256;
    const std::string fffd = "\xEF\xBF\xBD";
    StreamDecoder d(*t);
    EXPECT_EQ(d.push(byte_id(0xFF)), fffd);  // can never start a character: not held
    EXPECT_EQ(d.push(byte_id(0xE2)), "");    // could start one
    EXPECT_EQ(d.push(a), fffd + "a");        // ... but did not
    EXPECT_EQ(d.push(byte_id(0xC3)), "");
    EXPECT_EQ(d.flush(), fffd);  // the stream ended inside a character
    EXPECT_EQ(d.flush(), "");
    EXPECT_EQ(d.push(byte_id(0xED)), "");
    EXPECT_EQ(d.push(byte_id(0xA0)), fffd + fffd);  // a surrogate: ED then a stray A0
    EXPECT_EQ(d.push(byte_id(0xC0)), fffd);         // overlong lead byte
}

TEST(StreamDecoder, ConcatenationEqualsDecodeOnValidText) {
    auto t = load_tokenizer(shared_path("vocab/ggml-vocab-gpt-2.gguf"));
    ASSERT_TRUE(t);
    const std::string text =
        "Emoji \xF0\x9F\x98\x81 and \xE6\x88\x91\xE6\x83\xB3 and \xE1\x9E\x80\xE1\x9E\xB6 "
        "\xF0\x9F\x98\xB6\xE2\x80\x8D\xF0\x9F\x8C\xAB\xEF\xB8\x8F done";
    const auto ids = t->encode(text, false, false);
    StreamDecoder d(*t);
    std::string out;
    for (int32_t id : ids) {
        const std::string part = d.push(id);
        // Every chunk is valid UTF-8 by itself.
        for (size_t i = 0; i < part.size();) {
            auto c = tok::utf8_check(part, i);
            ASSERT_EQ(c.status, tok::Utf8Status::Valid);
            i += c.len;
        }
        out += part;
    }
    out += d.flush();
    EXPECT_EQ(out, text);
}

void expect_error(VocabData v, const std::string& needle) {
    auto t = Tokenizer::from_vocab(std::move(v));
    ASSERT_FALSE(t.ok()) << "expected an error mentioning " << needle;
    EXPECT_NE(t.error().message.find(needle), std::string::npos) << t.error().message;
}

TEST(TokenizerErrors, FromVocab) {
    VocabData v = spm_vocab({{"a", -1}});
    v.scores.pop_back();
    expect_error(v, "tokenizer.ggml.scores");
    v = spm_vocab({{"a", -1}});
    v.scores.clear();
    expect_error(v, "tokenizer.ggml.scores");
    v = spm_vocab({{"a", -1}});
    v.types.push_back(TokenType::Normal);
    expect_error(v, "tokenizer.ggml.token_type");
    v = spm_vocab({{"a", -1}});
    v.tokens.clear();
    expect_error(v, "tokenizer.ggml.tokens");
    v = spm_vocab({{"a", -1}});
    v.model = "bert";
    expect_error(v, "'bert'");
    v = bpe_vocab({{"a", "b"}});
    v.merges.clear();
    expect_error(v, "tokenizer.ggml.merges");
    v = bpe_vocab({{"a", "b"}});
    v.merges.push_back("nospace");
    expect_error(v, "'nospace'");
}

TEST(TokenizerErrors, OutOfRangeIdsAreIgnored) {
    VocabData v = spm_vocab({{"a", -1}});
    v.bos = 4294967295;  // some converters write -1 this way
    v.eot = -5;
    auto t = make(std::move(v));
    ASSERT_TRUE(t);
    EXPECT_EQ(t->bos(), 1);  // the SentencePiece default
    EXPECT_EQ(t->eot(), -1);
}

Result<std::unique_ptr<Tokenizer>> from_writer(const gguf::Writer& w) {
    EMBER_ASSIGN_OR_RETURN(auto bytes, w.to_bytes());
    EMBER_ASSIGN_OR_RETURN(auto file, gguf::File::from_bytes(std::move(bytes), "test.gguf"));
    return Tokenizer::from_gguf(*file);
}

TEST(TokenizerErrors, FromGguf) {
    {
        gguf::Writer w;
        w.set_string("general.architecture", "llama");
        auto t = from_writer(w);
        ASSERT_FALSE(t.ok());
        EXPECT_NE(t.error().message.find("tokenizer.ggml.model"), std::string::npos)
            << t.error().message;
    }
    {
        gguf::Writer w;
        w.set_string("tokenizer.ggml.model", "llama");
        auto t = from_writer(w);
        ASSERT_FALSE(t.ok());
        EXPECT_NE(t.error().message.find("tokenizer.ggml.tokens"), std::string::npos)
            << t.error().message;
    }
    {
        gguf::Writer w;
        w.set_string("tokenizer.ggml.model", "llama");
        w.set_f32_array("tokenizer.ggml.tokens", {1.0f, 2.0f});
        auto t = from_writer(w);
        ASSERT_FALSE(t.ok());
        EXPECT_NE(t.error().message.find("tokenizer.ggml.tokens"), std::string::npos)
            << t.error().message;
    }
    {
        gguf::Writer w;
        w.set_string("tokenizer.ggml.model", "llama");
        w.set_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "a"});
        w.set_f32_array("tokenizer.ggml.scores", {0, 0, 0});
        auto t = from_writer(w);
        ASSERT_FALSE(t.ok());
        EXPECT_NE(t.error().message.find("tokenizer.ggml.scores"), std::string::npos)
            << t.error().message;
        EXPECT_NE(t.error().message.find("3 entries"), std::string::npos) << t.error().message;
    }
    {
        gguf::Writer w;
        w.set_string("tokenizer.ggml.model", "llama");
        w.set_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>",
                                                     "\xE2\x96\x81"
                                                     "a"});
        w.set_f32_array("tokenizer.ggml.scores", {0, 0, 0, -1});
        w.set_i32_array("tokenizer.ggml.token_type", {2, 3, 3, 1});
        w.set_bool("tokenizer.ggml.add_bos_token", false);
        w.set_u32("tokenizer.ggml.bos_token_id", 1);
        auto t = from_writer(w);
        ASSERT_TRUE(t.ok()) << t.error().message;
        EXPECT_FALSE((*t)->add_bos());
        EXPECT_EQ((*t)->encode("a", true, false), (std::vector<int32_t>{3}));
        EXPECT_EQ((*t)->token_type(1), TokenType::Control);
    }
}

// A 10 KB text and a 10 KB word tokenize and round-trip. The time is printed, not asserted:
// tests must pass on a busy machine, and speed is measured by benchmarks.
TEST(TokenizerSpeed, TenKilobytes) {
    std::string text;
    const std::string para = read_file_bytes(shared_path("vocab/ggml-vocab-gpt-2.gguf.inp"));
    while (text.size() < 10 * 1024) text += para;
    text.resize(10 * 1024);
    const std::string long_word(10 * 1024, 'a');  // one word: merging must not be quadratic
    for (const char* name : {"vocab/ggml-vocab-llama-spm.gguf", "vocab/ggml-vocab-gpt-2.gguf"}) {
        auto t = load_tokenizer(shared_path(name));
        ASSERT_TRUE(t);
        for (const std::string* s : {&std::as_const(text), &long_word}) {
            const auto start = std::chrono::steady_clock::now();
            const auto ids = t->encode(*s, false, false);
            const double ms =
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                    .count();
            std::printf("%s: %zu bytes -> %zu tokens in %.2f ms\n", name, s->size(), ids.size(),
                        ms);
            EXPECT_GT(ids.size(), 100u);
            EXPECT_EQ(t->decode(ids).size(), s->size());
        }
    }
}

}  // namespace
}  // namespace ember::test
