#include "text_stream.h"

#include <algorithm>

namespace ember::server {
namespace {

constexpr std::string_view kOpen = "<think>";
constexpr std::string_view kClose = "</think>";

bool is_space(char c) {
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

// The length of the longest end of `text` that is a proper beginning of `tag`.
size_t partial_suffix(std::string_view text, std::string_view tag) {
    for (size_t k = std::min(tag.size() - 1, text.size()); k > 0; k--)
        if (text.substr(text.size() - k) == tag.substr(0, k)) return k;
    return 0;
}

}  // namespace

std::string StopFilter::push(std::string_view text) {
    if (m_stopped) return {};
    m_held += text;
    size_t first = std::string::npos;
    for (const std::string& s : m_stops) first = std::min(first, m_held.find(s));
    if (first != std::string::npos) {
        std::string out = m_held.substr(0, first);
        m_held.clear();
        m_stopped = true;
        return out;
    }
    size_t keep = 0;
    for (const std::string& s : m_stops) keep = std::max(keep, partial_suffix(m_held, s));
    std::string out = m_held.substr(0, m_held.size() - keep);
    m_held.erase(0, m_held.size() - keep);
    return out;
}

std::string StopFilter::flush() {
    std::string out;
    out.swap(m_held);
    return m_stopped ? std::string() : out;
}

ThinkSplitter::ThinkSplitter(bool start_in_reasoning)
    : m_state(start_in_reasoning ? State::Reasoning : State::Start), m_trim(start_in_reasoning) {}

void ThinkSplitter::output(std::string_view text, Parts& out) {
    if (m_trim) {
        while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
        if (!text.empty()) m_trim = false;
    }
    (m_state == State::Reasoning ? out.reasoning : out.content) += text;
}

ThinkSplitter::Parts ThinkSplitter::push(std::string_view text) {
    Parts out;
    m_held += text;
    for (;;) {
        if (m_state == State::Start) {
            // Only a think block at the very start (after whitespace) is reasoning.
            const size_t lead = m_held.find_first_not_of(" \n\r\t");
            if (lead == std::string::npos) return out;  // only whitespace so far
            const std::string_view rest = std::string_view(m_held).substr(lead);
            if (rest.size() < kOpen.size() && kOpen.substr(0, rest.size()) == rest) return out;
            if (rest.substr(0, kOpen.size()) == kOpen) {
                m_held.erase(0, lead + kOpen.size());
                m_state = State::Reasoning;
                m_trim = true;
                continue;
            }
            m_state = State::Content;
            continue;
        }
        if (m_state == State::Content) {
            output(m_held, out);
            m_held.clear();
            return out;
        }
        const size_t close = m_held.find(kClose);  // State::Reasoning
        if (close != std::string::npos) {
            output(std::string_view(m_held).substr(0, close), out);
            m_held.erase(0, close + kClose.size());
            m_state = State::Content;
            m_trim = true;
            continue;
        }
        const size_t keep = partial_suffix(m_held, kClose);
        output(std::string_view(m_held).substr(0, m_held.size() - keep), out);
        m_held.erase(0, m_held.size() - keep);
        return out;
    }
}

ThinkSplitter::Parts ThinkSplitter::flush() {
    Parts out;
    if (m_state == State::Start) m_state = State::Content;
    output(m_held, out);  // an unfinished tag is text after all
    m_held.clear();
    return out;
}

bool prompt_opens_think(std::string_view prompt) {
    while (!prompt.empty() && is_space(prompt.back())) prompt.remove_suffix(1);
    return prompt.size() >= kOpen.size() && prompt.substr(prompt.size() - kOpen.size()) == kOpen;
}

}  // namespace ember::server
