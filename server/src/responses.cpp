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

std::string ResponseBuilder::stream_event(const JobEvent& e) const {
    switch (e.kind) {
        case JobEvent::Kind::Delta: {
            if (!m_meta.chat)
                return sse_event(chunk({{"index", 0},
                                        {"text", e.delta.content},
                                        {"logprobs", nullptr},
                                        {"finish_reason", nullptr}}));
            json delta = json::object();
            if (!e.delta.reasoning.empty()) delta["reasoning_content"] = e.delta.reasoning;
            if (!e.delta.content.empty()) delta["content"] = e.delta.content;
            return sse_event(chunk({{"index", 0},
                                    {"delta", delta},
                                    {"logprobs", nullptr},
                                    {"finish_reason", nullptr}}));
        }
        case JobEvent::Kind::Done: {
            json last = {
                {"index", 0}, {"logprobs", nullptr}, {"finish_reason", finish_name(e.finish)}};
            if (m_meta.chat)
                last["delta"] = json::object();
            else
                last["text"] = "";
            std::string out = sse_event(chunk(std::move(last)));
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
