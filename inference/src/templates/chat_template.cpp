#include "templates/chat_template.h"

#include <ctime>

#include "templates/jinja_ast.h"
#include "templates/jinja_interp.h"

namespace ember {

using jinja::CallArgs;
using jinja::Interp;
using jinja::Value;

Result<std::string> render_chat_template(const std::string& tmpl, const ChatTemplateInputs& in) {
    EMBER_ASSIGN_OR_RETURN(std::unique_ptr<jinja::Template> parsed, jinja::parse_template(tmpl));
    Interp interp;
    std::vector<Value> messages;
    for (const auto& m : in.messages) {
        Value d = Value::dict();
        d.dict_data().set(Value::string("role"), Value::string(m.role));
        d.dict_data().set(Value::string("content"), Value::string(m.content));
        messages.push_back(std::move(d));
    }
    interp.set_global("messages", Value::list(std::move(messages)));
    interp.set_global("add_generation_prompt", Value::boolean(in.add_generation_prompt));
    interp.set_global("bos_token", Value::string(in.bos_token));
    interp.set_global("eos_token", Value::string(in.eos_token));
    // transformers passes tools=None when no tools are given (documents stays undefined).
    interp.set_global("tools", Value::none());
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
    if (!in.extra_context_json.empty()) {
        EMBER_ASSIGN_OR_RETURN(Value extra, jinja::parse_json(in.extra_context_json));
        if (!extra.is_dict())
            return make_error("template.extra_json",
                              "extra template variables must be a JSON object");
        for (const auto& [k, v] : extra.dict_data().items) interp.set_global(k.str(), v);
    }
    return interp.render(*parsed);
}

const std::string& chatml_template() {
    static const std::string t =
        "{% for message in messages %}"
        "{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}"
        "{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
    return t;
}

}  // namespace ember
