// Switches read from the environment (EMBER_VULKAN_FUSED=0 and the like, for comparisons and
// diagnostics).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

namespace ember {

// Whether the environment variable `name` is set to exactly `value`.
inline bool env_is(const char* name, const char* value) {
    const char* e = std::getenv(name);
    return e && std::strcmp(e, value) == 0;
}

// The environment variable `name` as a non-negative integer (negative reads as 0), or
// `fallback` when it is not set.
inline uint32_t env_u32(const char* name, uint32_t fallback) {
    const char* e = std::getenv(name);
    if (!e) return fallback;
    const int v = std::atoi(e);
    return v > 0 ? uint32_t(v) : 0u;
}

// The environment variable `name`, or "" when it is not set.
inline std::string env_str(const char* name) {
    const char* e = std::getenv(name);
    return e ? e : "";
}

}  // namespace ember
