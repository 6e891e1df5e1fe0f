// The ember-cli contract: outputs, JSON fields and exit codes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ember/ember.h"
#include "run_cli.h"
#include "test_util.h"

namespace {

using ember::test::run_cli;
using nlohmann::json;

const std::string kModel = ember::test::stories_model();

json parse_json(const ember::test::CliResult& r) {
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out, nullptr, false);
}

TEST(Cli, GenerateStreamsOnlyTheContinuation) {
    auto r = run_cli(ember::test::cli_path(), {"generate", "-m", kModel, "-p", "Once upon a time",
                                               "-n", "32", "--temp", "0", "--backend", "cpu"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    // Expected text: the reference's greedy ids, detokenized by the engine.
    std::ifstream f(ember::test::shared_path("models/stories260K.reference.json"));
    json ref = json::parse(f);
    std::vector<int32_t> greedy = ref["cases"][0]["greedy_32"];
    ember::LoadParams p;
    p.backend = ember::BackendKind::Cpu;
    auto m = ember::Model::load(kModel, p);
    ASSERT_TRUE(m.ok());
    const std::string expected = (*m)->detokenize(greedy);
    EXPECT_EQ(r.out, expected + "\n");
    EXPECT_EQ(r.out.find("Once upon a time"), std::string::npos) << "the prompt must not be echoed";
    EXPECT_NE(r.err.find("tok/s"), std::string::npos) << "summary goes to stderr";
}

TEST(Cli, GenerateJson) {
    auto r = run_cli(ember::test::cli_path(),
                     {"generate", "-m", kModel, "-p", "Lily and Ben went to the park.", "-n", "32",
                      "--temp", "0", "--json", "--backend", "cpu"});
    json j = parse_json(r);
    ASSERT_TRUE(j.is_object()) << r.out;
    for (const char* key :
         {"text", "tokens", "n_generated", "pp_tok_s", "tg_tok_s", "ttft_ms", "backend", "device"})
        EXPECT_TRUE(j.contains(key)) << key;
    std::ifstream f(ember::test::shared_path("models/stories260K.reference.json"));
    json ref = json::parse(f);
    EXPECT_EQ(j["tokens"], ref["cases"][1]["greedy_32"]);
    EXPECT_EQ(j["n_generated"], 32);
    EXPECT_EQ(j["backend"], "cpu");
}

TEST(Cli, SampledGenerationIsReproducibleWithSeed) {
    std::vector<std::string> args = {"generate",  "-m",      kModel, "-p",
                                     "One day",   "-n",      "24",   "--temp",
                                     "0.9",       "--top-k", "40",   "--top-p",
                                     "0.9",       "--min-p", "0.05", "--repeat-penalty",
                                     "1.1",       "--seed",  "42",   "--json",
                                     "--backend", "cpu"};
    json a = parse_json(run_cli(ember::test::cli_path(), args));
    json b = parse_json(run_cli(ember::test::cli_path(), args));
    EXPECT_EQ(a["tokens"], b["tokens"]);
}

TEST(Cli, LogitsMatchReference) {
    std::ifstream f(ember::test::shared_path("models/stories260K.reference.json"));
    json ref = json::parse(f);
    const auto& c = ref["cases"][2];
    std::string ids;
    for (int id : c["prompt_ids"]) ids += (ids.empty() ? "" : ",") + std::to_string(id);
    json j = parse_json(run_cli(ember::test::cli_path(), {"logits", "-m", kModel, "--ids", ids,
                                                          "--json", "--backend", "cpu"}));
    ASSERT_EQ(j["logits"].size(), c["logits_after_prompt"].size());
    for (size_t i = 0; i < j["logits"].size(); i++)
        EXPECT_NEAR(j["logits"][i].get<double>(), c["logits_after_prompt"][i].get<double>(), 1e-3);
    json j2 =
        parse_json(run_cli(ember::test::cli_path(), {"logits", "-m", kModel, "-p", c["prompt"],
                                                     "--json", "--backend", "cpu"}));
    EXPECT_EQ(j2["ids"], c["prompt_ids"]);
}

TEST(Cli, Tokenize) {
    json j = parse_json(run_cli(ember::test::cli_path(),
                                {"tokenize", "-m", kModel, "-p", "Once upon a time", "--json"}));
    EXPECT_EQ(j["ids"], json({1, 403, 407, 261, 378}));
    json k =
        parse_json(run_cli(ember::test::cli_path(), {"tokenize", "-m", kModel, "-p",
                                                     "Once upon a time", "--no-bos", "--json"}));
    EXPECT_EQ(k["ids"], json({403, 407, 261, 378}));
}

TEST(Cli, Info) {
    json j = parse_json(run_cli(ember::test::cli_path(), {"info", "-m", kModel, "--json"}));
    EXPECT_EQ(j["architecture"], "llama");
    EXPECT_GT(j["n_params"].get<uint64_t>(), 200000u);
    EXPECT_GT(j["tensor_count"].get<int>(), 40);
    EXPECT_TRUE(j["bytes_per_type"].contains("F32"));
    EXPECT_TRUE(j["supported"].get<bool>());
}

TEST(Cli, BenchJsonAfterAContext) {
    json j = parse_json(run_cli(ember::test::cli_path(),
                                {"bench", "-m", kModel, "-p", "16", "-n", "8", "-r", "2", "-d",
                                 "40", "--json", "--backend", "cpu", "--threads", "1"}));
    ASSERT_TRUE(j.is_object());
    for (const char* key : {"pp_tok_s", "pp_sd", "tg_tok_s", "tg_sd", "tg_ms_per_token",
                            "weight_bytes", "tg_gb_s", "backend", "device", "features"})
        EXPECT_TRUE(j.contains(key)) << key;
    EXPECT_EQ(j["n_prompt"], 16);
    EXPECT_EQ(j["n_gen"], 8);
    EXPECT_EQ(j["n_depth"], 40);
    EXPECT_EQ(j["tg_next_token"], "random");
    EXPECT_GT(j["sample_us"].get<double>(), 0.0);
    EXPECT_EQ(j["backend"], "cpu");
    EXPECT_GT(j["pp_tok_s"].get<double>(), 0.0);
    EXPECT_GT(j["tg_tok_s"].get<double>(), 0.0);
}

TEST(Cli, BenchHostArgmaxIsRecorded) {
    json j = parse_json(run_cli(ember::test::cli_path(),
                                {"bench", "-m", kModel, "-p", "0", "-n", "4", "-r", "1",
                                 "--host-argmax", "--json", "--backend", "cpu", "--threads", "1"}));
    ASSERT_TRUE(j.is_object());
    EXPECT_EQ(j["tg_next_token"], "host_argmax");
    EXPECT_GT(j["tg_tok_s"].get<double>(), 0.0);
}

// bench's context is -d plus the larger of -p and -n: a depth the model has no room for is
// refused in those terms, and one that exactly fills the model's context runs.
TEST(Cli, BenchDepthBeyondTheContextSaysWhatToLower) {
    auto info = ember::inspect(kModel);
    ASSERT_TRUE(info.ok()) << info.error().message;
    const int most = int(info->n_ctx_max);
    ASSERT_GT(most, 16);
    const std::string over = std::to_string(most - 15);
    auto r = run_cli(ember::test::cli_path(), {"bench", "-m", kModel, "-d", over, "-p", "16", "-n",
                                               "8", "-r", "1", "--backend", "cpu"});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("ember-cli: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("-d " + over), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("context of " + std::to_string(most + 1) + " tokens"), std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("at most " + std::to_string(most)), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("lower -d, -p or -n"), std::string::npos) << r.err;

    json j =
        parse_json(run_cli(ember::test::cli_path(),
                           {"bench", "-m", kModel, "-d", std::to_string(most - 16), "-p", "16",
                            "-n", "0", "-r", "1", "--json", "--backend", "cpu", "--threads", "1"}));
    ASSERT_TRUE(j.is_object());
    EXPECT_EQ(j["n_depth"], most - 16);
    EXPECT_GT(j["pp_tok_s"].get<double>(), 0.0);
}

TEST(Cli, ErrorsExitNonZeroWithAMessage) {
    const auto cli = ember::test::cli_path();
    auto dir = ember::test::temp_dir();
    // A truncated copy of the real model.
    const auto truncated = (dir / "truncated.gguf").string();
    {
        std::ifstream in(kModel, std::ios::binary);
        std::string bytes((std::istreambuf_iterator<char>(in)), {});
        std::ofstream(truncated, std::ios::binary)
            .write(bytes.data(), std::streamsize(bytes.size() / 2));
    }
    const std::vector<std::vector<std::string>> cases = {
        {"generate", "-m", "/nonexistent/model.gguf", "-p", "hi"},
        {"generate", "-m", truncated, "-p", "hi"},
        {"generate", "-m", kModel},                        // no prompt
        {"generate", "-m", kModel, "-p", "x", "--bogus"},  // unknown option
        {"generate", "-m", kModel, "-p", "x", "-n", "many"},
        {"generate", "-m", kModel, "-p", "x", "--backend", "quantum"},
        {"logits", "-m", kModel, "--ids", "1,99999", "--json"},
        {"info", "-m", truncated},
        {"tokenize", "-m", kModel, "-f", "/nonexistent.txt"},
        {"frobnicate"},
        {"bench", "-m", kModel, "-d", "-1"},
        {"mkmodel", "-o", (dir / "x.gguf").string(), "--preset", "nope", "--type", "q4_0"},
        {"mkmodel", "-o", (dir / "x.gguf").string(), "--preset", "tinyllama-1.1b", "--type",
         "q3_k"},
    };
    for (const auto& args : cases) {
        auto r = run_cli(cli, args);
        std::string joined;
        for (const auto& a : args) joined += a + " ";
        EXPECT_GE(r.exit_code, 1) << joined;
        EXPECT_LT(r.exit_code, 128) << joined << " died: " << r.err;
        EXPECT_EQ(r.signal, 0) << joined;
        EXPECT_NE(r.err.find("ember-cli: "), std::string::npos) << joined << " stderr: " << r.err;
    }
    std::filesystem::remove_all(dir);
}

TEST(Cli, MkmodelWritesALoadableModelOfEveryType) {
    const auto cli = ember::test::cli_path();
    auto dir = ember::test::temp_dir();
    for (const char* type :
         {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q4_k", "q5_k", "q6_k"}) {
        const auto path = (dir / (std::string(type) + ".gguf")).string();
        auto r = run_cli(cli, {"mkmodel", "-o", path, "--embd", "256", "--layers", "2", "--heads",
                               "4", "--kv-heads", "2", "--ffn", "512", "--vocab", "300", "--type",
                               type, "--seed", "3"});
        ASSERT_EQ(r.exit_code, 0) << type << ": " << r.err;
        json info = parse_json(run_cli(cli, {"info", "-m", path, "--json"}));
        EXPECT_TRUE(info["supported"].get<bool>()) << type;
        json gen = parse_json(run_cli(cli, {"generate", "-m", path, "-p", "hello", "-n", "4",
                                            "--temp", "0", "--json", "--backend", "cpu"}));
        ASSERT_TRUE(gen["tokens"].is_array()) << type;
        for (const auto& t : gen["tokens"]) EXPECT_LT(t.get<int>(), 300) << type;
    }
    std::filesystem::remove_all(dir);
}

// The Q4_K_M mix as llama.cpp makes it: Q6_K for the output and, in 8 layers, for attn_v and
// ffn_down of layers 0, 3, 6 and 7; Q4_K for the rest.
TEST(Cli, MkmodelWritesTheQ4KMMix) {
    const auto cli = ember::test::cli_path();
    auto dir = ember::test::temp_dir();
    const auto path = (dir / "q4_k_m.gguf").string();
    auto r =
        run_cli(cli, {"mkmodel", "-o", path, "--embd", "256", "--layers", "8", "--heads", "4",
                      "--kv-heads", "2", "--ffn", "512", "--vocab", "300", "--type", "q4_k_m"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    json info = parse_json(run_cli(cli, {"info", "-m", path, "--json"}));
    EXPECT_TRUE(info["supported"].get<bool>());
    // Q6_K: 210 bytes a 256-element superblock. Output 300 rows of 256; attn_v 128 rows of 256
    // and ffn_down 256 rows of 512 in 4 layers.
    const int64_t q6 = 300 * 210 + 4 * (128 * 210 + 256 * 2 * 210);
    EXPECT_EQ(info["bytes_per_type"]["Q6_K"].get<int64_t>(), q6);
    EXPECT_EQ(info["metadata"]["general.file_type"].get<int64_t>(), 15);
    json gen = parse_json(run_cli(cli, {"generate", "-m", path, "-p", "hello", "-n", "4", "--temp",
                                        "0", "--json", "--backend", "cpu"}));
    EXPECT_TRUE(gen["tokens"].is_array());
    std::filesystem::remove_all(dir);
}

}  // namespace
