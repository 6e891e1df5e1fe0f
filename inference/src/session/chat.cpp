// Model::apply_chat_template: the model's chat template (or ChatML) with its BOS and EOS text.
#include "ember/ember.h"
#include "session/model_impl.h"
#include "templates/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace ember {

Result<std::string> Model::apply_chat_template(std::span<const ChatMessage> messages,
                                               const ChatTemplateOptions& options,
                                               bool* used_fallback) const {
    const Tokenizer& tok = *m_impl->tokenizer;
    ChatTemplateInputs in;
    in.messages.assign(messages.begin(), messages.end());
    in.add_generation_prompt = options.add_generation_prompt;
    if (tok.bos() >= 0 && tok.bos() < tok.n_vocab()) in.bos_token = tok.token_text(tok.bos());
    if (tok.eos() >= 0 && tok.eos() < tok.n_vocab()) in.eos_token = tok.token_text(tok.eos());
    in.tools_json = options.tools_json;
    in.vars_json = options.vars_json;
    const bool fallback = m_impl->info.chat_template.empty();
    if (used_fallback) *used_fallback = fallback;
    return render_chat_template(fallback ? chatml_template() : m_impl->info.chat_template, in);
}

Result<std::string> Model::apply_chat_template(std::span<const ChatMessage> messages,
                                               bool add_generation_prompt,
                                               bool* used_fallback) const {
    ChatTemplateOptions options;
    options.add_generation_prompt = add_generation_prompt;
    return apply_chat_template(messages, options, used_fallback);
}

}  // namespace ember
