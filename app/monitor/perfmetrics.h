// The numbers of the performance overlay, computed from timestamps that the caller passes in
// (milliseconds on one monotonic clock, see nowMs()), so that they are testable without clocks.
#pragma once

#include <cstddef>
#include <deque>

// What the engine measured for a finished response; zero where it did not measure.
struct ResponseTotals {
    int promptTokens = 0;  // evaluated, not reused from the cache
    int promptTotal = 0;   // the whole prompt: reused from the cache and evaluated
    double promptMs = 0;
    double timeToFirstTokenMs = 0;
    double tokensPerSecond = 0;
    int generatedTokens = 0;
    int contextUsed = 0;
};

class PerfMetrics {
public:
    struct Options {
        double windowMs = 1000;         // of the live tokens/s
        double sampleIntervalMs = 500;  // of the history (sparkline)
        double historyMs = 60000;       // span of the history
    };

    PerfMetrics() : PerfMetrics(Options{}) {}
    explicit PerfMetrics(const Options& options);

    // steady_clock in ms: the worker stamps tokens with it and the UI samples with it.
    static double nowMs();

    void beginResponse(double nowMs);
    // Forgets every response and the history (another model: its numbers are not comparable).
    void reset();
    // The prompt of the response under way: its length and how much of it is evaluated.
    void setPrompt(int total, int evaluated);
    void addToken(double timeMs);
    // Ends the response; the engine's own totals replace the estimates where it gives them.
    void finishResponse(const ResponseTotals& totals);
    bool generating() const { return m_generating; }

    // Tokens per second over the window that ends at atMs; only tokens of the current (or last)
    // response count, and the window never reaches back before its first token. atMs must not
    // precede both the newest token and the next sampling instant: older tokens are dropped.
    double windowRate(double atMs) const;
    // The moving rate while generating; after a response, its value at the last token, so the
    // number stays readable.
    double liveTokensPerSecond(double nowMs) const;
    // The whole response (so far): the engine's figure when finished, else from timestamps.
    double responseTokensPerSecond() const;
    double promptTokensPerSecond() const;  // 0 = unknown
    double timeToFirstTokenMs() const;     // -1 = unknown
    int generatedTokens() const;
    int promptTokens() const { return m_totals.promptTokens; }
    int promptTotal() const { return m_totals.promptTotal; }
    // Live while generating: the prompt and the tokens so far (the previous response's value
    // until the prompt is known); the engine's figure once finished.
    int contextUsed() const;

    // Appends the rate at each sampling instant up to nowMs (several if calls came late, at most
    // a history's worth); returns whether it added any.
    bool sampleUntil(double nowMs);
    const std::deque<double>& history() const { return m_history; }  // oldest first
    size_t historyCapacity() const { return m_capacity; }

private:
    void prune(double beforeMs);

    Options m_options;
    size_t m_capacity;
    bool m_generating = false;
    double m_beginMs = -1;
    double m_firstTokenMs = -1;
    double m_lastTokenMs = -1;
    int m_tokenCount = 0;         // of this response
    std::deque<double> m_recent;  // token times that a window may still need
    double m_frozenRate = 0;      // live rate at the end of the last response
    int m_contextBefore = 0;      // the context when this response began
    ResponseTotals m_totals;      // of the last finished response
    bool m_finished = false;
    double m_nextSampleMs = -1;
    std::deque<double> m_history;
};
