// Switches read from the environment (EMBER_VULKAN_FUSED=0 and the like, for comparisons and
// diagnostics).
#pragma once

#include <cstdlib>
#include <cstring>

namespace ember {

// Whether the environment variable `name` is set to exactly `value`.
inline bool env_is(const char* name, const char* value) {
    const char* e = std::getenv(name);
    return e && std::strcmp(e, value) == 0;
}

}  // namespace ember
