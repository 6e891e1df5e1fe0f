// Real vocabularies: llama.cpp's tokenizer test vectors (../shared/vocab) and stories260K.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>

#include "test_util.h"
#include "tok_test_util.h"
#include "tokenizer/normalize.h"

namespace ember::test {
namespace {

namespace fs = std::filesystem;

struct VocabCase {
    std::string text;
    std::vector<int32_t> ids;
};

// .inp holds texts each followed by "\n__ggml_vocab_test__\n" (as llama.cpp's
// test-tokenizer-0 writes them); line i of .out holds the ids of text i.
std::vector<VocabCase> read_cases(const std::string& gguf_path) {
    const std::string inp = read_file_bytes(gguf_path + ".inp");
    const std::string sep = "\n__ggml_vocab_test__\n";
    std::vector<std::string> texts;
    size_t pos = 0;
    while (pos < inp.size()) {
        const size_t hit = inp.find(sep, pos);
        if (hit == std::string::npos) {
            texts.push_back(inp.substr(pos));  // a last text without a separator
            break;
        }
        texts.push_back(inp.substr(pos, hit - pos));
        pos = hit + sep.size();
    }
    std::ifstream out(gguf_path + ".out");
    std::vector<VocabCase> cases;
    std::string line;
    for (size_t i = 0; i < texts.size(); ++i) {
        if (!std::getline(out, line)) {
            ADD_FAILURE() << gguf_path << ".out has fewer lines than .inp has texts ("
                          << texts.size() << ")";
            break;
        }
        VocabCase c{texts[i], {}};
        std::istringstream ls(line);
        int64_t id;
        while (ls >> id) c.ids.push_back(int32_t(id));
        cases.push_back(std::move(c));
    }
    return cases;
}

std::vector<std::string> vocab_files() {
    std::vector<std::string> out;
    const fs::path dir = shared_path("vocab");
    if (!fs::is_directory(dir)) return out;
    for (const auto& e : fs::directory_iterator(dir)) {
        const std::string p = e.path().string();
        if (e.path().extension() == ".gguf" && fs::exists(p + ".inp") && fs::exists(p + ".out")) {
            out.push_back(p);
        }
    }
    std::sort(out.begin(), out.end());
    return out;
}

// <vocab>.gguf.ref.json (where present): Hugging Face's facts about each text.
struct RefCase {
    std::string text;
    std::vector<int32_t> ids;                // no BOS, special tokens not parsed
    std::vector<int32_t> ids_parse_special;  // every added token split out
    std::string decoded;                     // decode(ids), special tokens kept
    bool round_trip = false;                 // decoded == text
};

std::vector<RefCase> read_ref(const std::string& gguf_path) {
    std::vector<RefCase> out;
    const auto j = nlohmann::json::parse(read_file_bytes(gguf_path + ".ref.json"), nullptr, false);
    if (j.is_discarded() || !j.contains("texts") || !j["texts"].is_array()) {
        ADD_FAILURE() << gguf_path << ".ref.json: expected an object with a 'texts' array";
        return out;
    }
    for (const auto& t : j["texts"]) {
        RefCase c;
        c.text = t.at("text").get<std::string>();
        c.ids = t.at("ids").get<std::vector<int32_t>>();
        c.ids_parse_special = t.at("ids_parse_special").get<std::vector<int32_t>>();
        c.decoded = t.at("decoded").get<std::string>();
        c.round_trip = t.at("round_trip").get<bool>();
        out.push_back(std::move(c));
    }
    return out;
}

std::vector<std::string> ref_files() {
    std::vector<std::string> out;
    const fs::path dir = shared_path("vocab");
    if (!fs::is_directory(dir)) return out;
    for (const auto& e : fs::directory_iterator(dir)) {
        const std::string p = e.path().string();
        if (e.path().extension() == ".gguf" && fs::exists(p + ".ref.json")) out.push_back(p);
    }
    std::sort(out.begin(), out.end());
    return out;
}

// What decode(encode(text)) gives: the text itself, or its NFC form for a tokenizer that
// normalizes (Qwen's).
std::string expected_round_trip(const Tokenizer& tok, const std::string& text) {
    std::string normalized;
    if (tok.nfc() && tok::nfc_normalize(text, normalized)) return normalized;
    return text;
}

TEST(VocabFiles, FindsTheSharedVocabularies) {
    const auto files = vocab_files();
    ASSERT_GE(files.size(), 2u) << "expected ggml-vocab-*.gguf with .inp/.out in "
                                << shared_path("vocab");
}

TEST(VocabFiles, TokenizeMatchesLlamaCppVectors) {
    for (const std::string& path : vocab_files()) {
        SCOPED_TRACE(path);
        auto tok = load_tokenizer(path);
        ASSERT_TRUE(tok);
        const auto cases = read_cases(path);
        EXPECT_GT(cases.size(), 10u);
        int failures = 0;
        for (size_t i = 0; i < cases.size(); ++i) {
            const auto ids =
                tok->encode(cases[i].text, /*add_special=*/false, /*parse_special=*/false);
            if (ids != cases[i].ids) {
                ++failures;
                ADD_FAILURE() << "text " << i << " '" << escaped(cases[i].text) << "'\n  got      "
                              << ids_str(ids) << "\n  expected " << ids_str(cases[i].ids);
            }
        }
        std::printf("%s: %zu of %zu texts match\n", fs::path(path).filename().c_str(),
                    cases.size() - size_t(failures), cases.size());
        EXPECT_EQ(failures, 0);
    }
}

// Both tokenizers are lossless on these texts: SentencePiece has byte fallback for every
// character outside its vocabulary and decode() removes the one space of the dummy prefix;
// byte-level BPE covers every byte. So no text is excluded, but a tokenizer that normalizes
// to NFC gives back the NFC form. (A SentencePiece vocabulary without byte tokens would not
// round-trip characters it lacks: they become <unk>.)
TEST(VocabFiles, RoundTrip) {
    for (const std::string& path : vocab_files()) {
        SCOPED_TRACE(path);
        auto tok = load_tokenizer(path);
        ASSERT_TRUE(tok);
        for (const VocabCase& c : read_cases(path)) {
            const std::string expected = expected_round_trip(*tok, c.text);
            EXPECT_EQ(tok->decode(tok->encode(c.text, false, false)), expected)
                << "'" << escaped(c.text) << "'";
            // With BOS (a control token that decodes to nothing) the text is the same.
            EXPECT_EQ(tok->decode(tok->encode(c.text, true, false)), expected)
                << "'" << escaped(c.text) << "'";
        }
    }
}

// Hugging Face's ids (with and without special tokens parsed), decoded text and whether the
// text round-trips, from <vocab>.gguf.ref.json.
TEST(VocabFiles, MatchesHuggingFaceReference) {
    const auto files = ref_files();
    if (files.empty()) GTEST_SKIP() << "no *.gguf.ref.json in " << shared_path("vocab");
    for (const std::string& path : files) {
        SCOPED_TRACE(path);
        auto tok = load_tokenizer(path);
        ASSERT_TRUE(tok);
        const auto refs = read_ref(path);
        EXPECT_FALSE(refs.empty());
        size_t passed = 0;
        for (size_t i = 0; i < refs.size(); ++i) {
            const RefCase& r = refs[i];
            const auto ids = tok->encode(r.text, false, false);
            const auto ids_special = tok->encode(r.text, false, true);
            const std::string decoded = tok->decode(r.ids);
            const bool round_trip = tok->decode(ids) == r.text;
            const bool ok = ids == r.ids && ids_special == r.ids_parse_special &&
                            decoded == r.decoded && round_trip == r.round_trip;
            if (ok) {
                ++passed;
                continue;
            }
            ADD_FAILURE() << "text " << i << " '" << escaped(r.text) << "'\n  ids      "
                          << ids_str(ids) << "\n  expected " << ids_str(r.ids)
                          << "\n  ids with special tokens parsed " << ids_str(ids_special)
                          << "\n  expected                       " << ids_str(r.ids_parse_special)
                          << "\n  decoded '" << escaped(decoded) << "', expected '"
                          << escaped(r.decoded) << "'\n  round trip " << round_trip << ", expected "
                          << r.round_trip;
        }
        std::printf("%s: %zu of %zu reference texts match\n", fs::path(path).filename().c_str(),
                    passed, refs.size());
        EXPECT_EQ(passed, refs.size());
    }
}

TEST(Stories260K, PromptIdsMatchReference) {
    auto tok = load_tokenizer(stories_model());
    ASSERT_TRUE(tok);
    EXPECT_EQ(tok->model_name(), "llama");
    EXPECT_EQ(tok->n_vocab(), 512);
    EXPECT_EQ(tok->bos(), 1);
    EXPECT_EQ(tok->eos(), 2);
    EXPECT_TRUE(tok->add_bos());
    EXPECT_FALSE(tok->add_eos());
    const auto ref =
        nlohmann::json::parse(read_file_bytes(shared_path("models/stories260K.reference.json")));
    ASSERT_GE(ref["cases"].size(), 4u);
    for (const auto& c : ref["cases"]) {
        const std::string prompt = c["prompt"];
        const auto expected = c["prompt_ids"].get<std::vector<int32_t>>();
        EXPECT_EQ(tok->encode(prompt, true, false), expected) << prompt;
        EXPECT_EQ(tok->decode(expected), prompt);
    }
}

TEST(Stories260K, EndOfGeneration) {
    auto tok = load_tokenizer(stories_model());
    ASSERT_TRUE(tok);
    EXPECT_TRUE(tok->is_end_of_generation(2));  // </s>
    EXPECT_FALSE(tok->is_end_of_generation(1));
    EXPECT_FALSE(tok->is_end_of_generation(403));
}

TEST(Gpt2Vocab, SpecialTokensAndDefaults) {
    auto tok = load_tokenizer(shared_path("vocab/ggml-vocab-gpt-2.gguf"));
    ASSERT_TRUE(tok);
    EXPECT_EQ(tok->model_name(), "gpt2");
    EXPECT_FALSE(tok->add_bos());  // byte-level BPE: no BOS unless add_bos_token says so
    EXPECT_EQ(tok->encode("Hello", true, false), tok->encode("Hello", false, false));
    const int32_t eot = tok->find_token("<|endoftext|>");
    ASSERT_EQ(eot, 50256);
    EXPECT_TRUE(tok->is_end_of_generation(eot));
    EXPECT_EQ(tok->token_to_piece(eot), "");

    const std::string text = "a<|endoftext|>b";
    const auto plain = tok->encode(text, false, false);
    EXPECT_EQ(std::count(plain.begin(), plain.end(), eot), 0);
    EXPECT_EQ(tok->decode(plain), text);
    const auto special = tok->encode(text, false, true);
    ASSERT_EQ(special.size(), 3u) << ids_str(special);
    EXPECT_EQ(special[1], eot);
    EXPECT_EQ(tok->token_to_piece(special[0]), "a");
    EXPECT_EQ(tok->token_to_piece(special[2]), "b");
}

// Llama 3's GGUF has no tokenizer.ggml.add_bos_token: llama-bpe adds BOS by default.
TEST(Llama3Vocab, BosByDefaultAndEndOfTurn) {
    const std::string path = shared_path("vocab/ggml-vocab-llama3.gguf");
    if (!fs::exists(path)) GTEST_SKIP() << path << " is not there";
    auto tok = load_tokenizer(path);
    ASSERT_TRUE(tok);
    EXPECT_FALSE(tok->nfc());
    EXPECT_TRUE(tok->add_bos());
    EXPECT_EQ(tok->bos(), 128000);
    const auto ids = tok->encode("Hello", true, false);
    ASSERT_EQ(ids.size(), 2u) << ids_str(ids);
    EXPECT_EQ(ids[0], 128000);
    EXPECT_EQ(tok->decode(ids), "Hello");
    EXPECT_TRUE(tok->is_end_of_generation(128009));  // <|eot_id|>
    EXPECT_EQ(tok->find_token("<|eot_id|>"), 128009);
    EXPECT_EQ(tok->encode("<|eot_id|>", false, true), (std::vector<int32_t>{128009}));
}

// Qwen3: add_bos_token false; user-defined tokens (<think>) are split out of plain text,
// control tokens (<|im_start|>) only when special tokens are parsed.
TEST(Qwen3Vocab, NoBosAndUserDefinedTokens) {
    const std::string path = shared_path("vocab/ggml-vocab-qwen3.gguf");
    if (!fs::exists(path)) GTEST_SKIP() << path << " is not there";
    auto tok = load_tokenizer(path);
    ASSERT_TRUE(tok);
    EXPECT_TRUE(tok->nfc());
    EXPECT_FALSE(tok->add_bos());
    EXPECT_EQ(tok->encode("Hello", true, false), tok->encode("Hello", false, false));
    const int32_t think = tok->find_token("<think>"), im_start = tok->find_token("<|im_start|>");
    ASSERT_GE(think, 0);
    ASSERT_GE(im_start, 0);
    EXPECT_EQ(tok->token_type(think), TokenType::UserDefined);
    EXPECT_EQ(tok->token_type(im_start), TokenType::Control);
    const auto plain = tok->encode("<|im_start|><think>", false, false);
    EXPECT_EQ(std::count(plain.begin(), plain.end(), think), 1) << ids_str(plain);
    EXPECT_EQ(std::count(plain.begin(), plain.end(), im_start), 0) << ids_str(plain);
    EXPECT_EQ(tok->encode("<|im_start|><think>", false, true),
              (std::vector<int32_t>{im_start, think}));
    EXPECT_TRUE(tok->is_end_of_generation(tok->find_token("<|im_end|>")));
    EXPECT_TRUE(tok->is_end_of_generation(tok->find_token("<|endoftext|>")));
}

TEST(SpmVocab, SpecialTokensParsedOnlyWhenAsked) {
    auto tok = load_tokenizer(shared_path("vocab/ggml-vocab-llama-spm.gguf"));
    ASSERT_TRUE(tok);
    const auto plain = tok->encode("Hi</s>", false, false);
    EXPECT_EQ(std::count(plain.begin(), plain.end(), 2), 0) << ids_str(plain);
    EXPECT_EQ(tok->decode(plain), "Hi</s>");
    const auto special = tok->encode("<s>Hi</s>", false, true);
    ASSERT_GE(special.size(), 3u);
    EXPECT_EQ(special.front(), 1);
    EXPECT_EQ(special.back(), 2);
    // Text after a special token gets the dummy prefix again, as in SentencePiece.
    EXPECT_EQ(std::vector<int32_t>(special.begin() + 1, special.end() - 1),
              tok->encode("Hi", false, false));
}

}  // namespace
}  // namespace ember::test
