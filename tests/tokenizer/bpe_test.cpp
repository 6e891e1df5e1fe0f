// Byte-level BPE on small in-memory vocabularies, and the pre-tokenizers.
#include <gtest/gtest.h>

#include "common/log.h"
#include "synthetic_vocab.h"
#include "tok_test_util.h"
#include "tokenizer/pretokenize.h"

namespace ember::test {
namespace {

std::unique_ptr<Tokenizer> make(VocabData v) {
    auto t = Tokenizer::from_vocab(std::move(v));
    EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
    return t.ok() ? std::move(t).value() : nullptr;
}

std::vector<std::string> pieces(const Tokenizer& t, const std::vector<int32_t>& ids) {
    std::vector<std::string> out;
    for (int32_t id : ids) out.push_back(t.token_to_piece(id));
    return out;
}

using Strings = std::vector<std::string>;

TEST(Bpe, MergesFollowRank) {
    auto a = make(bpe_vocab({{"a", "b"}, {"b", "c"}}));
    ASSERT_TRUE(a);
    EXPECT_EQ(pieces(*a, a->encode("abc", false, false)), (Strings{"ab", "c"}));
    auto b = make(bpe_vocab({{"b", "c"}, {"a", "b"}}));
    ASSERT_TRUE(b);
    EXPECT_EQ(pieces(*b, b->encode("abc", false, false)), (Strings{"a", "bc"}));
    // Merges chain: "ab" + "c" has its own rank.
    auto c = make(bpe_vocab({{"a", "b"}, {"ab", "c"}}));
    ASSERT_TRUE(c);
    EXPECT_EQ(pieces(*c, c->encode("abcabc", false, false)), (Strings{"abc", "abc"}));
    // Bytes with no merge stay single byte tokens, whatever they are.
    const std::string bin = "\x01\xFF\x80 \t";
    const auto ids = c->encode(bin, false, false);
    EXPECT_EQ(ids, (std::vector<int32_t>{0x01, 0xFF, 0x80, 0x20, 0x09}));
    EXPECT_EQ(c->decode(ids), bin);
}

TEST(Bpe, RepeatedMergeKeepsItsFirstRank) {
    // "b c" is listed again after "a b": its first rank (0) still wins over "a b" (1).
    VocabData v = bpe_vocab({{"b", "c"}, {"a", "b"}});
    v.merges.push_back(v.merges[0]);
    auto t = make(v);
    ASSERT_TRUE(t);
    EXPECT_EQ(pieces(*t, t->encode("abc", false, false)), (Strings{"a", "bc"}));
    // A merge that is not at the first space of its entry ("a b c" is "a" + "b c") matches
    // only that split.
    VocabData w = bpe_vocab({{"x", "y"}});
    w.merges.insert(w.merges.begin(), "x y z");
    auto u = make(w);
    ASSERT_TRUE(u);
    EXPECT_EQ(pieces(*u, u->encode("xy", false, false)), (Strings{"xy"}));
}

TEST(Bpe, TextOfASpecialTokenCanStillBeAPlainToken) {
    // "hi" is both a merge result and, later in the vocabulary, a control token with the same
    // text: text finds the control token (the last one), plain text still merges to the
    // normal one.
    VocabData v = bpe_vocab({{"h", "i"}}, {{"hi", TokenType::Control}});
    const auto normal = int32_t(v.tokens.size() - 2), control = int32_t(v.tokens.size() - 1);
    auto t = make(v);
    ASSERT_TRUE(t);
    EXPECT_EQ(t->find_token("hi"), control);
    EXPECT_EQ(t->encode("hi", false, false), (std::vector<int32_t>{normal}));
    EXPECT_EQ(t->encode("hi", false, true), (std::vector<int32_t>{control}));
}

TEST(Bpe, SpaceIsPartOfTheWord) {
    auto t = make(bpe_vocab({{" ", "h"}, {" h", "i"}, {"h", "i"}}));
    ASSERT_TRUE(t);
    EXPECT_EQ(pieces(*t, t->encode("hi hi", false, false)), (Strings{"hi", " hi"}));
    // Token text is in GPT-2's byte alphabet: a space is U+0120.
    EXPECT_EQ(t->token_text(t->encode(" hi", false, false)[0]), "\xC4\xA0hi");
    EXPECT_FALSE(t->add_bos());
    EXPECT_EQ(t->encode("hi", true, false), t->encode("hi", false, false));
}

TEST(Bpe, ParseSpecialLongestMatch) {
    auto t = make(bpe_vocab({{"h", "i"}}, {{"<|im_end|>", TokenType::Control},
                                           {"<|im_end|>!", TokenType::Control},
                                           {"<think>", TokenType::UserDefined}}));
    ASSERT_TRUE(t);
    const int32_t end = t->find_token("<|im_end|>"), end2 = t->find_token("<|im_end|>!"),
                  think = t->find_token("<think>"), hi = t->find_token("hi");
    ASSERT_GE(end, 0);
    ASSERT_GE(think, 0);
    ASSERT_GE(hi, 0);
    const std::string text = "hi<|im_end|><think>hi<|im_end|>!";
    const auto off = t->encode(text, false, false);
    for (int32_t id : off) {
        EXPECT_TRUE(id != end && id != end2) << ids_str(off);
    }
    // A user-defined token is added vocabulary: plain text finds it too (llama.cpp does).
    EXPECT_EQ(std::count(off.begin(), off.end(), think), 1) << ids_str(off);
    EXPECT_EQ(t->decode(off), text);
    EXPECT_EQ(t->encode(text, false, true), (std::vector<int32_t>{hi, end, think, hi, end2}));
    EXPECT_TRUE(t->is_end_of_generation(end));
    EXPECT_FALSE(t->is_end_of_generation(think));
    EXPECT_EQ(t->token_to_piece(end), "");
    EXPECT_EQ(t->token_to_piece(think), "<think>");  // user-defined: its text
}

TEST(Bpe, Llama3DefaultsAndIgnoreMerges) {
    // "abc" is a token but no merge reaches it; Llama 3 takes whole-token words as they are.
    VocabData v = bpe_vocab({{"a", "b"}}, {{"<|begin_of_text|>", TokenType::Control}}, "llama-bpe");
    v.tokens.push_back("abc");
    v.types.push_back(TokenType::Normal);
    v.bos = int64_t(v.tokens.size() - 2);
    auto t = make(v);
    ASSERT_TRUE(t);
    EXPECT_TRUE(t->add_bos());  // llama-bpe defaults to BOS on
    EXPECT_EQ(t->encode("abc", true, false),
              (std::vector<int32_t>{int32_t(*v.bos), int32_t(v.tokens.size() - 1)}));

    v.pre = "gpt-2";
    auto g = make(v);
    ASSERT_TRUE(g);
    EXPECT_FALSE(g->add_bos());
    EXPECT_EQ(pieces(*g, g->encode("abc", true, false)), (Strings{"ab", "c"}));
}

// Digits are where the pre-tokenizers differ most, so give the vocabulary merges that could
// join any run of digits: what stays apart was split before merging.
VocabData digit_vocab(const std::string& pre) {
    std::vector<std::pair<std::string, std::string>> m;
    std::string run = "1";
    for (char c = '2'; c <= '9'; ++c) {
        m.push_back({run, std::string(1, c)});
        run += c;
    }
    for (const std::string s : {"4", "45", "456", "4567", "45678"}) {
        m.push_back({s, std::string(1, char('0' + (s.back() - '0') + 1))});
    }
    m.push_back({"7", "8"});
    m.push_back({"78", "9"});
    return bpe_vocab(m, {}, pre);
}

TEST(Bpe, DigitGroupingByPreTokenizer) {
    const std::string text = "123456789";
    struct Case {
        const char* pre;
        Strings expected;
    };
    const Case cases[] = {
        {"gpt-2", {"123456789"}},
        {"llama-bpe", {"123", "456", "789"}},  // \p{N}{1,3}
        {"qwen2", {"1", "2", "3", "4", "5", "6", "7", "8", "9"}},
        {"starcoder", {"1", "2", "3", "4", "5", "6", "7", "8", "9"}},
        {"deepseek-llm", {"123456789"}},    // \p{N}+
        {"falcon", {"123", "456", "789"}},  // [0-9]{3}
    };
    for (const Case& c : cases) {
        auto t = make(digit_vocab(c.pre));
        ASSERT_TRUE(t);
        EXPECT_EQ(pieces(*t, t->encode(text, false, false)), c.expected) << c.pre;
    }
}

Strings split(const std::string& pre, const std::string& text) {
    auto p = tok::PreTokenizer::create(pre);
    EXPECT_TRUE(p.ok());
    Strings out;
    if (!p.ok()) return out;
    size_t covered = 0;
    for (auto [b, e] : (*p)->split(text)) {
        EXPECT_EQ(b, covered) << "pieces must tile the text";
        covered = e;
        out.push_back(text.substr(b, e - b));
    }
    EXPECT_EQ(covered, text.size());
    return out;
}

// Expected splits were checked against Python's `regex` module running the same patterns.
TEST(PreTokenizer, EveryRequiredNameSplitsAsItsModel) {
    const std::string text =
        "Hello world's 1234567 a+b=<c> 3.14 $x \xE4\xB8\xAD\xE6\x96\x87"
        "abc";
    const std::string zh = " \xE4\xB8\xAD\xE6\x96\x87"
                           "abc",
                      han = "\xE4\xB8\xAD\xE6\x96\x87";
    const Strings gpt2 = {"Hello", " world", "'s", " 1234567", " a", "+",  "b", "=<",
                          "c",     ">",      " 3", ".",        "14", " $", "x", zh};
    const Strings starcoder = {"Hello", " world", "'s", " ", "1",  "2",  "3", "4", "5",
                               "6",     "7",      " a", "+", "b",  "=<", "c", ">", " ",
                               "3",     ".",      "1",  "4", " $", "x",  zh};
    struct Case {
        const char* pre;
        Strings expected;
    };
    const Case cases[] = {
        {"default", {"Hello", " world", "'", "s", " ", "123", "456", "7", " a", "+", "b",
                     "=<",    "c",      ">", " ", "3", ".",   "14",  " ", "$",  "x", zh}},
        {"gpt-2", gpt2},
        {"gpt-neox", gpt2},
        {"mpt", gpt2},
        {"phi-2", gpt2},
        {"llama-bpe",
         {"Hello", " world", "'s", " ", "123", "456", "7", " a", "+b", "=<", "c", ">", " ", "3",
          ".", "14", " $", "x", zh}},
        {"qwen2", {"Hello", " world", "'s", " ", "1", "2", "3", "4", "5", "6",  "7", " a",
                   "+b",    "=<",     "c",  ">", " ", "3", ".", "1", "4", " $", "x", zh}},
        {"deepseek-llm", {"Hello", " world", "'", "s", " ",  "1234567", " a", "+", "b", "=<", "c",
                          ">",     " ",      "3", ".", "14", " $",      "x",  " ", han, "abc"}},
        {"deepseek-coder",
         {"Hello", " world", "'", "s",  " ", "1", "2", "3", "4",  "5", "6", "7", " a", "+",
          "b",     "=<",     "c", "> ", "3", ".", "1", "4", " $", "x", " ", han, "abc"}},
        {"falcon", {"Hello", " world", "'", "s",  " ", "123", "456", "7", " a", "+", "b",
                    "=<",    "c",      ">", " 3", ".", "14",  " ",   "$", "x",  zh}},
        {"starcoder", starcoder},
        {"refact", starcoder},
        {"smollm", starcoder},
    };
    for (const Case& c : cases) EXPECT_EQ(split(c.pre, text), c.expected) << c.pre;
}

TEST(PreTokenizer, Llama3AndQwen2Whitespace) {
    const std::string text = "a\n\n  b  \tc\r\n";
    // "\tc": a letter run may take one leading non-letter, non-newline character.
    const Strings expected = {"a", "\n\n", " ", " b", "  ", "\tc", "\r\n"};
    EXPECT_EQ(split("llama-bpe", text), expected);
    EXPECT_EQ(split("qwen2", text), expected);
    EXPECT_EQ(split("llama-bpe", "I'VE you'Re"), (Strings{"I", "'VE", " you", "'Re"}));
    EXPECT_EQ(split("gpt-2", "I'VE you'Re"), (Strings{"I", "'", "VE", " you", "'", "Re"}));
}

TEST(PreTokenizer, AllKnownNamesCompileAndTile) {
    const std::string text =
        "Hi there!\n\n  It's 2024-06-01, 3.5\xC2\xB0"
        "C \xF0\x9F\xA6\x99 ok\xFF.";
    for (const std::string& name : tok::pre_tokenizer_names()) {
        const Strings s = split(name, text);
        EXPECT_GT(s.size(), 5u) << name;
    }
}

TEST(PreTokenizer, InvalidUtf8BytesStandAlone) {
    EXPECT_EQ(split("gpt-2",
                    "ab\xFF"
                    "cd \xC3"),
              (Strings{"ab", "\xFF", "cd", " ", "\xC3"}));
}

struct LogCapture {
    static void cb(LogLevel level, const char* msg, void* user) {
        if (level >= LogLevel::Warn) static_cast<std::vector<std::string>*>(user)->push_back(msg);
    }
    std::vector<std::string> messages;
    LogCapture() { set_log_callback(cb, &messages); }
    ~LogCapture() { set_log_callback(nullptr, nullptr); }
};

TEST(PreTokenizer, UnknownNameWarnsAndFallsBackToGpt2) {
    std::vector<std::pair<std::string, std::string>> merges = {
        {"1", "2"}, {"12", "3"}, {"123", "4"}};
    std::unique_ptr<Tokenizer> unknown;
    {
        LogCapture log;
        unknown = make(bpe_vocab(merges, {}, "no-such-pretokenizer"));
        ASSERT_EQ(log.messages.size(), 1u);
        EXPECT_NE(log.messages[0].find("no-such-pretokenizer"), std::string::npos)
            << log.messages[0];
    }
    ASSERT_TRUE(unknown);
    auto gpt2 = make(bpe_vocab(merges, {}, "gpt-2"));
    ASSERT_TRUE(gpt2);
    const std::string text = "It's 1234 o'clock!\n\n  ok";
    EXPECT_EQ(unknown->encode(text, false, false), gpt2->encode(text, false, false));
    EXPECT_EQ(split("no-such-pretokenizer", text), split("gpt-2", text));
    {
        LogCapture log;  // known names are silent
        auto q = make(bpe_vocab(merges, {}, "qwen2"));
        EXPECT_TRUE(log.messages.empty());
    }
}

}  // namespace
}  // namespace ember::test
