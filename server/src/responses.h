// The OpenAI-compatible API's responses: JSON bodies and server-sent-event chunks, independent
// of HTTP.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "protocol.h"
#include "scheduler.h"
#include "tool_calls.h"

namespace ember::server {

// {"error": {"message", "type", "param", "code"}} as text.
std::string error_body(const ApiError& e);
// One server-sent event carrying `j`: "data: {...}\n\n".
std::string sse_event(const nlohmann::json& j);
inline constexpr const char* kSseDone = "data: [DONE]\n\n";

// {"object": "list", "data": [{"id", "object": "model", "created", "owned_by"}]}
nlohmann::json model_object(const std::string& id, int64_t created);
nlohmann::json models_list(const std::string& id, int64_t created);

struct ResponseMeta {
    std::string id;       // "chatcmpl-..." or "cmpl-..."
    int64_t created = 0;  // Unix seconds
    std::string model;
    bool chat = true;  // chat.completion(.chunk) or text_completion
    bool include_usage = false;
    // Chat with tools: calls in this format become "tool_calls" (finish_reason "tool_calls").
    ToolFormat tool_format = ToolFormat::None;
};

// Turns a job's events into a response: chunks for a streamed one, one body otherwise.
class ResponseBuilder {
public:
    explicit ResponseBuilder(ResponseMeta meta)
        : m_meta(std::move(meta)), m_tools(m_meta.chat ? m_meta.tool_format : ToolFormat::None) {}

    // Streamed. The first event (chat: the assistant role), then one per job event (empty
    // while a possible tool call is held back); a Done or Failed event's text ends with
    // "data: [DONE]".
    std::string stream_start() const;
    std::string stream_event(const JobEvent& e);

    // Not streamed: deltas are collected, and a Done event gives the whole body.
    void collect(const JobEvent& e);
    std::string body(const JobEvent& done) const;

private:
    nlohmann::json chunk(nlohmann::json choice) const;
    nlohmann::json usage(const JobEvent& done) const;
    // OpenAI's tool_calls entries; `index` only in streamed deltas.
    nlohmann::json tool_calls(const std::vector<ToolCall>& calls, bool streamed) const;
    ResponseMeta m_meta;
    std::string m_content, m_reasoning;
    ToolCallFilter m_tools;
};

}  // namespace ember::server
