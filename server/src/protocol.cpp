#include "protocol.h"

#include <limits>
#include <random>

#include <nlohmann/json.hpp>

namespace ember::server {
namespace {

// Ordered, so that what reaches a template (tool arguments, tools) keeps the client's key order.
using json = nlohmann::ordered_json;

// Thrown inside this file only; parse_* turn it into the returned ApiError.
struct Invalid {
    ApiError error;
};

[[noreturn]] void invalid(std::string param, std::string message,
                          std::string code = "invalid_value") {
    throw Invalid{ApiError{400, std::move(message), "invalid_request_error", std::move(code),
                           std::move(param)}};
}

const char* type_name(const json& v) {
    switch (v.type()) {
        case json::value_t::null:
            return "null";
        case json::value_t::boolean:
            return "a boolean";
        case json::value_t::string:
            return "a string";
        case json::value_t::array:
            return "an array";
        case json::value_t::object:
            return "an object";
        case json::value_t::number_float:
            return "a number with a fraction";
        default:
            return "a number";
    }
}

[[noreturn]] void wrong_type(const std::string& param, const char* expected, const json& v) {
    invalid(param, "'" + param + "' must be " + expected + ", got " + type_name(v), "invalid_type");
}

// The field's value, or nullptr when it is absent or null (OpenAI treats null as absent).
const json* field(const json& body, const char* name) {
    auto it = body.find(name);
    if (it == body.end() || it->is_null()) return nullptr;
    return &*it;
}

json parse_object(std::string_view body) {
    json j;
    try {
        j = json::parse(body.begin(), body.end());
    } catch (const json::parse_error& e) {
        throw Invalid{ApiError{
            400, "the request body is not valid JSON (byte " + std::to_string(e.byte) + ")",
            "invalid_request_error", "invalid_json", ""}};
    }
    if (!j.is_object())
        throw Invalid{ApiError{
            400, std::string("the request body must be a JSON object, got ") + type_name(j),
            "invalid_request_error", "invalid_json", ""}};
    return j;
}

std::optional<bool> get_bool(const json& body, const char* name) {
    const json* v = field(body, name);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) wrong_type(name, "a boolean", *v);
    return v->get<bool>();
}

std::optional<double> get_number(const json& body, const char* name, double lo, double hi) {
    const json* v = field(body, name);
    if (!v) return std::nullopt;
    if (!v->is_number()) wrong_type(name, "a number", *v);
    const double d = v->get<double>();
    if (!(d >= lo && d <= hi))
        invalid(name, "'" + std::string(name) + "' must be between " + json(lo).dump() + " and " +
                          json(hi).dump() + ", got " + v->dump());
    return d;
}

std::optional<int64_t> get_int(const json& body, const char* name, int64_t lo, int64_t hi) {
    const json* v = field(body, name);
    if (!v) return std::nullopt;
    if (!v->is_number_integer()) wrong_type(name, "an integer", *v);
    // Unsigned values above int64's range compare as huge, which the range check refuses.
    const bool too_big = v->is_number_unsigned() &&
                         v->get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max());
    const int64_t i = too_big ? std::numeric_limits<int64_t>::max() : v->get<int64_t>();
    if (too_big || i < lo || i > hi)
        invalid(name, "'" + std::string(name) + "' must be between " + std::to_string(lo) +
                          " and " + std::to_string(hi) + ", got " + v->dump());
    return i;
}

std::string get_model(const json& body) {
    const json* v = field(body, "model");
    if (!v) return {};
    if (!v->is_string()) wrong_type("model", "a string", *v);
    return v->get<std::string>();
}

std::vector<std::string> get_stop(const json& body) {
    const json* v = field(body, "stop");
    if (!v) return {};
    std::vector<std::string> stops;
    if (v->is_string()) {
        stops.push_back(v->get<std::string>());
    } else if (v->is_array()) {
        if (v->size() > kMaxStopStrings)
            invalid("stop", "'stop' holds at most " + std::to_string(kMaxStopStrings) +
                                " strings, got " + std::to_string(v->size()));
        for (size_t i = 0; i < v->size(); i++) {
            if (!(*v)[i].is_string())
                wrong_type("stop[" + std::to_string(i) + "]", "a string", (*v)[i]);
            stops.push_back((*v)[i].get<std::string>());
        }
    } else {
        wrong_type("stop", "a string or an array of strings", *v);
    }
    for (const std::string& s : stops)
        if (s.empty()) invalid("stop", "'stop' strings must not be empty");
    return stops;
}

