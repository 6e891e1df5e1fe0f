#include "responses.h"

namespace ember::server {
namespace {

using json = nlohmann::json;

// Generated text may hold invalid UTF-8 (a model can emit any bytes); replace, never throw.
std::string dump(const json& j) {
    return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

std::string error_body(const ApiError& e) {
    json err = {{"message", e.message},
                {"type", e.type},
                {"param", e.param.empty() ? json(nullptr) : json(e.param)},
                {"code", e.code.empty() ? json(nullptr) : json(e.code)}};
    return dump(json{{"error", err}});
}

std::string sse_event(const json& j) {
    return "data: " + dump(j) + "\n\n";
}

json model_object(const std::string& id, int64_t created) {
    return {{"id", id}, {"object", "model"}, {"created", created}, {"owned_by", "ember"}};
}

json models_list(const std::string& id, int64_t created) {
    return {{"object", "list"}, {"data", json::array({model_object(id, created)})}};
}

json ResponseBuilder::chunk(json choice) const {
    json j = {{"id", m_meta.id},
              {"object", m_meta.chat ? "chat.completion.chunk" : "text_completion"},
              {"created", m_meta.created},
              {"model", m_meta.model},
              {"choices", json::array({std::move(choice)})}};
    if (m_meta.include_usage) j["usage"] = nullptr;  // as OpenAI: null until the last chunk
    return j;
}

json ResponseBuilder::usage(const JobEvent& done) const {
    return {{"prompt_tokens", done.prompt_tokens},
            {"completion_tokens", done.completion_tokens},
            {"total_tokens", done.prompt_tokens + done.completion_tokens}};
}

std::string ResponseBuilder::stream_start() const {
    if (!m_meta.chat) return {};
    return sse_event(chunk({{"index", 0},
                            {"delta", {{"role", "assistant"}, {"content", ""}}},
                            {"logprobs", nullptr},
                            {"finish_reason", nullptr}}));
}

json ResponseBuilder::tool_calls(const std::vector<ToolCall>& calls, bool streamed) const {
    json list = json::array();
    for (size_t i = 0; i < calls.size(); i++) {
        json c = {{"id", "call_" + std::to_string(i) + "_" + m_meta.id},
                  {"type", "function"},
                  {"function", {{"name", calls[i].name}, {"arguments", calls[i].arguments}}}};
        if (streamed) c["index"] = i;
        list.push_back(std::move(c));
    }
    return list;
}

std::string ResponseBuilder::stream_event(const JobEvent& e) {
    auto delta_chunk = [&](const std::string& reasoning, const std::string& content) {
        json delta = json::object();
        if (!reasoning.empty()) delta["reasoning_content"] = reasoning;
        if (!content.empty()) delta["content"] = content;
        return sse_event(chunk(
            {{"index", 0}, {"delta", delta}, {"logprobs", nullptr}, {"finish_reason", nullptr}}));
    };
    switch (e.kind) {
        case JobEvent::Kind::Delta: {
            if (!m_meta.chat)
                return sse_event(chunk({{"index", 0},
                                        {"text", e.delta.content},
                                        {"logprobs", nullptr},
                                        {"finish_reason", nullptr}}));
            const std::string content = m_tools.push(e.delta.content);
            if (content.empty() && e.delta.reasoning.empty()) return {};
            return delta_chunk(e.delta.reasoning, content);
        }
        case JobEvent::Kind::Done: {
            std::string out;
            const ToolReply held = m_tools.finish();
            if (!held.content.empty()) out += delta_chunk({}, held.content);
            if (!held.calls.empty())
                out += sse_event(chunk({{"index", 0},
                                        {"delta", {{"tool_calls", tool_calls(held.calls, true)}}},
                                        {"logprobs", nullptr},
                                        {"finish_reason", nullptr}}));
            json last = {
                {"index", 0},
                {"logprobs", nullptr},
                {"finish_reason", held.calls.empty() ? finish_name(e.finish) : "tool_calls"}};
            if (m_meta.chat)
                last["delta"] = json::object();
            else
                last["text"] = "";
            out += sse_event(chunk(std::move(last)));
            if (m_meta.include_usage) {  // OpenAI's extra chunk: no choices, the usage
                json u = chunk(json::object());
                u["choices"] = json::array();
                u["usage"] = usage(e);
                out += sse_event(u);
            }
            return out + kSseDone;
        }
        case JobEvent::Kind::Failed:
            return "data: " + error_body(e.error) + "\n\n" + kSseDone;
    }
    return {};
}

void ResponseBuilder::collect(const JobEvent& e) {
    if (e.kind != JobEvent::Kind::Delta) return;
    m_content += e.delta.content;
    m_reasoning += e.delta.reasoning;
}

std::string ResponseBuilder::body(const JobEvent& done) const {
    json choice = {
        {"index", 0}, {"logprobs", nullptr}, {"finish_reason", finish_name(done.finish)}};
    if (m_meta.chat) {
        json message = {{"role", "assistant"}, {"content", m_content}};
        const ToolReply r = parse_tool_calls(m_meta.tool_format, m_content);
        if (!r.calls.empty()) {  // OpenAI: content null when the reply is only calls
            message["content"] = r.content.empty() ? json(nullptr) : json(r.content);
            message["tool_calls"] = tool_calls(r.calls, false);
            choice["finish_reason"] = "tool_calls";
        }
        if (!m_reasoning.empty()) message["reasoning_content"] = m_reasoning;
        choice["message"] = std::move(message);
    } else {
        choice["text"] = m_content;
    }
    json j = {{"id", m_meta.id},
              {"object", m_meta.chat ? "chat.completion" : "text_completion"},
              {"created", m_meta.created},
              {"model", m_meta.model},
              {"choices", json::array({std::move(choice)})},
              {"usage", usage(done)}};
    return dump(j);
}

}  // namespace ember::server
