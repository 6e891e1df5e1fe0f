#include "inferencevalues.h"

#include <array>
#include <utility>

namespace StopReason {
namespace {
constexpr std::array<std::pair<Value, const char*>, 5> kNames{{{EndOfText, "eog"},
                                                               {MaxTokens, "max_tokens"},
                                                               {Cancelled, "cancelled"},
                                                               {ContextFull, "context_full"},
                                                               {Callback, "callback"}}};
}  // namespace

QString name(Value reason) {
    for (const auto& [value, text] : kNames)
        if (value == reason) return QString::fromLatin1(text);
    return {};
}

Value fromName(const std::string& name) {
    for (const auto& [value, text] : kNames)
        if (name == text) return value;
    return None;
}
}  // namespace StopReason
