// Engine-internal logging through the callback set by ember::set_log_callback.
#pragma once

#include <cstdio>
#include <string>

#include "ember/ember.h"

namespace ember {

void log_message(LogLevel level, const std::string& message);

template <class... Args>
void logf(LogLevel level, const char* fmt, Args... args) {
    char buf[1024];
    std::snprintf(buf, sizeof buf, fmt, args...);
    log_message(level, buf);
}

#define EMBER_LOG_DEBUG(...) ::ember::logf(::ember::LogLevel::Debug, __VA_ARGS__)
#define EMBER_LOG_INFO(...) ::ember::logf(::ember::LogLevel::Info, __VA_ARGS__)
#define EMBER_LOG_WARN(...) ::ember::logf(::ember::LogLevel::Warn, __VA_ARGS__)
#define EMBER_LOG_ERROR(...) ::ember::logf(::ember::LogLevel::Error, __VA_ARGS__)

// Human-readable byte counts: "4.30 GiB".
std::string format_bytes(uint64_t bytes);

}  // namespace ember
