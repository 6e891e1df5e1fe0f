#include "perfmetrics.h"

#include <algorithm>
#include <chrono>
#include <cmath>

PerfMetrics::PerfMetrics(const Options& options)
    : m_options(options),
      m_capacity(static_cast<size_t>(
          std::max(1.0, std::round(options.historyMs / options.sampleIntervalMs)))) {}

double PerfMetrics::nowMs() {
    using namespace std::chrono;
    return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

void PerfMetrics::beginResponse(double nowMs) {
    m_generating = true;
    m_finished = false;
    m_beginMs = nowMs;
    m_firstTokenMs = m_lastTokenMs = -1;
    m_tokenCount = 0;
    m_recent.clear();
    m_frozenRate = 0;
    m_contextBefore = m_totals.contextUsed;
    m_totals = {};
}

void PerfMetrics::setPrompt(int total, int evaluated) {
    if (!m_generating) return;
    m_totals.promptTotal = total;
    m_totals.promptTokens = evaluated;
}

int PerfMetrics::contextUsed() const {
    if (!m_generating) return m_totals.contextUsed;
    if (m_totals.promptTotal <= 0) return m_contextBefore;
    return m_totals.promptTotal + m_tokenCount;
}

void PerfMetrics::reset() {
    *this = PerfMetrics(m_options);
}

void PerfMetrics::addToken(double timeMs) {
    if (m_firstTokenMs < 0) m_firstTokenMs = timeMs;
    m_lastTokenMs = std::max(m_lastTokenMs, timeMs);
    ++m_tokenCount;
    m_recent.push_back(timeMs);
    // Keep what the live rate and the samples not yet taken can still ask for.
    const double oldestNeeded = m_nextSampleMs >= 0 ? std::min(m_nextSampleMs, timeMs) : timeMs;
    prune(oldestNeeded - m_options.windowMs);
}

void PerfMetrics::prune(double beforeMs) {
    while (!m_recent.empty() && m_recent.front() <= beforeMs) m_recent.pop_front();
}

void PerfMetrics::finishResponse(const ResponseTotals& totals) {
    if (!m_generating) return;
    m_frozenRate = m_lastTokenMs >= 0 ? windowRate(m_lastTokenMs) : 0;
    m_generating = false;
    m_finished = true;
    m_totals = totals;
}

double PerfMetrics::windowRate(double atMs) const {
    if (m_firstTokenMs < 0 || atMs <= m_firstTokenMs) return 0;
    // The first token only anchors the interval: n tokens after it took (t - first).
    const double start = std::max(atMs - m_options.windowMs, m_firstTokenMs);
    const double span = atMs - start;
    if (span <= 0) return 0;
    const auto n = std::count_if(m_recent.begin(), m_recent.end(),
                                 [&](double t) { return t > start && t <= atMs; });
    return static_cast<double>(n) * 1000.0 / span;
}

double PerfMetrics::liveTokensPerSecond(double nowMs) const {
    return m_generating ? windowRate(nowMs) : m_frozenRate;
}

double PerfMetrics::responseTokensPerSecond() const {
    if (m_finished && m_totals.tokensPerSecond > 0) return m_totals.tokensPerSecond;
    if (m_tokenCount < 2 || m_lastTokenMs <= m_firstTokenMs) return 0;
    return (m_tokenCount - 1) * 1000.0 / (m_lastTokenMs - m_firstTokenMs);
}

double PerfMetrics::promptTokensPerSecond() const {
    if (!m_finished || m_totals.promptMs <= 0) return 0;
    return m_totals.promptTokens * 1000.0 / m_totals.promptMs;
}

double PerfMetrics::timeToFirstTokenMs() const {
    if (m_finished && m_totals.timeToFirstTokenMs > 0) return m_totals.timeToFirstTokenMs;
    if (m_firstTokenMs < 0 || m_beginMs < 0) return -1;
    return m_firstTokenMs - m_beginMs;
}

int PerfMetrics::generatedTokens() const {
    return m_finished && m_totals.generatedTokens > 0 ? m_totals.generatedTokens : m_tokenCount;
}

bool PerfMetrics::sampleUntil(double nowMs) {
    const double step = m_options.sampleIntervalMs;
    if (m_nextSampleMs < 0) m_nextSampleMs = nowMs;
    if (nowMs < m_nextSampleMs) return false;
    // After a long stall only the last history's worth of instants matters.
    const double late = std::floor((nowMs - m_nextSampleMs) / step);
    if (late >= static_cast<double>(m_capacity)) m_nextSampleMs += (late - m_capacity + 1) * step;
    while (m_nextSampleMs <= nowMs) {
        m_history.push_back(windowRate(m_nextSampleMs));
        if (m_history.size() > m_capacity) m_history.pop_front();
        m_nextSampleMs += step;
    }
    if (!m_generating) prune(std::min(m_nextSampleMs, m_lastTokenMs) - m_options.windowMs);
    return true;
}
