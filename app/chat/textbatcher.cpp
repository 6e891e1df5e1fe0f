#include "textbatcher.h"

#include <utility>

TextBatcher::TextBatcher(qint64 intervalMs, Clock clock)
    : m_intervalMs(intervalMs), m_clock(std::move(clock)), m_lastTake(m_clock()) {}

bool TextBatcher::add(std::string_view text) {
    m_pending += text;
    return m_clock() - m_lastTake >= m_intervalMs;
}

std::string TextBatcher::take() {
    m_lastTake = m_clock();
    return std::exchange(m_pending, {});
}
