// ember-cli template and Model::apply_chat_template: messages with tool calls and content parts,
// tools and extra variables.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "ember/ember.h"
#include "run_cli.h"
#include "test_util.h"

namespace {

using ember::test::run_cli;

std::string write(const std::string& name, const std::string& text) {
    const auto dir = ember::test::temp_dir() / "template_cli";
    std::filesystem::create_directories(dir);
    const auto p = dir / name;
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
}

TEST(CliTemplate, PassesToolCallsToolsAndVariables) {
    const std::string tmpl =
        write("t.jinja",
              "{% for m in messages %}{{ m.role }}:"
              "{% for c in m.tool_calls or [] %}[{{ c.function.name }} {{ c.function.arguments | "
              "tojson }}]"
              "{% endfor %}{% if m.content is string %}{{ m.content }}"
              "{% else %}{{ m.content[0].text }}{% endif %}|{% endfor %}"
              "{{ tools | map(attribute='function') | map(attribute='name') | join(',') }}|"
              "{{ enable_thinking }} {{ mode }} {{ n + 1 }} {{ add_generation_prompt }}");
    const std::string msgs = write(
        "m.json", R"({"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]},)"
                  R"( {"role": "assistant", "content": "", "tool_calls": [{"type": "function",)"
                  R"( "function": {"name": "f", "arguments": {"z": 1, "a": 2}}}]}]})");
    const std::string tools =
        write("tools.json", R"([{"type": "function", "function": {"name": "f"}},)"
                            R"( {"type": "function", "function": {"name": "g"}}])");
    auto r = run_cli(
        ember::test::cli_path(),
        {"template", "--template-file", tmpl, "--messages", msgs, "--tools", tools, "--var",
         "enable_thinking=false", "--var", "mode=fast", "--var=n=41", "--add-generation-prompt"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "user:hi|assistant:[f {\"z\": 1, \"a\": 2}]|f,g|False fast 42 True");
}

TEST(CliTemplate, BadMessagesToolsOrVariablesAreRefusedWithAMessage) {
    const std::string tmpl = write("u.jinja", "{{ messages | length }}");
    const std::string good = write("good.json", R"([{"role": "user", "content": "x"}])");
    const std::string bad = write("bad.json", R"([{"role": "user", "content": 3}])");
    const std::string not_json = write("nj.json", "[{");
    auto r =
        run_cli(ember::test::cli_path(), {"template", "--template-file", tmpl, "--messages", bad});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("message 1"), std::string::npos) << r.err;
    r = run_cli(ember::test::cli_path(),
                {"template", "--template-file", tmpl, "--messages", good, "--tools", not_json});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("nj.json"), std::string::npos) << r.err;
    r = run_cli(ember::test::cli_path(),
                {"template", "--template-file", tmpl, "--messages", good, "--var", "novalue"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("NAME=VALUE"), std::string::npos) << r.err;
    r = run_cli(ember::test::cli_path(), {"template", "--template-file", tmpl, "--messages", good});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "1");
}

TEST(ModelChatTemplate, OptionsReachTheTemplate) {
    ember::LoadParams p;
    p.backend = ember::BackendKind::Cpu;
    auto m = ember::Model::load(ember::test::stories_model(), p);
    ASSERT_TRUE(m.ok()) << m.error().message;
    // stories260K has no template: ChatML, which prints the text parts of content lists.
    auto tool = ember::ChatMessage::from_json(
        R"({"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "42"}]})");
    ASSERT_TRUE(tool.ok()) << tool.error().message;
    const std::vector<ember::ChatMessage> msgs = {{"user", "hi"}, *tool};
    ember::ChatTemplateOptions opt;
    opt.add_generation_prompt = false;
    bool fallback = false;
    auto r = (*m)->apply_chat_template(msgs, opt, &fallback);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_TRUE(fallback);
    EXPECT_EQ(*r, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>tool\n42<|im_end|>\n");
    // The old overload is the same with a generation prompt.
    auto r2 = (*m)->apply_chat_template(msgs, true);
    ASSERT_TRUE(r2.ok());
    EXPECT_EQ(*r2, *r + "<|im_start|>assistant\n");
    opt.tools_json = "{}";
    auto bad = (*m)->apply_chat_template(msgs, opt);
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().code, "template.tools");
    opt.tools_json.clear();
    opt.vars_json["x"] = "[1,";
    bad = (*m)->apply_chat_template(msgs, opt);
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().code, "template.var");
}

}  // namespace
