// Milliseconds since construction, for the load's per-phase timings in the log.
#pragma once

#include <chrono>

namespace ember {

class Stopwatch {
public:
    double ms() const {
        return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - m_start)
            .count();
    }

private:
    std::chrono::steady_clock::time_point m_start = std::chrono::steady_clock::now();
};

}  // namespace ember
