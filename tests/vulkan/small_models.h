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
#include "gguf/gguf.h"
#include "gguf/writer.h"
#include "quant/quant.h"
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

// The same file with every matrix dequantized to F32 (metadata and everything else unchanged):
// the CPU's reference for a quantized file on the device, which multiplies the dequantized
// weights in floating point (the CPU on the quantized file rounds activations to 8 bits).
inline Status write_dequantized_twin(const std::string& from, const std::string& to) {
    EMBER_ASSIGN_OR_RETURN(auto file, gguf::File::open(from));
    gguf::Writer w;
    for (const auto& kv : file->metadata()) {
        if (kv.key == "general.alignment") continue;
        if (kv.key == "general.file_type") {
            w.set_u32(kv.key, 0);  // all F32
            continue;
        }
        w.set_value(kv.key, kv.value);
    }
    w.set_alignment(uint32_t(file->alignment()));
    for (const auto& t : file->tensors()) {
        std::vector<uint64_t> dims(t.ne, t.ne + t.n_dims);
        const uint8_t* src = file->tensor_data(t);
        if (t.type == GgmlType::F32) {
            w.add_tensor(t.name, t.type, dims, std::vector<uint8_t>(src, src + t.n_bytes));
            continue;
        }
        const auto tt = type_traits(t.type);
        if (!tt) return make_error("test.type", "unknown type of " + t.name);
        const uint64_t cols = t.ne[0], rows = t.n_elements() / cols;
        const uint64_t stride = row_bytes(*tt, cols);
        std::vector<uint8_t> bytes(t.n_elements() * 4);
        for (uint64_t r = 0; r < rows; ++r)
            dequantize_row(t.type, src + r * stride,
                           reinterpret_cast<float*>(bytes.data()) + r * cols, int64_t(cols));
        w.add_tensor(t.name, GgmlType::F32, dims, std::move(bytes));
    }
    return w.write(to);
}

}  // namespace ember::vulkan::test
