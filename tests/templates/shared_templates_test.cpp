// Every chat template in ${EMBER_SHARED_DIR}/templates/ (NAME.jinja beside NAME.json) renders
// each of its conversations byte for byte as transformers' apply_chat_template did: messages
// with tool calls and content parts, a tools list, extra variables (enable_thinking=false) and
// the special tokens the JSON lists. No file name is written here: other templates of the same
// kind are checked the same way.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "templates/chat_template.h"
#include "test_util.h"

namespace {

namespace fs = std::filesystem;
// ordered_json keeps the key order of the file: templates print dicts (tools) in that order.
using Json = nlohmann::ordered_json;

std::string read_text(const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    std::ostringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

std::vector<fs::path> template_files() {
    std::vector<fs::path> out;
    const fs::path dir = ember::test::shared_path("templates");
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec))
        if (e.path().extension() == ".jinja") out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
}

// The inputs of one case, as transformers got them.
ember::Result<ember::ChatTemplateInputs> case_inputs(const Json& c, const Json& special) {
    ember::ChatTemplateInputs in;
    for (const Json& m : c.at("messages")) {
        EMBER_ASSIGN_OR_RETURN(ember::ChatMessage msg, ember::ChatMessage::from_json(m.dump()));
        in.messages.push_back(std::move(msg));
    }
    in.add_generation_prompt = c.value("add_generation_prompt", false);
    if (c.contains("tools") && !c["tools"].is_null()) in.tools_json = c["tools"].dump();
    for (const auto& [k, v] : special.items()) {
        if (v.is_null()) continue;  // a token the tokenizer does not have is not passed
        if (k == "bos_token" && v.is_string())
            in.bos_token = v.get<std::string>();
        else if (k == "eos_token" && v.is_string())
            in.eos_token = v.get<std::string>();
        else
            in.vars_json[k] = v.dump();
    }
    if (c.contains("kwargs"))
        for (const auto& [k, v] : c["kwargs"].items()) in.vars_json[k] = v.dump();
    return in;
}

TEST(SharedTemplates, RenderEveryConversationByteForByte) {
    const auto files = template_files();
    ASSERT_FALSE(files.empty()) << "no .jinja files under "
                                << ember::test::shared_path("templates");
    size_t n_cases = 0;
    for (const fs::path& jinja : files) {
        fs::path ref_path = jinja;
        ref_path.replace_extension(".json");
        SCOPED_TRACE(jinja.filename().string());
        ASSERT_TRUE(fs::exists(ref_path)) << ref_path << " is missing";
        const std::string tmpl = read_text(jinja);
        const Json ref = Json::parse(read_text(ref_path));
        const Json special = ref.value("special_tokens", Json::object());
        ASSERT_FALSE(ref.at("cases").empty());
        for (const Json& c : ref.at("cases")) {
            SCOPED_TRACE(c.value("name", "?"));
            ++n_cases;
            auto in = case_inputs(c, special);
            ASSERT_TRUE(in.ok()) << in.error().message;
            auto r = ember::render_chat_template(tmpl, *in);
            if (c.contains("expected_error") && !c["expected_error"].is_null()) {
                ASSERT_FALSE(r.ok()) << "rendered instead of raising:\n" << *r;
                // The reference may carry the exception's type ("TemplateError: ..."); ours
                // carries the line ("line 3: raise_exception: ..."). The text must agree.
                const std::string want = c["expected_error"].get<std::string>();
                std::string got = r.error().message;
                const size_t at = got.rfind("raise_exception: ");
                if (at != std::string::npos) got = got.substr(at + 17);
                EXPECT_TRUE(!got.empty() && (want.find(got) != std::string::npos ||
                                             got.find(want) != std::string::npos))
                    << "expected an error like '" << want << "', got: " << r.error().message;
                continue;
            }
            ASSERT_TRUE(r.ok()) << r.error().code << ": " << r.error().message;
            EXPECT_EQ(*r, c.at("expected").get<std::string>());
        }
    }
    EXPECT_GT(n_cases, 0u);
}

}  // namespace
