// Weight-times-activation products on the CPU, with runtime ISA dispatch.
#pragma once

#include <cstdint>
#include <vector>

#include "cpu/threadpool.h"
#include "quant/types.h"

namespace ember::cpu {

// A 2-D weight [rows, cols] in a GGUF type; row r starts at data + r * row_stride.
struct WeightView {
    GgmlType type = GgmlType::F32;
    int64_t rows = 0;
    int64_t cols = 0;
    const uint8_t* data = nullptr;
    uint64_t row_stride = 0;  // bytes
};

// Scratch reused across calls (quantized activations); grows, never shrinks.
struct MatmulScratch {
    std::vector<uint8_t> buf;
};

// y[t * w.rows + r] = sum_c W[r, c] * x[t * w.cols + c], for t in [0, n_tokens).
// F32/F16/BF16 weights are computed in float; quantized weights may quantize x per block
// to 8 bits first (as ggml does), which changes results by about 1e-3 relative.
void matmul(ThreadPool& pool, const WeightView& w, const float* x, int n_tokens, float* y,
            MatmulScratch& scratch);

// Copies row `row` of w into dst as floats (embedding lookup).
void get_row(const WeightView& w, int64_t row, float* dst);

// The instruction set chosen at startup: "avx512_vnni", "avx512", "avx2", "portable".
// EMBER_CPU_ISA=avx2|avx512|portable|... forces a lower level (for tests).
const char* isa_name();

}  // namespace ember::cpu
