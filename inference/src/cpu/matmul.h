// Weight-times-activation products on the CPU, with runtime ISA dispatch.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "cpu/threadpool.h"
#include "quant/types.h"

namespace ember::cpu {

// How a weight's bytes are arranged. Ggml: rows of GGUF blocks. Packed: the CPU backend's
// load-time rearrangement of Q4_0/Q8_0 (see pack.cpp): the same bytes split into a plane of
// quants (rows * cols/32 * 16 or 32 bytes, blocks' halves interleaved per 4 blocks) followed
// by a plane of fp16 scales, so SIMD loads need no gathering. Same size as the original.
enum class WeightLayout : uint8_t { Ggml, Packed };

// A 2-D weight [rows, cols] in a GGUF type; row r starts at data + r * row_stride (Ggml).
struct WeightView {
    GgmlType type = GgmlType::F32;
    int64_t rows = 0;
    int64_t cols = 0;
    const uint8_t* data = nullptr;
    uint64_t row_stride = 0;  // bytes
    WeightLayout layout = WeightLayout::Ggml;
};

// Whether repacking w pays off with the kernels in use (Q4_0/Q8_0 with AVX-512 VNNI).
bool should_pack(const WeightView& w);
// Writes w in the Packed layout to dst (w.rows * w.row_stride bytes, 64-byte aligned) using
// the pool; returns the view of dst. w must be Q4_0 or Q8_0 in the Ggml layout.
WeightView pack_weight(ThreadPool& pool, const WeightView& w, uint8_t* dst);

// Scratch reused across calls (quantized activations); grows, never shrinks.
struct MatmulScratch {
    std::vector<uint8_t> buf;
};

// y[t * w.rows + r] = sum_c W[r, c] * x[t * w.cols + c], for t in [0, n_tokens).
// F32/F16/BF16 weights are computed in float; quantized weights may quantize x per block
// to 8 bits first (as ggml does), which changes results by about 1e-3 relative.
void matmul(ThreadPool& pool, const WeightView& w, const float* x, int n_tokens, float* y,
            MatmulScratch& scratch);

// One matrix of matmul_many: y [n_tokens][w->rows]. A null w or one without rows is skipped.
struct MatmulOut {
    const WeightView* w = nullptr;
    float* y = nullptr;
};
// matmul of up to 4 matrices (any types) with the same cols on the same x: the activations
// are quantized once and all the matrices' rows share one pass over the pool, so Q/K/V or
// gate/up cost one wait for the threads instead of three or two.
void matmul_many(ThreadPool& pool, std::span<const MatmulOut> outs, const float* x, int n_tokens,
                 MatmulScratch& scratch);

// Copies row `row` of w into dst as floats (embedding lookup); either layout.
void get_row(const WeightView& w, int64_t row, float* dst);

// The instruction set chosen at startup: "avx512_vnni", "avx512", "avx2", "portable".
// EMBER_CPU_ISA=avx2|avx512|portable|... forces a lower level (for tests).
const char* isa_name();

}  // namespace ember::cpu
