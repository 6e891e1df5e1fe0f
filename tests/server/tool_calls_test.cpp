// Tool calls: the format a chat template asks for, calls taken out of replies, and OpenAI's
// "tool_calls" in responses, streamed and not.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "protocol.h"
#include "responses.h"
#include "test_util.h"
#include "tool_calls.h"

using namespace ember::server;
using nlohmann::json;

namespace {

std::string read_template(const std::string& name) {
    std::ifstream f(std::string(EMBER_SHARED_DIR) + "/templates/" + name);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

JobEvent delta(const std::string& content) {
    JobEvent e;
    e.delta.content = content;
    return e;
}

JobEvent done() {
    JobEvent e;
    e.kind = JobEvent::Kind::Done;
    e.finish = Finish::Stop;
    e.prompt_tokens = 5;
    e.completion_tokens = 9;
    return e;
}

ResponseMeta chat_meta(ToolFormat f) {
    ResponseMeta m;
    m.id = "chatcmpl-1-x";
    m.model = "m";
    m.tool_format = f;
    return m;
}

// The chunks of a streamed response, parsed.
std::vector<json> chunks(const std::string& sse) {
    std::vector<json> out;
    std::istringstream in(sse);
    for (std::string line; std::getline(in, line);)
        if (line.rfind("data: {", 0) == 0) out.push_back(json::parse(line.substr(6)));
    return out;
}

const char* kReply =
    "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
    "\"Paris\", \"unit\": \"c\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", "
    "\"arguments\": {}}\n</tool_call>";

}  // namespace

TEST(ToolCalls, FormatFromTheTemplate) {
    const std::string qwen3 = read_template("qwen3.jinja");
    ASSERT_FALSE(qwen3.empty());
    EXPECT_EQ(tool_format_of(qwen3), ToolFormat::Hermes);
    // This Llama 3.1 template has no tools: its replies stay text.
    EXPECT_EQ(tool_format_of(read_template("llama3_1.jinja")), ToolFormat::None);
    EXPECT_EQ(tool_format_of("{{ '[TOOL_CALLS]' }}"), ToolFormat::Mistral);
    EXPECT_EQ(tool_format_of(""), ToolFormat::None);
}

TEST(ToolCalls, TakesCallsOutOfReplies) {
    ToolReply r = parse_tool_calls(ToolFormat::Hermes, kReply);
    EXPECT_EQ(r.content, "Let me check.");
    ASSERT_EQ(r.calls.size(), 2u);
    EXPECT_EQ(r.calls[0].name, "get_weather");
    EXPECT_EQ(r.calls[0].arguments, R"({"city":"Paris","unit":"c"})");  // the model's key order
    EXPECT_EQ(r.calls[1].arguments, "{}");
    // Not JSON, or no name: the text stays as the model wrote it.
    const std::string bad = "<tool_call>\n{not json}\n</tool_call>";
    r = parse_tool_calls(ToolFormat::Hermes, bad);
    EXPECT_EQ(r.content, bad);
    EXPECT_TRUE(r.calls.empty());
    EXPECT_TRUE(parse_tool_calls(ToolFormat::Hermes, R"(<tool_call>{"arguments": {}}</tool_call>)")
                    .calls.empty());
    // Without a format nothing is taken.
    EXPECT_EQ(parse_tool_calls(ToolFormat::None, kReply).content, kReply);
    // Llama 3's JSON reply, and Mistral's list.
    r = parse_tool_calls(ToolFormat::Json, R"( {"name": "f", "parameters": {"x": 1}} )");
    ASSERT_EQ(r.calls.size(), 1u);
    EXPECT_EQ(r.calls[0].arguments, R"({"x":1})");
    EXPECT_TRUE(r.content.empty());
    EXPECT_TRUE(parse_tool_calls(ToolFormat::Json, "Hello {there}").calls.empty());
    r = parse_tool_calls(
        ToolFormat::Mistral,
        R"([TOOL_CALLS] [{"name": "a", "arguments": {}}, {"name": "b", "arguments": "{\"y\":2}"}])");
    ASSERT_EQ(r.calls.size(), 2u);
    EXPECT_EQ(r.calls[1].arguments, R"({"y":2})");
}