GenerationOptions get_options(const json& body, int default_max_tokens) {
    GenerationOptions o;
    if (auto n = get_int(body, "n", std::numeric_limits<int64_t>::min(),
                         std::numeric_limits<int64_t>::max());
        n && *n != 1)
        invalid("n", "only n = 1 is supported, got " + std::to_string(*n), "unsupported_value");
    // max_completion_tokens replaced max_tokens in OpenAI's chat API; either is accepted.
    auto max_tokens = get_int(body, "max_tokens", 1, 1 << 30);
    if (auto m = get_int(body, "max_completion_tokens", 1, 1 << 30)) max_tokens = m;
    if (max_tokens)
        o.max_tokens = int(*max_tokens);
    else if (default_max_tokens > 0)
        o.max_tokens = default_max_tokens;
    if (auto t = get_number(body, "temperature", 0, 2)) o.temperature = float(*t);
    if (auto p = get_number(body, "top_p", 0, 1)) o.top_p = float(*p);
    if (auto s = get_int(body, "seed", std::numeric_limits<int64_t>::min(),
                         std::numeric_limits<int64_t>::max()))
        o.seed = uint64_t(*s);
    o.stop = get_stop(body);
    o.stream = get_bool(body, "stream").value_or(false);
    o.ignore_eos = get_bool(body, "ignore_eos").value_or(false);
    if (const json* so = field(body, "stream_options")) {
        if (!so->is_object()) wrong_type("stream_options", "an object", *so);
        if (!o.stream)
            invalid("stream_options", "'stream_options' is only allowed when 'stream' is true");
        if (const json* u = field(*so, "include_usage")) {
            if (!u->is_boolean()) wrong_type("stream_options.include_usage", "a boolean", *u);
            o.include_usage = u->get<bool>();
        }
    }
    return o;
}

// A message's content: a string, or an array of text parts joined in order.
std::string get_content(const json& msg, const std::string& where, const std::string& role) {
    const json* c = field(msg, "content");
    if (!c) {
        if (role == "assistant") return {};  // an assistant turn that only called tools
        invalid(where + ".content", "'" + where + ".content' is required");
    }
    if (c->is_string()) return c->get<std::string>();
    if (!c->is_array()) wrong_type(where + ".content", "a string or an array of parts", *c);
    std::string text;
    for (size_t i = 0; i < c->size(); i++) {
        const json& part = (*c)[i];
        const std::string p = where + ".content[" + std::to_string(i) + "]";
        if (!part.is_object()) wrong_type(p, "an object", part);
        const json* type = field(part, "type");
        if (!type || !type->is_string()) invalid(p + ".type", "'" + p + ".type' must be a string");
        if (*type != "text")
            invalid(p + ".type",
                    "content parts of type '" + type->get<std::string>() +
                        "' are not supported; only 'text'",
                    "unsupported_content_type");
        const json* t = field(part, "text");
        if (!t || !t->is_string()) invalid(p + ".text", "'" + p + ".text' must be a string");
        text += t->get<std::string>();
    }
    return text;
}

std::vector<ChatMessage> get_messages(const json& body) {
    const json* v = field(body, "messages");
    if (!v) invalid("messages", "'messages' is required", "missing_required_parameter");
    if (!v->is_array()) wrong_type("messages", "an array", *v);
    if (v->empty()) invalid("messages", "'messages' must hold at least one message");
    std::vector<ChatMessage> out;
    for (size_t i = 0; i < v->size(); i++) {
        const json& m = (*v)[i];
        const std::string where = "messages[" + std::to_string(i) + "]";
        if (!m.is_object()) wrong_type(where, "an object", m);
        const json* role = field(m, "role");
        if (!role || !role->is_string())
            invalid(where + ".role", "'" + where + ".role' must be a string");
        std::string r = role->get<std::string>();
        if (r == "developer") r = "system";  // OpenAI's newer name for the system role
        if (r != "system" && r != "user" && r != "assistant" && r != "tool")
            invalid(where + ".role", "'" + where +
                                         ".role' must be system, developer, user, "
                                         "assistant or tool, got '" +
                                         r + "'");
        ChatMessage msg;
        msg.content = get_content(m, where, r);
        msg.role = r;
        static const char* kExtra[] = {"tool_calls", "tool_call_id", "name", "reasoning_content"};
        bool extra = false;
        for (const char* k : kExtra) extra = extra || field(m, k);
        if (extra) {  // the template sees the whole message, its text as one string
            json whole = m;
            whole["role"] = r;
            if (field(m, "content")) whole["content"] = msg.content;
            auto checked = ChatMessage::from_json(whole.dump());
            if (!checked) invalid(where, where + ": " + checked.error().message);
            msg.json = checked->json;
        }
        out.push_back(std::move(msg));
    }
    return out;
}

