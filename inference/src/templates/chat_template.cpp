#include "templates/chat_template.h"

#include <ctime>

#include "templates/jinja_ast.h"
#include "templates/jinja_interp.h"

namespace ember {

using jinja::CallArgs;
using jinja::Interp;
using jinja::Value;

namespace {

Error message_error(const std::string& what) {
    return make_error("template.message", what);
}

// Checks what templates rely on in a message given as JSON: a string role, content that is a
// string, null, a list of parts or absent, and tool calls as a list of objects whose function
// has a string name and arguments that are an object or a string.
Status check_message(const Value& m) {
    if (!m.is_dict()) return message_error("a message must be a JSON object");
    const Value* role = m.dict_data().find("role");
    if (!role || !role->is_string()) return message_error("a message needs a string \"role\"");
    if (const Value* c = m.dict_data().find("content")) {
        if (!c->is_string() && !c->is_none() && !c->is_list())
            return message_error("\"content\" must be a string, null or a list of parts, not " +
                                 std::string(jinja::type_name(*c)));
        if (c->is_list())
            for (const Value& part : c->list_data().items)
                if (!part.is_dict())
                    return message_error("each part of \"content\" must be an object");
    }
    const Value* calls = m.dict_data().find("tool_calls");
    if (!calls || calls->is_none()) return {};
    if (!calls->is_list()) return message_error("\"tool_calls\" must be a list");
    for (const Value& call : calls->list_data().items) {
        if (!call.is_dict()) return message_error("each tool call must be an object");
        const Value* fn = call.dict_data().find("function");
        if (!fn) continue;
        if (!fn->is_dict()) return message_error("a tool call's \"function\" must be an object");
        const Value* name = fn->dict_data().find("name");
        if (!name || !name->is_string())
            return message_error("a tool call's function needs a string \"name\"");
        const Value* args = fn->dict_data().find("arguments");
        if (args && !args->is_string() && !args->is_dict())
            return message_error("a tool call's \"arguments\" must be an object or a string");
    }
    return {};
}

Result<Value> message_value(const ChatMessage& m) {
    if (m.json.empty()) {
        Value d = Value::dict();
        d.dict_data().set(Value::string("role"), Value::string(m.role));
        d.dict_data().set(Value::string("content"), Value::string(m.content));
        return d;
    }
    auto v = jinja::parse_json(m.json);
    if (!v) return message_error("the message is not valid JSON: " + v.error().message);
    EMBER_TRY(check_message(*v));
    return std::move(*v);
}

Status set_inputs(Interp& interp, const ChatTemplateInputs& in) {
    std::vector<Value> messages;
    for (size_t k = 0; k < in.messages.size(); ++k) {
        auto m = message_value(in.messages[k]);
        if (!m)
            return make_error(m.error().code,
                              "message " + std::to_string(k + 1) + ": " + m.error().message);
        messages.push_back(std::move(*m));
    }
    interp.set_global("messages", Value::list(std::move(messages)));
    interp.set_global("add_generation_prompt", Value::boolean(in.add_generation_prompt));
    interp.set_global("bos_token", Value::string(in.bos_token));
    interp.set_global("eos_token", Value::string(in.eos_token));
    // transformers passes tools=None when no tools are given (documents stays undefined).
    Value tools = Value::none();
    if (!in.tools_json.empty()) {
        auto t = jinja::parse_json(in.tools_json);
        if (!t) return make_error("template.tools", "the tools list: " + t.error().message);
        if (!t->is_list())
            return make_error("template.tools", "the tools must be a JSON array, not " +
                                                    std::string(jinja::type_name(*t)));
        tools = std::move(*t);
    }
    interp.set_global("tools", tools);
    if (!in.extra_context_json.empty()) {
        EMBER_ASSIGN_OR_RETURN(Value extra, jinja::parse_json(in.extra_context_json));
        if (!extra.is_dict())
            return make_error("template.extra_json",
                              "extra template variables must be a JSON object");
        for (const auto& [k, v] : extra.dict_data().items) interp.set_global(k.str(), v);
    }
    for (const auto& [name, json] : in.vars_json) {
        if (name == "messages" || name == "tools" || name == "add_generation_prompt")
            return make_error("template.var", "the template variable '" + name +
                                                  "' has its own option; it cannot be a --var");
        auto v = jinja::parse_json(json);
        if (!v)
            return make_error("template.var",
                              "template variable '" + name + "': " + v.error().message);
        interp.set_global(name, std::move(*v));
    }
    return {};
}

}  // namespace

Result<ChatMessage> ChatMessage::from_json(std::string_view json) {
    auto v = jinja::parse_json(json);
    if (!v) return message_error("the message is not valid JSON: " + v.error().message);
    EMBER_TRY(check_message(*v));
    ChatMessage m;
    m.role = v->dict_data().find("role")->str();
    if (const Value* c = v->dict_data().find("content")) {
        if (c->is_string()) {
            m.content = c->str();
        } else if (c->is_list()) {
            for (const Value& part : c->list_data().items) {
                const Value* type = part.dict_data().find("type");
                const Value* text = part.dict_data().find("text");
                if (!type || !type->is_string() || type->str() != "text" || !text ||
                    !text->is_string())
                    continue;
                if (!m.content.empty()) m.content += '\n';
                m.content += text->str();
            }
        }
    }
    m.json = std::string(json);
    return m;
}

Result<std::string> render_chat_template(const std::string& tmpl, const ChatTemplateInputs& in) {
    EMBER_ASSIGN_OR_RETURN(std::unique_ptr<jinja::Template> parsed, jinja::parse_template(tmpl));
    Interp interp;
    const int64_t now = in.now_unix;
    interp.set_global(
        "strftime_now",
        Value::function("strftime_now", [now](Interp&, CallArgs& a) -> Result<Value> {
            if (a.pos.size() != 1 || !a.pos[0].is_string())
                return make_error("template.render", "strftime_now() needs one format string");
            std::time_t t = now >= 0 ? static_cast<std::time_t>(now) : std::time(nullptr);
            std::tm tm{};
            localtime_r(&t, &tm);
            char buf[256];
            size_t n = std::strftime(buf, sizeof(buf), a.pos[0].str().c_str(), &tm);
            return Value::string(std::string(buf, n));
        }));
    EMBER_TRY(set_inputs(interp, in));  // after strftime_now: a variable may replace it
    return interp.render(*parsed);
}

const std::string& chatml_template() {
    static const std::string t =
        "{% for message in messages %}"
        "{{'<|im_start|>' + message['role'] + '\\n'}}"
        // Content given as a list of parts: its text parts; none (a bare tool call): nothing.
        "{% if message['content'] is string %}{{ message['content'] }}"
        "{% elif message['content'] is iterable and message['content'] is not mapping %}"
        "{% for part in message['content'] %}"
        "{% if part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
        "{% endfor %}{% endif %}"
        "{{'<|im_end|>' + '\\n'}}"
        "{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
    return t;
}

}  // namespace ember
