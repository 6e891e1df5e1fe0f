#include "vulkan/fault.h"

#include <cstdlib>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

#include "common/log.h"
#include "common/overrides.h"

namespace ember::vulkan::fault {
namespace {

struct Rule {
    bool on = false;
    uint64_t nth = 0;  // 0: every call (vk_pipeline only)
    uint64_t seen = 0;
    uint64_t fired = 0;
};

struct State {
    std::mutex mutex;
    Rule rules[6];
    bool armed = false;       // vk_device_lost counts only after a model loaded
    std::set<VkDevice> lost;  // devices that reported VK_ERROR_DEVICE_LOST
};

Rule& rule(State& s, Kind k) {
    return s.rules[int(k)];
}

// Parses "name[:N],..." into rules; an unknown name is reported, never ignored silently.
bool parse(const char* env, State& s) {
    bool any = false;
    std::string_view rest(env);
    while (!rest.empty()) {
        size_t comma = rest.find(',');
        std::string_view item = rest.substr(0, comma);
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
        if (item.empty()) continue;
        size_t colon = item.find(':');
        std::string_view name = item.substr(0, colon);
        uint64_t n = 0;
        bool has_n = colon != std::string_view::npos;
        if (has_n) {
            std::string digits(item.substr(colon + 1));
            char* end = nullptr;
            n = std::strtoull(digits.c_str(), &end, 10);
            if (digits.empty() || *end != '\0' || n == 0) {
                EMBER_LOG_WARN("vulkan: EMBER_FAULT: '%.*s' needs a count >= 1 after ':'",
                               int(item.size()), item.data());
                continue;
            }
        }
        Kind k;
        if (name == "vk_alloc") {
            k = Kind::Alloc;
        } else if (name == "vk_device_lost") {
            k = Kind::DeviceLost;
        } else if (name == "vk_pipeline") {
            k = Kind::Pipeline;
        } else if (name == "vk_slow") {
            k = Kind::Slow;
        } else if (name == "vk_hang") {
            k = Kind::Hang;
        } else if (name == "vk_wait_lost") {
            k = Kind::WaitLost;
        } else {
            EMBER_LOG_WARN(
                "vulkan: EMBER_FAULT: unknown fault '%.*s' (expected vk_alloc:N, "
                "vk_device_lost:N, vk_pipeline[:N], vk_slow:N, vk_hang:N or vk_wait_lost:N)",
                int(name.size()), name.data());
            continue;
        }
        Rule& r = rule(s, k);
        r.on = true;
        r.nth = has_n ? n : (k == Kind::Pipeline ? 0 : 1);
        any = true;
    }
    if (any) EMBER_LOG_WARN("vulkan: EMBER_FAULT=%s: injecting Vulkan faults (tests only)", env);
    return any;
}

State& state() {
    static State s;
    return s;
}

}  // namespace

bool enabled() {
    static const bool on = [] {
        const std::string env = read_overrides().fault;
        return !env.empty() && parse(env.c_str(), state());
    }();
    return on;
}

VkResult inject(Kind kind, VkDevice device) {
    if (!enabled()) return VK_SUCCESS;
    State& s = state();
    std::lock_guard lock(s.mutex);
    Rule& r = rule(s, kind);
    if (kind == Kind::DeviceLost && s.lost.count(device)) {
        ++r.fired;
        return VK_ERROR_DEVICE_LOST;  // a lost device stays lost
    }
    if (!r.on || (kind == Kind::DeviceLost && !s.armed)) return VK_SUCCESS;
    ++r.seen;
    if (r.nth != 0 && r.seen != r.nth) return VK_SUCCESS;
    ++r.fired;
    switch (kind) {
        case Kind::Alloc:
            EMBER_LOG_WARN("vulkan: EMBER_FAULT: failing device memory allocation #%llu",
                           (unsigned long long)r.seen);
            return VK_ERROR_OUT_OF_DEVICE_MEMORY;
        case Kind::DeviceLost:
            EMBER_LOG_WARN("vulkan: EMBER_FAULT: losing the device at submission #%llu after load",
                           (unsigned long long)r.seen);
            s.lost.insert(device);
            return VK_ERROR_DEVICE_LOST;
        case Kind::Pipeline:
            EMBER_LOG_WARN("vulkan: EMBER_FAULT: failing pipeline creation #%llu",
                           (unsigned long long)r.seen);
            return VK_ERROR_UNKNOWN;
        default:
            break;
    }
    return VK_SUCCESS;
}

WaitFault wait_begins(VkDevice device) {
    if (!enabled()) return WaitFault::None;
    State& s = state();
    std::lock_guard lock(s.mutex);
    // A slow device is slow from the N-th wait on; hang and loss strike at the N-th wait after
    // the load.
    Rule& slow = rule(s, Kind::Slow);
    if (slow.on && ++slow.seen >= slow.nth) {
        ++slow.fired;
        return WaitFault::Slow;
    }
    if (!s.armed) return WaitFault::None;
    for (Kind k : {Kind::Hang, Kind::WaitLost}) {
        Rule& r = rule(s, k);
        if (!r.on || ++r.seen != r.nth) continue;
        ++r.fired;
        if (k == Kind::Hang) {
            EMBER_LOG_WARN("vulkan: EMBER_FAULT: fence wait #%llu after load never ends",
                           (unsigned long long)r.seen);
            return WaitFault::Hang;
        }
        EMBER_LOG_WARN("vulkan: EMBER_FAULT: losing the device at fence wait #%llu after load",
                       (unsigned long long)r.seen);
        s.lost.insert(device);
        return WaitFault::Lost;
    }
    return WaitFault::None;
}

void model_loaded() {
    if (!enabled()) return;
    std::lock_guard lock(state().mutex);
    state().armed = true;
}

void device_destroyed(VkDevice device) {
    if (!enabled()) return;
    std::lock_guard lock(state().mutex);
    state().lost.erase(device);
}

uint64_t fired(Kind kind) {
    if (!enabled()) return 0;
    std::lock_guard lock(state().mutex);
    return rule(state(), kind).fired;
}

}  // namespace ember::vulkan::fault
