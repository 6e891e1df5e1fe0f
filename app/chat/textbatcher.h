// Streamed text gathered for the UI: tokens arrive far faster than a window can repaint, so
// the worker hands text over at most once per interval (and at the end). The clock is
// injected: the worker passes a monotonic one, tests a fake.
#pragma once

#include <QtGlobal>
#include <functional>
#include <string>
#include <string_view>

class TextBatcher {
public:
    using Clock = std::function<qint64()>;  // milliseconds, never decreasing

    TextBatcher(qint64 intervalMs, Clock clock);
    // Adds text; true when at least one interval has passed since the last take() (or since
    // construction), i.e. when the caller should take() and hand the text over now.
    bool add(std::string_view text);
    // The text gathered since the last take(); starts the next interval.
    std::string take();
    bool empty() const { return m_pending.empty(); }

private:
    qint64 m_intervalMs;
    Clock m_clock;
    qint64 m_lastTake;
    std::string m_pending;
};
