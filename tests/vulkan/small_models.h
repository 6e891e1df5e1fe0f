// Models for tests through the public API: quantized files that `ember-cli mkmodel` writes at
// test sizes, loaded on one backend, and their logits compared.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "run_cli.h"
#include "vk_test_util.h"

namespace ember::vulkan::test {

// `ember-cli mkmodel` of `preset` in `type` at test sizes (a 256-wide embedding, 4 heads of 64,
// 2 K/V heads, FFN 512, 512 tokens), then `extra` options (a later option wins: "--ffn",
// "384"); the file's layers are the preset's unless `extra` gives "--layers".
inline ember::test::CliResult make_small_model(const std::string& path, const std::string& preset,
                                               const std::string& type, const std::string& seed,
                                               const std::vector<std::string>& extra) {
    std::vector<std::string> args = {
        "mkmodel", "-o",      path,      "--preset", preset,       "--type",    type,
        "--embd",  "256",     "--heads", "4",        "--kv-heads", "2",         "--ffn",
        "512",     "--vocab", "512",     "--seed",   seed,         "--threads", "1"};
    args.insert(args.end(), extra.begin(), extra.end());
    return ember::test::run_cli(cli(), args);
}

// The file loaded on `kind` (the test device for Vulkan), 2 threads; null, with a failure, where
// it does not load or runs on another backend.
inline std::unique_ptr<Model> load_on(const std::string& path, BackendKind kind, int n_ctx) {
    LoadParams p;
    p.backend = kind;
    p.device = kind == BackendKind::Vulkan ? test_device() : "";
    p.n_threads = 2;
    p.n_ctx = n_ctx;
    auto m = Model::load(path, p);
    EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().message);
    if (!m.ok()) return nullptr;
    EXPECT_EQ((*m)->backend().kind, kind) << (*m)->backend().fallback_reason;
    return std::move(m).value();
}

// Relative L2 distance of two backends' logits; infinite where `got` has a value that is not
// finite.
inline double rel_l2(std::span<const float> got, std::span<const float> want) {
    double num = 0, den = 0;
    for (size_t i = 0; i < want.size(); ++i) {
        if (!std::isfinite(got[i])) return INFINITY;
        num += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
        den += double(want[i]) * want[i];
    }
    return std::sqrt(num / std::max(den, 1e-30));
}

}  // namespace ember::vulkan::test
