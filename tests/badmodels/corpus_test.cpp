// The hostile corpus (corpus.h) through ember-cli info and generate, each file in a child under
// a 4 GiB address-space limit and a generous time limit: no signal, no hang, no failed
// allocation, and every refusal is exit status 1 with a message on stderr.
#include <algorithm>
#include <functional>

#include "child_util.h"
#include "corpus.h"

namespace ember::test {
namespace {

struct Tally {
    int files = 0, refused = 0, ran = 0;
    long max_rss_kb = 0;
    double slowest = 0;
    std::string slowest_name;
};

// Runs info and generate (with `extra` arguments) on each file that `pick` accepts.
void run_corpus(const std::function<bool(const HostileFile&)>& pick,
                const std::vector<std::string>& extra) {
    const std::string dir = (temp_dir() / "corpus").string();
    std::filesystem::create_directories(dir);
    const auto corpus = hostile_corpus();
    Tally tally;
    std::vector<std::string> problems;
    for (const HostileFile& h : corpus) {
        if (!pick(h)) continue;
        std::string path;
        try {
            path = h.make(dir);
        } catch (const std::exception& e) {
            problems.push_back(h.name + ": cannot generate: " + e.what());
            continue;
        }
        tally.files++;
        std::vector<std::vector<std::string>> runs = {{cli_path(), "info", "-m", path}};
        std::vector<std::string> gen = {cli_path(), "generate",  "-m",        path,
                                        "-p",       "Once upon", "-n",        "3",
                                        "--temp",   "0",         "--threads", "1"};
        gen.insert(gen.end(), extra.begin(), extra.end());
        gen.insert(gen.end(), h.args.begin(), h.args.end());
        runs.push_back(gen);
        for (const auto& args : runs) {
            const ChildResult r = run_child(args);
            const std::string what = h.name + " (" + args[1] + ")";
            if (std::string bad = misbehaviour(r); !bad.empty())
                problems.push_back(what + ": " + bad + "; stderr: " + r.err.substr(0, 300));
            if (args[1] == "generate") {
                (r.exit_code == 0 ? tally.ran : tally.refused)++;
                if (h.must_refuse && r.exit_code == 0)
                    problems.push_back(what + ": ran, but must be refused");
            }
            tally.max_rss_kb = std::max(tally.max_rss_kb, r.max_rss_kb);
            if (r.seconds > tally.slowest) tally.slowest = r.seconds, tally.slowest_name = what;
        }
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
    std::printf(
        "%d files: generate refused %d, ran %d; largest RSS %.1f MiB; slowest %.2f s (%s)\n",
        tally.files, tally.refused, tally.ran, tally.max_rss_kb / 1024.0, tally.slowest,
        tally.slowest_name.c_str());
    for (const auto& p : problems) ADD_FAILURE() << p;
    std::filesystem::remove_all(dir);
}

const std::vector<std::string> kCpu = {"--backend", "cpu"};

TEST(HostileCorpus, HasAtLeast300Files) {
    const auto corpus = hostile_corpus();
    EXPECT_GE(corpus.size(), 300u);
    std::map<std::string, int> per_family;
    std::set<std::string> names;
    for (const auto& h : corpus) {
        per_family[h.family]++;
        EXPECT_TRUE(names.insert(h.name).second) << "duplicate name " << h.name;
    }
    for (const auto& [f, n] : per_family) std::printf("%-10s %d\n", f.c_str(), n);
}

std::function<bool(const HostileFile&)> families(std::set<std::string> names) {
    return [names](const HostileFile& h) { return names.count(h.family) > 0; };
}

// One test per family, so that ctest can run them side by side.
TEST(HostileCorpus, CutsOnCpu) {
    run_corpus(families({"cut"}), kCpu);
}
TEST(HostileCorpus, ByteFlipsOnCpu) {
    run_corpus(families({"flip"}), kCpu);
}
TEST(HostileCorpus, HeaderFieldsOnCpu) {
    run_corpus(families({"header"}), kCpu);
}
TEST(HostileCorpus, MetadataOnCpu) {
    run_corpus(families({"metadata"}), kCpu);
}
TEST(HostileCorpus, TokenizersOnCpu) {
    run_corpus(families({"tokenizer"}), kCpu);
}
TEST(HostileCorpus, TensorsAndAliasesOnCpu) {
    run_corpus(families({"tensor", "alias"}), kCpu);
}
TEST(HostileCorpus, PathsOnCpu) {
    run_corpus(families({"path"}), kCpu);
}

// About 20 files that get past the reader and reach the GPU's code: overflowing weights, rope
// parameters, aliases, every weight type; on lavapipe chosen by name.
TEST(HostileCorpus, SubsetOnLavapipe) {
    auto devices = list_devices();
    bool have = false;
    if (devices.ok())
        for (const auto& d : *devices) have |= d.name.find("llvmpipe") != std::string::npos;
    if (!have) GTEST_SKIP() << "no lavapipe Vulkan device";
    const std::set<std::string> names = {"huge-token_embd.weight",
                                         "huge-blk.0.attn_q.weight",
                                         "huge-blk.0.attn_k.weight",
                                         "huge-blk.0.ffn_down.weight",
                                         "huge-output.weight",
                                         "huge-output_norm.weight",
                                         "rope-freqs-zero",
                                         "rope-freqs-tiny",
                                         "rope-freqs-inf",
                                         "llama.rope.freq_base-inf",
                                         "llama.rope.freq_base-1e38",
                                         "llama.rope.freq_base-tiny",
                                         "alias-output",
                                         "alias-layers-64",
                                         "alias-kv-ctx-1048576",
                                         "overlap-partial",
                                         "model-F16",
                                         "model-BF16",
                                         "model-Q4_0",
                                         "model-Q8_0",
                                         "model-Q4_K",
                                         "model-Q6_K",
                                         "transposed-blk.0.attn_q.weight",
                                         "tokens-bad-utf8"};
    run_corpus([&](const HostileFile& h) { return names.count(h.name) > 0; },
               {"--backend", "vulkan", "--device", "llvmpipe"});
}

}  // namespace
}  // namespace ember::test
