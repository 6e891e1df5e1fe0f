// Helpers shared by the engine's tests.
#pragma once

#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace ember::test {

inline std::string shared_dir() {
    if (const char* env = std::getenv("EMBER_SHARED_DIR")) return env;
    return EMBER_SHARED_DIR;
}
inline std::string shared_path(const std::string& rel) {
    return shared_dir() + "/" + rel;
}
inline std::string stories_model() {
    return shared_path("models/stories260K.gguf");
}
inline std::string cli_path() {
    return EMBER_CLI_PATH;
}
// A scratch directory unique to the running test binary.
inline std::filesystem::path temp_dir() {
    auto p = std::filesystem::temp_directory_path() / ("ember-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(p);
    return p;
}

}  // namespace ember::test
