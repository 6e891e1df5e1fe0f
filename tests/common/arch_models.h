// The reference models of ${EMBER_SHARED_DIR}/models/arch (tiny random-weight files of each
// family, converted as llama.cpp converts real checkpoints) and their Hugging Face references
// (NAME.reference.json beside NAME.gguf), listed and read as every test against them does. The
// folder is listed, not named file by file, so files of other shapes and seeds are checked too.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "test_util.h"

namespace ember::test {

// The folder's .gguf files, sorted; one empty name where there is none, so that one skipped
// test says the folder is missing.
inline std::vector<std::string> arch_models() {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(shared_path("models/arch"), ec))
        if (e.path().extension() == ".gguf") out.push_back(e.path().string());
    std::sort(out.begin(), out.end());
    if (out.empty()) out.push_back("");
    return out;
}

// A test's name for a model: the file's stem, "qwen2.f16" -> "qwen2_f16"; "none" for the
// empty name.
inline std::string arch_test_name(const ::testing::TestParamInfo<std::string>& info) {
    if (info.param.empty()) return "none";
    std::string s = std::filesystem::path(info.param).stem().string();
    for (char& c : s)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    return s;
}

// The context a test of `gguf` asks for: `want`, or less where the file runs less (loading
// refuses a longer context than the model's). The references' sequences are at most 40 tokens.
inline int arch_ctx(const std::string& gguf, int want = 128) {
    const auto info = ember::inspect(gguf);
    if (!info.ok()) return want;
    const uint32_t most = info->n_ctx_max ? info->n_ctx_max : info->n_ctx_train;
    return most ? std::min(want, int(most)) : want;
}

// "qwen2.f16.gguf" -> "qwen2.f16.reference.json", parsed into `out` (a fatal failure where it
// is missing: call through ASSERT_NO_FATAL_FAILURE).
inline void read_arch_reference(const std::string& gguf, nlohmann::json& out) {
    std::ifstream f(gguf.substr(0, gguf.size() - 5) + ".reference.json");
    ASSERT_TRUE(f) << "no reference for " << gguf;
    out = nlohmann::json::parse(f);
}

// Relative L2 distance of logits from a reference's (a JSON array); infinite where a logit is
// not finite.
inline double rel_l2_to(std::span<const float> got, const nlohmann::json& want) {
    double num = 0, den = 0;
    for (size_t i = 0; i < want.size(); ++i) {
        const double w = want[i].get<double>(), g = got[i];
        if (!std::isfinite(g)) return INFINITY;
        num += (g - w) * (g - w);
        den += w * w;
    }
    return std::sqrt(num / std::max(den, 1e-30));
}

}  // namespace ember::test