std::string get_prompt(const json& body) {
    const json* v = field(body, "prompt");
    if (!v) invalid("prompt", "'prompt' is required", "missing_required_parameter");
    if (v->is_string()) return v->get<std::string>();
    if (v->is_array() && v->size() == 1 && (*v)[0].is_string()) return (*v)[0].get<std::string>();
    if (v->is_array() && v->size() > 1 && (*v)[0].is_string())
        invalid("prompt",
                "only one prompt per request is supported, got " + std::to_string(v->size()),
                "unsupported_value");
    wrong_type("prompt", "a string", *v);
}

template <class T, class F>
ApiResult<T> guarded(F&& f) {
    try {
        return f();
    } catch (const Invalid& e) {
        return e.error;
    } catch (const json::exception& e) {  // a conversion the checks above did not foresee
        return ApiError{400, std::string("invalid request: ") + e.what(), "invalid_request_error",
                        "invalid_value", ""};
    }
}

}  // namespace

ApiResult<ChatRequest> parse_chat_request(std::string_view body) {
    return guarded<ChatRequest>([&] {
        const json j = parse_object(body);
        ChatRequest r;
        r.model = get_model(j);
        r.messages = get_messages(j);
        if (const json* tools = field(j, "tools")) {
            if (!tools->is_array()) wrong_type("tools", "an array", *tools);
            if (!tools->empty()) r.tools_json = tools->dump();
        }
        // "none": the model may not call tools, so its reply stays text; "auto", "required" or
        // a named function leave the choice to the model.
        if (const json* choice = field(j, "tool_choice")) {
            if (!choice->is_string() && !choice->is_object())
                wrong_type("tool_choice", "a string or an object", *choice);
            r.tool_choice_none = *choice == "none";
        }
        if (const json* kw = field(j, "chat_template_kwargs")) {
            if (!kw->is_object()) wrong_type("chat_template_kwargs", "an object", *kw);
            for (const auto& [k, v] : kw->items()) r.vars_json[k] = v.dump();
        }
        r.options = get_options(j, 0);
        return r;
    });
}

ApiResult<CompletionRequest> parse_completion_request(std::string_view body) {
    return guarded<CompletionRequest>([&] {
        const json j = parse_object(body);
        CompletionRequest r;
        r.model = get_model(j);
        r.prompt = get_prompt(j);
        if (get_bool(j, "echo").value_or(false))
            invalid("echo", "'echo' is not supported", "unsupported_value");
        if (const json* s = field(j, "suffix");
            s && !(s->is_string() && s->get<std::string>().empty()))
            invalid("suffix", "'suffix' is not supported", "unsupported_value");
        if (auto b = get_int(j, "best_of", 1, 1 << 20); b && *b != 1)
            invalid("best_of", "only best_of = 1 is supported", "unsupported_value");
        r.options = get_options(j, kDefaultCompletionMaxTokens);
        return r;
    });
}

SamplingParams sampling_for(const GenerationOptions& options) {
    SamplingParams s;  // the engine's (and the app's) defaults
    if (options.temperature) s.temperature = *options.temperature;
    if (options.top_p) s.top_p = *options.top_p;
    if (options.seed) {
        s.seed = *options.seed;
    } else {
        std::random_device rd;
        s.seed = (uint64_t(rd()) << 32) ^ rd();
    }
    return s;
}

}  // namespace ember::server
