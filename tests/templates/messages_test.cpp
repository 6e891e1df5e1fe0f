// Chat messages beyond role and string content (tool calls, tool results, content parts,
// reasoning_content), tools lists and extra variables, as Hugging Face passes them to templates.
#include <gtest/gtest.h>

#include <string>

#include "templates/chat_template.h"

namespace {

using ember::ChatMessage;
using ember::ChatTemplateInputs;

ChatMessage msg(const std::string& json) {
    auto m = ChatMessage::from_json(json);
    EXPECT_TRUE(m.ok()) << json << ": " << m.error().message;
    return m.ok() ? *m : ChatMessage{};
}

std::string render_ok(const std::string& tmpl, const ChatTemplateInputs& in) {
    auto r = ember::render_chat_template(tmpl, in);
    if (!r.ok()) return "ERROR " + r.error().code + ": " + r.error().message;
    return *r;
}

TEST(ChatMessages, FromJsonKeepsEveryKeyAndFillsRoleAndContent) {
    ChatMessage m = msg(R"({"role": "user", "content": [{"type": "text", "text": "Hi"},)"
                        R"( {"type": "image_url", "image_url": {"url": "x"}},)"
                        R"( {"type": "text", "text": "there"}]})");
    EXPECT_EQ(m.role, "user");
    EXPECT_EQ(m.content, "Hi\nthere");
    ChatTemplateInputs in;
    in.messages = {m};
    EXPECT_EQ(
        render_ok("{% for p in messages[0].content %}{{ p.type }}:{{ p.text }};{% endfor %}", in),
        "text:Hi;image_url:;text:there;");
    m = msg(R"({"role": "assistant", "content": null, "reasoning_content": "hmm"})");
    EXPECT_EQ(m.content, "");
    in.messages = {m};
    EXPECT_EQ(
        render_ok("{{ messages[0].content is none }} {{ messages[0].reasoning_content }}", in),
        "True hmm");
}

TEST(ChatMessages, ToolCallsAndToolResultsReachTheTemplate) {
    ChatTemplateInputs in;
    in.messages = {
        msg(R"({"role": "assistant", "content": "", "tool_calls": [)"
            R"({"id": "c1", "type": "function", "function": {"name": "f", "arguments": {"b": 1, "a": [2]}}},)"
            R"({"id": "c2", "type": "function", "function": {"name": "g", "arguments": "{\"x\": 1}"}}]})"),
        msg(R"({"role": "tool", "tool_call_id": "c1", "name": "f", "content": "42"})"),
        {"user", "plain"},
    };
    const std::string tmpl =
        "{% for m in messages %}{{ m.role }}:"
        "{% for c in m.tool_calls or [] %}[{{ c.id }} {{ c.function.name }} "
        "{{ c.function.arguments if c.function.arguments is string "
        "else c.function.arguments | tojson }}]{% endfor %}"
        "{% if m.tool_call_id is defined %}({{ m.tool_call_id }} {{ m.name }}){% endif %}"
        "{{ m.content }}|{% endfor %}";
    EXPECT_EQ(render_ok(tmpl, in),
              "assistant:[c1 f {\"b\": 1, \"a\": [2]}][c2 g {\"x\": 1}]|tool:(c1 f)42|user:plain|");
}

TEST(ChatMessages, ToolsAndVariables) {
    ChatTemplateInputs in;
    in.messages = {{"user", "hi"}};
    EXPECT_EQ(render_ok("{{ tools is none }}", in), "True");
    in.tools_json = R"([{"type": "function", "function": {"name": "f", "parameters": {}}}])";
    in.vars_json["enable_thinking"] = "false";
    in.vars_json["effort"] = "\"low\"";
    in.vars_json["bos_token"] = "\"<B>\"";
    EXPECT_EQ(render_ok("{{ tools[0].function.name }} {{ tools | tojson }} {{ enable_thinking }} "
                        "{{ effort }} {{ bos_token }}",
                        in),
              "f [{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": {}}}] "
              "False low <B>");
}

TEST(ChatMessages, MalformedInputIsAnErrorNamingIt) {
    for (
        const char* bad : {
            "[1]",
            R"({"content": "no role"})",
            R"({"role": 3, "content": "x"})",
            R"({"role": "user", "content": 5})",
            R"({"role": "user", "content": ["text"]})",
            R"({"role": "assistant", "tool_calls": {"name": "f"}})",
            R"({"role": "assistant", "tool_calls": [{"function": {"arguments": "{}"}}]})",
            R"({"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": 1}}]})",
            R"({"role": "user", "content": "x")",
        }) {
        auto m = ChatMessage::from_json(bad);
        ASSERT_FALSE(m.ok()) << bad;
        EXPECT_EQ(m.error().code, "template.message") << bad;
        // The same JSON set directly is refused at render time, naming the message.
        ChatTemplateInputs in;
        in.messages = {{"user", "ok"}, {"", "", bad}};
        auto r = ember::render_chat_template("{{ messages }}", in);
        ASSERT_FALSE(r.ok()) << bad;
        EXPECT_NE(r.error().message.find("message 2:"), std::string::npos) << r.error().message;
    }
    ChatTemplateInputs in;
    in.messages = {{"user", "ok"}};
    in.tools_json = R"({"type": "function"})";
    auto r = ember::render_chat_template("x", in);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, "template.tools");
    in.tools_json.clear();
    in.vars_json["enable_thinking"] = "flase";
    r = ember::render_chat_template("x", in);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, "template.var");
    EXPECT_NE(r.error().message.find("enable_thinking"), std::string::npos);
    in.vars_json = {{"messages", "[]"}};
    r = ember::render_chat_template("x", in);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, "template.var");
}

}  // namespace
