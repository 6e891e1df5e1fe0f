// A context longer than the model's training context (issue 48): refused with a message naming
// both numbers, unless the model states a RoPE scaling that allows it (YaRN or linear over a
// stated original context), which then runs; LongRoPE's context_length already counts it. The
// API, ember-cli generate and ember-cli serve say the same.
#include "bad_model_util.h"
#include "corpus.h"

namespace ember::test {
namespace {

// A 128-token model, with these rope.scaling.* keys.
std::string model_with(const std::string& name,
                       const std::vector<std::pair<std::string, gguf::Value>>& rope) {
    TinyModel m = TinyModel::make();
    m.ctx = 128;
    for (const auto& [key, v] : rope) m.set("llama.rope.scaling." + key, v);
    return m.write(name);
}

Result<std::unique_ptr<Model>> load(const std::string& path, int n_ctx) {
    LoadParams p;
    p.backend = BackendKind::Cpu;
    p.n_threads = 1;
    p.n_ctx = n_ctx;
    return Model::load(path, p);
}

void expect_too_long(const Result<std::unique_ptr<Model>>& m, const std::string& path,
                     const std::vector<std::string>& mentions) {
    ASSERT_FALSE(m.ok()) << "a context longer than the model runs was accepted";
    EXPECT_EQ(m.error().code, "model.context_too_long") << m.error().message;
    EXPECT_NE(m.error().message.find(path), std::string::npos) << m.error().message;
    for (const auto& s : mentions)
        EXPECT_NE(m.error().message.find(s), std::string::npos) << m.error().message;
}

// n tokens evaluated in batches of 64: the positions past the training context run too.
void expect_runs(Model& model, int n) {
    auto s = Session::create(model);
    ASSERT_TRUE(s.ok()) << s.error().message;
    EXPECT_EQ((*s)->n_ctx(), n);
    std::vector<int32_t> ids(64);
    for (int done = 0; done < n; done += 64) {
        for (size_t i = 0; i < ids.size(); i++) ids[i] = int32_t(3 + (done + i) % 290);
        auto logits = (*s)->eval(std::span(ids).first(size_t(std::min(64, n - done))));
        ASSERT_TRUE(logits.ok()) << logits.error().message;
        for (float v : *logits) ASSERT_TRUE(std::isfinite(v));
    }
    EXPECT_EQ((*s)->n_past(), n);
}

TEST(Context, LongerThanTrainingIsRefusedNamingBoth) {
    const std::string path = model_with("plain.gguf", {});
    expect_too_long(load(path, 129), path,
                    {"a context of 129 tokens", "128 tokens this model was trained on",
                     "no RoPE scaling", "at most 128"});
    // Up to the training context loads; the default is 2048 or the training context if shorter.
    auto exact = load(path, 128);
    ASSERT_TRUE(exact.ok()) << exact.error().message;
    EXPECT_EQ((*exact)->info().n_ctx_max, 128u);
    expect_runs(**exact, 128);
    auto by_default = load(path, 0);
    ASSERT_TRUE(by_default.ok()) << by_default.error().message;
    auto s = Session::create(**by_default);
    ASSERT_TRUE(s.ok());
    EXPECT_EQ((*s)->n_ctx(), 128);
    // A session asking for more than the model runs is refused the same way.
    SessionParams sp;
    sp.n_ctx = 200;
    auto longer = Session::create(**by_default, sp);
    ASSERT_FALSE(longer.ok());
    EXPECT_EQ(longer.error().code, "model.context_too_long");
    EXPECT_NE(longer.error().message.find("200"), std::string::npos) << longer.error().message;
}

// YaRN factor 4 over an original context of 128 (as converters write Qwen 2.5's): 512 tokens run.
TEST(Context, YarnAllowsItsScaledContext) {
    const std::string path = model_with(
        "yarn.gguf",
        {{"type", strv("yarn")}, {"factor", f32v(4.0)}, {"original_context_length", u32v(128)}});
    auto m = load(path, 512);
    ASSERT_TRUE(m.ok()) << m.error().message;
    EXPECT_EQ((*m)->info().n_ctx_max, 512u);
    expect_runs(**m, 512);
    expect_too_long(load(path, 513), path,
                    {"513", "512 tokens this model's RoPE scaling allows",
                     "original context of 128 tokens x rope.scaling.factor 4"});
}

// Linear scaling: over a stated original context it extends it; without one, context_length
// already counts it (as Gemma 3's files and most converters write it).
TEST(Context, LinearScalingOverAnOriginalContext) {
    const std::string stated = model_with(
        "linear.gguf",
        {{"type", strv("linear")}, {"factor", f32v(2.5)}, {"original_context_length", u32v(128)}});
    auto m = load(stated, 320);
    ASSERT_TRUE(m.ok()) << m.error().message;
    expect_runs(**m, 320);
    expect_too_long(load(stated, 321), stated, {"at most 320", "rope.scaling.factor 2.5"});

    const std::string unstated =
        model_with("linear-no-orig.gguf", {{"type", strv("linear")}, {"factor", f32v(8.0)}});
    expect_too_long(load(unstated, 129), unstated, {"at most 128"});
    ASSERT_TRUE(load(unstated, 128).ok());
}

// LongRoPE (Phi-3): context_length is the long context the factors were made for.
TEST(Context, LongRopeRunsUpToItsContextLength) {
    const std::string path = (temp_dir() / "phi3.gguf").string();
    auto r = run_cli(cli_path(), {"mkmodel", "-o",         path,       "--preset",  "phi3.5-mini",
                                  "--embd",  "64",         "--layers", "1",         "--heads",
                                  "2",       "--kv-heads", "2",        "--ffn",     "128",
                                  "--vocab", "320",        "--ctx",    "256",       "--orig-ctx",
                                  "32",      "--type",     "f32",      "--threads", "1"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto m = load(path, 256);
    ASSERT_TRUE(m.ok()) << m.error().message;
    EXPECT_EQ((*m)->info().n_ctx_max, 256u);
    expect_runs(**m, 256);
    expect_too_long(load(path, 257), path, {"257", "256 tokens this model was trained on"});
}

// ember-cli generate and serve print the engine's message and exit with status 1.
TEST(Context, CliAndServerShowTheMessage) {
    const std::string path = model_with("cli.gguf", {});
    expect_cli_error(
        {"generate", "-m", path, "-p", "Once", "-n", "4", "--backend", "cpu", "--ctx", "4096"},
        path, {"a context of 4096 tokens", "128 tokens this model was trained on"});
    auto serve = run_cli(cli_path(),
                         {"serve", "-m", path, "--port", "0", "--backend", "cpu", "--ctx", "4096"});
    if (serve.err.find("has no server") != std::string::npos)
        GTEST_SKIP() << "this ember-cli has no serve: " << serve.err;
    EXPECT_EQ(serve.exit_code, 1) << serve.err;
    EXPECT_NE(serve.err.find("a context of 4096 tokens is longer than the 128 tokens"),
              std::string::npos)
        << serve.err;
}

}  // namespace
}  // namespace ember::test
