// Chat templates: a Jinja2 subset interpreter with Hugging Face's apply_chat_template settings.
#pragma once

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
};

// Renders like transformers' apply_chat_template (Jinja2, trim_blocks, lstrip_blocks).
// A malformed template or raise_exception() gives an error naming the line.
Result<std::string> render_chat_template(const std::string& tmpl, const ChatTemplateInputs& in);

// ChatML, used when a model has no template.
const std::string& chatml_template();

}  // namespace ember
