#include "tool_calls.h"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace ember::server {
namespace {

using ordered_json = nlohmann::ordered_json;

constexpr std::string_view kHermesOpen = "<tool_call>", kHermesClose = "</tool_call>";
constexpr std::string_view kMistral = "[TOOL_CALLS]";
constexpr std::string_view kPythonTag = "<|python_tag|>";

bool blank(char c) {
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && blank(s.front())) s.remove_prefix(1);
    while (!s.empty() && blank(s.back())) s.remove_suffix(1);
    return s;
}

// A {"name", "arguments" | "parameters"} object as a call; false if it is not one.
bool to_call(const ordered_json& j, ToolCall& call) {
    if (!j.is_object()) return false;
    auto name = j.find("name");
    if (name == j.end() || !name->is_string()) return false;
    call.name = name->get<std::string>();
    auto args = j.find("arguments");
    if (args == j.end()) args = j.find("parameters");
    if (args == j.end() || args->is_null())
        call.arguments = "{}";
    else if (args->is_string())
        call.arguments = args->get<std::string>();  // already JSON text
    else
        call.arguments = args->dump(-1, ' ', false, ordered_json::error_handler_t::replace);
    return true;
}

ordered_json parse(std::string_view text) {
    return ordered_json::parse(text.begin(), text.end(), nullptr, false);
}

// The start of a suffix of `text` that is a beginning of `marker` (text.size() if none).
size_t partial_marker(std::string_view text, std::string_view marker) {
    for (size_t n = std::min(text.size(), marker.size() - 1); n > 0; n--)
        if (text.substr(text.size() - n) == marker.substr(0, n)) return text.size() - n;
    return text.size();
}

ToolReply parse_hermes(std::string_view reply) {
    ToolReply out;
    size_t pos = 0;
    for (;;) {
        const size_t open = reply.find(kHermesOpen, pos);
        if (open == std::string_view::npos) break;
        const size_t body = open + kHermesOpen.size();
        size_t close = reply.find(kHermesClose, body);
        const size_t end =
            close == std::string_view::npos ? reply.size() : close + kHermesClose.size();
        if (close == std::string_view::npos) close = reply.size();  // cut off: parse what came
        ToolCall call;
        if (!to_call(parse(trim(reply.substr(body, close - body))), call)) break;
        out.content += reply.substr(pos, open - pos);
        out.calls.push_back(std::move(call));
        pos = end;
    }
    out.content += reply.substr(pos);
    if (!out.calls.empty()) out.content = std::string(trim(out.content));
    return out;
}

ToolReply parse_list(std::string_view text, std::string_view whole) {
    ToolReply out;
    const ordered_json j = parse(trim(text));
    const ordered_json list = j.is_array() ? j : ordered_json::array({j});
    for (const auto& item : list) {
        ToolCall call;
        if (!to_call(item, call)) return ToolReply{std::string(whole), {}};
        out.calls.push_back(std::move(call));
    }
    if (out.calls.empty()) out.content = whole;
    return out;
}

}  // namespace

ToolFormat tool_format_of(std::string_view t) {
    if (t.find(kHermesOpen) != std::string_view::npos) return ToolFormat::Hermes;
    if (t.find(kMistral) != std::string_view::npos) return ToolFormat::Mistral;
    // Llama 3.1+: the tools are described in the prompt and the reply is a JSON call.
    if (t.find("<|start_header_id|>") != std::string_view::npos &&
        t.find("tools") != std::string_view::npos && t.find("parameters") != std::string_view::npos)
        return ToolFormat::Json;
    return ToolFormat::None;
}

ToolReply parse_tool_calls(ToolFormat format, std::string_view reply) {
    switch (format) {
        case ToolFormat::None:
            break;
        case ToolFormat::Hermes:
            return parse_hermes(reply);
        case ToolFormat::Mistral: {
            const size_t at = reply.find(kMistral);
            if (at == std::string_view::npos) break;
            ToolReply r = parse_list(reply.substr(at + kMistral.size()), reply);
            if (!r.calls.empty()) r.content = std::string(trim(reply.substr(0, at)));
            return r;
        }
        case ToolFormat::Json: {
            std::string_view t = trim(reply);
            if (t.substr(0, kPythonTag.size()) == kPythonTag) t.remove_prefix(kPythonTag.size());
            t = trim(t);
            if (t.empty() || (t.front() != '{' && t.front() != '[')) break;
            return parse_list(t, reply);
        }
    }
    return ToolReply{std::string(reply), {}};
}

std::string ToolCallFilter::push(std::string_view text) {
    if (m_format == ToolFormat::None) return std::string(text);
    m_held += text;
    if (m_in_call) return {};
    size_t safe = m_held.size();
    if (m_format == ToolFormat::Json) {
        // Only a reply that begins with a call is one: blanks wait for the first real text.
        const size_t first = m_held.find_first_not_of(" \n\r\t");
        if (first == std::string::npos) return {};
        if (!m_started) {
            m_started = true;
            const std::string_view rest = std::string_view(m_held).substr(first);
            if (rest.front() == '{' || rest.front() == '[' ||
                kPythonTag.substr(0, std::min(rest.size(), kPythonTag.size())) ==
                    rest.substr(0, std::min(rest.size(), kPythonTag.size())))
                m_in_call = true;
        }
        if (m_in_call) return {};
    } else {
        const std::string_view marker = m_format == ToolFormat::Hermes ? kHermesOpen : kMistral;
        const size_t at = m_held.find(marker);
        if (at != std::string::npos) {
            m_in_call = true;
            safe = at;
        } else {
            safe = partial_marker(m_held, marker);
        }
    }
    std::string out = m_held.substr(0, safe);
    m_held.erase(0, safe);
    return out;
}

ToolReply ToolCallFilter::finish() {
    ToolReply r = parse_tool_calls(m_format, m_held);
    m_held.clear();
    return r;
}

}  // namespace ember::server
