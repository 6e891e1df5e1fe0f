#include "common/log.h"

#include <atomic>
#include <mutex>

namespace ember {
namespace {

void default_log(LogLevel level, const char* message, void*) {
    static const char* names[] = {"debug", "info", "warning", "error"};
    std::fprintf(stderr, "ember %s: %s\n", names[int(level)], message);
}

std::mutex g_mutex;
LogCallback g_callback = default_log;
void* g_user = nullptr;
std::atomic<int> g_min_level{int(LogLevel::Warn)};

}  // namespace

const char* version() {
    return EMBER_VERSION;
}

void set_log_callback(LogCallback cb, void* user) {
    std::lock_guard lock(g_mutex);
    g_callback = cb;
    g_user = user;
}

void set_log_level(LogLevel min_level) {
    g_min_level = int(min_level);
}

void log_message(LogLevel level, const std::string& message) {
    if (int(level) < g_min_level) return;
    std::lock_guard lock(g_mutex);
    if (g_callback) g_callback(level, message.c_str(), g_user);
}

std::string format_bytes(uint64_t bytes) {
    char buf[64];
    const double b = double(bytes);
    if (b >= 1024.0 * 1024 * 1024)
        std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1024.0 * 1024 * 1024));
    else if (b >= 1024.0 * 1024)
        std::snprintf(buf, sizeof buf, "%.1f MiB", b / (1024.0 * 1024));
    else if (b >= 1024.0)
        std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
    else
        std::snprintf(buf, sizeof buf, "%llu B", (unsigned long long)bytes);
    return buf;
}

}  // namespace ember
