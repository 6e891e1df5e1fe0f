// The reasoning of a reply from a reasoning model (DeepSeek-R1 distills, Qwen 3, QwQ): the text
// between <think> and </think> at its start. The chat template may open the block itself (the
// prompt ends with <think>), so the reply then holds only "...</think>answer"; the app stores
// the reply with its opening tag either way.
#pragma once

#include <QString>
#include <QStringView>
#include <string_view>

namespace reasoning {

inline constexpr QStringView kOpen = u"<think>";
inline constexpr QStringView kClose = u"</think>";

struct Parts {
    bool present = false;   // the reply starts with reasoning
    bool closed = false;    // its </think> has come: the answer follows
    QStringView reasoning;  // the text inside the block (a tag still arriving is left out)
    QStringView answer;     // what follows it (leading blank lines left out), or the whole reply
};

// Splits a reply (complete or still streaming). A reply that is a part of "<think>" so far
// (streaming) is neither: both views are empty.
Parts split(QStringView reply);

// The reply as later prompts carry it: the answer alone, as the templates of reasoning models
// expect (they drop earlier turns' reasoning; those without such a rule would otherwise be
// shown it again).
QString withoutReasoning(const QString& reply);

// Whether a rendered prompt ends inside a reasoning block the template opened (DeepSeek-R1's
// "<｜Assistant｜><think>\n"): the model's reply then starts with its reasoning, untagged.
inline bool opensReasoning(std::string_view prompt) {
    while (!prompt.empty() && (prompt.back() == '\n' || prompt.back() == ' '))
        prompt.remove_suffix(1);
    return prompt.ends_with("<think>");
}

}  // namespace reasoning
