// A random quantized weight on the host with its dequantized values, for the decode kernels' tests.
#pragma once

#include <cstdint>
#include <vector>

#include "model/llama.h"
#include "quant/quant.h"
#include "vk_test_util.h"

namespace ember::vulkan::test {

// A random [rows][cols] weight of `type` on the host, and its dequantized values.
struct Weight {
    GgmlType type;
    int64_t rows, cols;
    uint64_t row_stride;
    std::vector<uint8_t> data;
    std::vector<float> f;  // dequantized
    Tensor tensor(const char* name) const {
        Tensor t;
        t.name = name;
        t.type = type;
        t.ne[0] = cols;
        t.ne[1] = rows;
        t.data = data.data();
        t.n_bytes = data.size();
        t.row_stride = row_stride;
        return t;
    }
};

inline Weight make_weight(GgmlType type, int64_t rows, int64_t cols, uint64_t seed) {
    Weight w{type, rows, cols, row_bytes(*type_traits(type), uint64_t(cols)), {}, {}};
    w.data.resize(w.row_stride * uint64_t(rows));
    w.f.resize(size_t(rows * cols));
    const auto v = random_floats(size_t(rows * cols), seed);
    for (int64_t r = 0; r < rows; ++r) {
        quantize_row(type, &v[r * cols], &w.data[r * w.row_stride], cols);
        dequantize_row(type, &w.data[r * w.row_stride], &w.f[r * cols], cols);
    }
    return w;
}

}  // namespace ember::vulkan::test
