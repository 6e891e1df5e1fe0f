// Self-fuzzing: random mutations of real templates must render or fail with an error, never
// crash or hang.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "official_templates.h"
#include "templates/chat_template.h"
#include "test_util.h"

namespace {

std::vector<std::string> seed_templates() {
    std::vector<std::string> out = {ember::chatml_template(), kLlama2Official,     kGemma3Official,
                                    kLlama31Official,         kDeepSeekR1Official, kQwen25Official};
    std::ifstream f(ember::test::shared_path("catalog/gpt4all-models3-subset.json"));
    if (f.good()) {
        nlohmann::json catalog = nlohmann::json::parse(f);
        for (const auto& m : catalog["models"])
            if (m.contains("chatTemplate") && m["chatTemplate"].is_string() &&
                !m["chatTemplate"].get<std::string>().empty())
                out.push_back(m["chatTemplate"].get<std::string>());
    }
    return out;
}

// Fragments that make mutations reach deeper into the parser than random bytes do.
const char* const kFragments[] = {
    "{%",
    "%}",
    "{{",
    "}}",
    "{#",
    "#}",
    "{%-",
    "-%}",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    "|",
    "'",
    "\"",
    ",",
    ".",
    ":",
    "~",
    "+",
    "-",
    "*",
    "**",
    "//",
    "not ",
    " and ",
    " or ",
    " is ",
    " in ",
    " if ",
    " else ",
    "{% endfor %}",
    "{% endif %}",
    "{% for x in messages %}",
    "{% if true %}",
    "{% set ns = namespace(a=1) %}",
    "{% macro m(a) %}{{ m(a) }}{% endmacro %}{{ m(1) }}",
    "|tojson",
    "|trim",
    "|length",
    "[::-1]",
    "loop.",
    "messages",
    "none",
    "raise_exception(",
    "{% raw %}",
    "{% endraw %}",
    "\\",
    "\n",
    " ",
    "1e999",
    "9999999999999999999",
    "|join(',')",
    "range(",
    "{% break %}",
    "{{ caller() }}",
    "|regex_replace('(a*)*b', '')",
};

std::string mutate(const std::string& src, const std::vector<std::string>& pool,
                   std::mt19937& rng) {
    std::string s = src;
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
        size_t pos = s.empty() ? 0 : rng() % (s.size() + 1);
        switch (rng() % 6) {
            case 0:  // flip a byte
                if (!s.empty()) s[rng() % s.size()] = static_cast<char>(rng() % 256);
                break;
            case 1:  // truncate
                s.resize(pos);
                break;
            case 2: {  // delete a span
                size_t len = rng() % 16;
                if (pos < s.size()) s.erase(pos, len);
                break;
            }
            case 3: {  // splice in a span of another template
                const std::string& o = pool[rng() % pool.size()];
                size_t a = rng() % (o.size() + 1);
                size_t len = rng() % 200;
                s.insert(pos, o.substr(a, len));
                break;
            }
            case 4: {  // duplicate a span in place
                if (pos < s.size()) s.insert(pos, s.substr(pos, rng() % 64));
                break;
            }
            default:  // insert a syntax fragment
                s.insert(pos, kFragments[rng() % (sizeof(kFragments) / sizeof(kFragments[0]))]);
        }
    }
    return s;
}

TEST(ChatTemplateFuzz, MutationsRenderOrFail) {
    std::vector<std::string> pool = seed_templates();
    ASSERT_GE(pool.size(), 6u);
    ember::ChatTemplateInputs in;
    in.messages = {{"system", "sys"}, {"user", "hi"}, {"assistant", "yo"}, {"user", "bye"}};
    in.bos_token = "<s>";
    in.eos_token = "</s>";
    std::mt19937 rng(12345);
    const int kIterations = 20000;
    int ok = 0, failed = 0;
    double worst_ms = 0;
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kIterations; ++i) {
        std::string t = mutate(pool[rng() % pool.size()], pool, rng);
        auto t0 = std::chrono::steady_clock::now();
        auto r = ember::render_chat_template(t, in);
        double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                        .count();
        worst_ms = std::max(worst_ms, ms);
        if (r.ok()) {
            ++ok;
            EXPECT_LE(r->size(), 16u << 20);
        } else {
            ++failed;
            const std::string& code = r.error().code;
            EXPECT_TRUE(code == "template.syntax" || code == "template.render" ||
                        code == "template.raise")
                << code;
            EXPECT_NE(r.error().message.find("line "), std::string::npos) << r.error().message;
        }
    }
    double total_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << "[fuzz] " << kIterations << " mutations: " << ok << " rendered, " << failed
              << " errors; slowest " << worst_ms << " ms, total " << total_s << " s\n";
    EXPECT_GT(ok, 0);
    EXPECT_GT(failed, 0);
    EXPECT_LT(total_s, 120.0);
}

}  // namespace
