// Chat templates: a Jinja2 subset interpreter with Hugging Face's apply_chat_template settings.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/result.h"

namespace ember {

struct ChatTemplateInputs {
    std::vector<ChatMessage> messages;
    bool add_generation_prompt = true;
    std::string bos_token;
    std::string eos_token;
    // Optional JSON object whose members become extra template variables, e.g. GPT4All's
    // `toolList` (a list of tool descriptions); empty for none.
    std::string extra_context_json;
    // A JSON array of tool definitions, or empty: then `tools` is none.
    std::string tools_json;
    // Extra template variables, each a JSON value (applied after extra_context_json).
    std::map<std::string, std::string> vars_json;
    // Seconds since the epoch used by strftime_now(); < 0 means the current time.
    int64_t now_unix = -1;
};

// Renders like transformers' apply_chat_template (Jinja2, trim_blocks, lstrip_blocks).
// A malformed template or raise_exception() gives an error naming the line; a malformed
// message (ChatMessage::json), tools list or variable, one naming it.
Result<std::string> render_chat_template(const std::string& tmpl, const ChatTemplateInputs& in);

// ChatML, used when a model has no template.
const std::string& chatml_template();

}  // namespace ember
