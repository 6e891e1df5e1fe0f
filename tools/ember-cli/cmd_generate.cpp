// generate, logits and tokenize.
#include <cstdio>
#include <sstream>

#include "args.h"
#include "common.h"
#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"

namespace ember::cli {
namespace {

std::set<std::string> with_load(std::set<std::string> s) {
    s.insert(kLoadOptions.begin(), kLoadOptions.end());
    return s;
}
const std::map<std::string, std::string> kAliases = {
    {"-m", "--model"}, {"-p", "--prompt"}, {"-n", "--n-predict"}, {"-t", "--threads"},
    {"-f", "--file"},  {"-s", "--seed"},   {"-c", "--ctx"},       {"-v", "--verbose"}};

const char* stop_name(StopReason r) {
    switch (r) {
        case StopReason::EndOfGeneration:
            return "eog";
        case StopReason::MaxTokens:
            return "max_tokens";
        case StopReason::Cancelled:
            return "cancelled";
        case StopReason::ContextFull:
            return "context_full";
        case StopReason::Callback:
            return "callback";
    }
    return "unknown";
}

Result<SamplingParams> sampling_params(const Args& a) {
    SamplingParams s;
    EMBER_ASSIGN_OR_RETURN(double temp, a.get_double("--temp", s.temperature, 0, 100));
    EMBER_ASSIGN_OR_RETURN(long long top_k, a.get_int("--top-k", s.top_k, 0, 1 << 30));
    EMBER_ASSIGN_OR_RETURN(double top_p, a.get_double("--top-p", s.top_p, 0, 1));
    EMBER_ASSIGN_OR_RETURN(double min_p, a.get_double("--min-p", s.min_p, 0, 1));
    EMBER_ASSIGN_OR_RETURN(double rp,
                           a.get_double("--repeat-penalty", s.repeat_penalty, 0.01, 100));
    EMBER_ASSIGN_OR_RETURN(long long last_n,
                           a.get_int("--repeat-last-n", s.repeat_last_n, 0, 1 << 20));
    EMBER_ASSIGN_OR_RETURN(long long seed,
                           a.get_int("--seed", (long long)(s.seed & 0x7fffffff), 0, (1LL << 62)));
    s.temperature = float(temp);
    s.top_k = int(top_k);
    s.top_p = float(top_p);
    s.min_p = float(min_p);
    s.repeat_penalty = float(rp);
    s.repeat_last_n = int(last_n);
    s.seed = uint64_t(seed);
    return s;
}

}  // namespace

int cmd_generate(int argc, char** argv) {
    Args a({"--json", "--chat", "--no-bos", "--verbose"},
           with_load({"--prompt", "--n-predict", "--temp", "--top-k", "--top-p", "--min-p",
                      "--repeat-penalty", "--repeat-last-n", "--seed", "--system"}),
           kAliases);
    if (auto st = a.parse(argc, argv, 2); !st) return fail(st.error());
    if (a.has("--verbose")) set_log_level(LogLevel::Info);  // the load's phases, timed
    auto prompt_text = a.require("--prompt");
    if (!prompt_text) return fail(prompt_text.error());
    auto n = a.get_int("--n-predict", 128, 0, 1 << 24);
    if (!n) return fail(n.error());
    auto sp = sampling_params(a);
    if (!sp) return fail(sp.error());
    const bool json = a.has("--json");

    auto model = load_model(a);
    if (!model) return fail(model.error());
    Model& m = **model;

    std::string text = *prompt_text;
    bool parse_special = false;
    if (a.has("--chat")) {  // wrap the prompt in the model's chat template
        std::vector<ChatMessage> msgs;
        if (auto sys = a.get("--system")) msgs.push_back({"system", *sys});
        msgs.push_back({"user", text});
        bool fallback = false;
        auto rendered = m.apply_chat_template(msgs, true, &fallback);
        if (!rendered) return fail(rendered.error());
        if (fallback)
            std::fprintf(stderr, "ember-cli: the model has no chat template; using ChatML\n");
        text = *rendered;
        parse_special = true;
    }
    std::vector<int32_t> prompt = m.tokenize(text, !a.has("--no-bos"), parse_special);
    if (prompt.empty()) return fail("the prompt gives no tokens");

    auto session = Session::create(m);
    if (!session) return fail(session.error());
    GenerateParams gp;
    gp.max_tokens = int(*n);
    gp.sampling = *sp;
    std::string out;
    bool write_failed = false;
    auto stats = generate(**session, prompt, gp, [&](int32_t, std::string_view piece) {
        out.append(piece);
        if (!json && !piece.empty()) {
            if (std::fwrite(piece.data(), 1, piece.size(), stdout) != piece.size())
                write_failed = true;
            std::fflush(stdout);
        }
        return !write_failed;
    });
    if (!stats) return fail(stats.error());
    if (write_failed) return fail("cannot write to standard output");

    const GenerateStats& s = *stats;
    if (json) {
        nlohmann::json j;
        j["text"] = out;
        j["tokens"] = s.tokens;
        j["prompt_ids"] = prompt;
        j["n_prompt"] = s.n_prompt;
        j["n_generated"] = s.n_generated;
        j["pp_tok_s"] = s.pp_tok_s;
        j["tg_tok_s"] = s.tg_tok_s;
        j["ttft_ms"] = s.ttft_ms;
        j["stop"] = stop_name(s.stop);
        add_backend_json(j, m);
        std::printf("%s\n", safe_dump(j).c_str());
    } else {
        std::printf("\n");
        std::fprintf(stderr,
                     "ember-cli: %d prompt tokens at %.1f tok/s, %d generated at %.1f tok/s, "
                     "first token after %.1f ms, on %s (%s)",
                     s.n_prompt, s.pp_tok_s, s.n_generated, s.tg_tok_s, s.ttft_ms,
                     backend_name(m.backend().kind), m.backend().device.c_str());
        if (m.backend().kind == BackendKind::Vulkan) {
            const MemoryStats mem = m.memory();
            std::fprintf(stderr, ", GPU memory %.1f / %.1f MiB (%s)", mem.used / 1048576.0,
                         mem.budget / 1048576.0, mem.source.c_str());
        }
        std::fprintf(stderr, "\n");
        if (!m.backend().split.empty())
            std::fprintf(stderr, "ember-cli: %s\n", m.backend().split.c_str());
        if (!m.backend().fallback_reason.empty())
            std::fprintf(stderr, "ember-cli: fell back to the CPU: %s\n",
                         m.backend().fallback_reason.c_str());
    }
    return std::fflush(stdout) == 0 ? 0 : fail("cannot write to standard output");
}

int cmd_logits(int argc, char** argv) {
    Args a({"--json", "--no-bos"}, with_load({"--prompt", "--ids"}), kAliases);
    if (auto st = a.parse(argc, argv, 2); !st) return fail(st.error());
    auto model = load_model(a);
    if (!model) return fail(model.error());
    Model& m = **model;
    std::vector<int32_t> ids;
    if (auto list = a.get("--ids")) {
        std::stringstream ss(*list);
        std::string item;
        while (std::getline(ss, item, ',')) {
            char* end = nullptr;
            long v = std::strtol(item.c_str(), &end, 10);
            if (item.empty() || *end != '\0' || v < 0 || v >= m.n_vocab())
                return fail("--ids: '" + item + "' is not a token id in [0, " +
                            std::to_string(m.n_vocab()) + ")");
            ids.push_back(int32_t(v));
        }
    } else if (auto p = a.get("--prompt")) {
        ids = m.tokenize(*p, !a.has("--no-bos"), false);
    } else {
        return fail("logits needs -p TEXT or --ids LIST");
    }
    if (ids.empty()) return fail("no tokens to evaluate");
    auto session = Session::create(m);
    if (!session) return fail(session.error());
    auto logits = (*session)->eval(ids);
    if (!logits) return fail(logits.error());
    nlohmann::json j;
    j["ids"] = ids;
    j["logits"] = std::vector<float>(logits->begin(), logits->end());
    add_backend_json(j, m);
    std::printf("%s\n", safe_dump(j).c_str());
    return 0;
}

int cmd_tokenize(int argc, char** argv) {
    Args a({"--json", "--no-bos", "--parse-special"}, {"--model", "--prompt", "--file"}, kAliases);
    if (auto st = a.parse(argc, argv, 2); !st) return fail(st.error());
    auto path = a.require("--model");
    if (!path) return fail(path.error());
    std::string text;
    if (auto p = a.get("--prompt"))
        text = *p;
    else if (auto f = a.get("--file")) {
        auto content = read_file(*f);
        if (!content) return fail(content.error());
        text = *content;
    } else
        return fail("tokenize needs -p TEXT or -f FILE");
    // Only the vocabulary is needed, so vocabulary-only files work too.
    auto file = gguf::File::open(*path);
    if (!file) return fail(file.error());
    auto tok = Tokenizer::from_gguf(**file);
    if (!tok) return fail(tok.error());
    const auto ids = (*tok)->encode(text, !a.has("--no-bos"), a.has("--parse-special"));
    if (a.has("--json")) {
        nlohmann::json j;
        j["ids"] = ids;
        std::printf("%s\n", safe_dump(j).c_str());
    } else {
        for (size_t i = 0; i < ids.size(); i++) std::printf("%s%d", i ? " " : "", ids[i]);
        std::printf("\n");
    }
    return 0;
}

}  // namespace ember::cli
