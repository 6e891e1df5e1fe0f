// Tool calls in a chat model's reply: which format the model's chat template asks for, and
// the calls taken out of the reply text (OpenAI's "tool_calls"), streamed or not.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace ember::server {

enum class ToolFormat {
    None,    // the template has no tool-call format we know: replies stay text
    Hermes,  // Qwen 2.5 / 3, Hermes: <tool_call>{"name", "arguments"}</tool_call>, one or more
    Json,    // Llama 3.1+: the reply is one {"name", "parameters"} object (after <|python_tag|>)
    Mistral  // [TOOL_CALLS] [{"name", "arguments"}, ...]
};

// The format a chat template tells its model to call tools in (from the template's text).
ToolFormat tool_format_of(std::string_view chat_template);

struct ToolCall {
    std::string name;
    std::string arguments;  // a JSON object as text, as OpenAI sends it
};

struct ToolReply {
    std::string content;  // the reply without its tool calls
    std::vector<ToolCall> calls;
};

// Takes the tool calls out of a whole reply. Text that looks like a call but is not valid JSON
// with a "name" stays in content, as the model wrote it.
ToolReply parse_tool_calls(ToolFormat format, std::string_view reply);

// Holds back streamed text from where a tool call may begin until the reply ends, so that a
// call is never sent as content; the rest goes out as it comes.
class ToolCallFilter {
public:
    explicit ToolCallFilter(ToolFormat format) : m_format(format) {}
    // The text that can be sent as content now.
    std::string push(std::string_view text);
    // At the end: what was held, split into content and calls.
    ToolReply finish();

private:
    ToolFormat m_format;
    std::string m_held;
    bool m_in_call = false;  // a call has begun: everything to the end is held
    bool m_started = false;  // Json: the reply's first non-blank text has come
};

}  // namespace ember::server