TEST(ToolCalls, FilterHoldsBackOnlyWhatMayBeACall) {
    ToolCallFilter f(ToolFormat::Hermes);
    std::string sent;
    // The marker split over pieces is held until it is sure.
    for (const char* piece :
         {"Let me ", "check.\n<tool", "_call>\n{\"name\": ", "\"get_time\"}", "\n</tool_call>"})
        sent += f.push(piece);
    EXPECT_EQ(sent, "Let me check.\n");
    ToolReply r = f.finish();
    ASSERT_EQ(r.calls.size(), 1u);
    EXPECT_EQ(r.calls[0].name, "get_time");
    EXPECT_TRUE(r.content.empty());
    // Text that only looked like the start of a marker goes out.
    ToolCallFilter g(ToolFormat::Hermes);
    sent = g.push("a <to");
    sent += g.push("p> b");
    EXPECT_EQ(sent + g.finish().content, "a <top> b");
}

TEST(ToolCalls, ResponsesCarryToolCalls) {
    // Not streamed: tool_calls, content without them, finish_reason "tool_calls".
    ResponseBuilder b(chat_meta(ToolFormat::Hermes));
    b.collect(delta(kReply));
    json j = json::parse(b.body(done()));
    const json& choice = j["choices"][0];
    EXPECT_EQ(choice["finish_reason"], "tool_calls");
    EXPECT_EQ(choice["message"]["content"], "Let me check.");
    ASSERT_EQ(choice["message"]["tool_calls"].size(), 2u);
    const json& call = choice["message"]["tool_calls"][0];
    EXPECT_EQ(call["type"], "function");
    EXPECT_EQ(call["function"]["name"], "get_weather");
    EXPECT_EQ(json::parse(call["function"]["arguments"].get<std::string>())["city"], "Paris");
    EXPECT_TRUE(call["id"].is_string());
    EXPECT_FALSE(call.contains("index"));

    // Streamed, token by token: the content deltas never hold the call; one chunk has them.
    ResponseBuilder s(chat_meta(ToolFormat::Hermes));
    std::string sse = s.stream_start();
    const std::string reply = kReply;
    for (size_t i = 0; i < reply.size(); i += 3) sse += s.stream_event(delta(reply.substr(i, 3)));
    sse += s.stream_event(done());
    std::string content;
    json calls = json::array();
    std::string finish;
    for (const json& c : chunks(sse)) {
        const json& d = c["choices"][0]["delta"];
        if (d.contains("content")) content += d["content"].get<std::string>();
        if (d.contains("tool_calls"))
            for (const json& t : d["tool_calls"]) calls.push_back(t);
        if (!c["choices"][0]["finish_reason"].is_null()) finish = c["choices"][0]["finish_reason"];
    }
    EXPECT_EQ(content, "Let me check.\n");
    ASSERT_EQ(calls.size(), 2u);
    EXPECT_EQ(calls[1]["index"], 1);
    EXPECT_EQ(calls[1]["function"]["name"], "get_time");
    EXPECT_EQ(finish, "tool_calls");

    // Without tools in the request, the same reply is text.
    ResponseBuilder plain(chat_meta(ToolFormat::None));
    plain.collect(delta(kReply));
    j = json::parse(plain.body(done()));
    EXPECT_EQ(j["choices"][0]["message"]["content"], kReply);
    EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
    EXPECT_FALSE(j["choices"][0]["message"].contains("tool_calls"));
}

TEST(ToolCalls, ToolChoiceNoneKeepsText) {
    auto r = parse_chat_request(
        R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": "none"})");
    ASSERT_TRUE(std::holds_alternative<ChatRequest>(r));
    EXPECT_TRUE(std::get<ChatRequest>(r).tool_choice_none);
    auto bad =
        parse_chat_request(R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": 3})");
    ASSERT_TRUE(std::holds_alternative<ApiError>(bad));
    EXPECT_EQ(std::get<ApiError>(bad).param, "tool_choice");
}
