// Internal interface between matmul.cpp and its per-ISA kernel files.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cpu/matmul.h"

namespace ember::cpu {

// Activations quantized per 32-block to int8 (Q8_0-like), one record per token:
//   qs: int8[cols], d: float[nb_pad] (block scale), s: float[nb_pad] (d * sum of the block's qs).
// nb_pad rounds the block count up to 8 and the padding holds zeros, so kernels may read
// scales and sums eight blocks at a time.
struct ActQ8 {
    uint8_t* base = nullptr;
    size_t stride = 0;  // bytes per token
    int64_t cols = 0;
    int64_t nb_pad = 0;

    static constexpr size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }
    static size_t qs_bytes(int64_t cols) { return align_up(size_t(cols), 64); }
    static size_t token_bytes(int64_t cols) {
        size_t nb_pad = align_up(size_t(cols / 32), 8);
        return align_up(qs_bytes(cols) + 2 * nb_pad * sizeof(float), 64);
    }
    int8_t* qs(int t) const { return reinterpret_cast<int8_t*>(base + t * stride); }
    float* d(int t) const { return reinterpret_cast<float*>(base + t * stride + qs_bytes(cols)); }
    float* s(int t) const { return d(t) + nb_pad; }
};

struct KernelSet {
    const char* name;
    // y rows [r0, r1) for all tokens, quantized weights against quantized activations.
    // Null means the portable path (dequantize rows to floats).
    void (*quant_rows)(const WeightView& w, int64_t r0, int64_t r1, const ActQ8& a, int n_tokens,
                       float* y);
    // y rows [r0, r1) for F32/F16/BF16 weights.
    void (*float_rows)(const WeightView& w, int64_t r0, int64_t r1, const float* x, int n_tokens,
                       float* y);
    // One token's activations (cols a multiple of 32) into qs/d/s as described at ActQ8.
    void (*quantize_act)(const float* x, int64_t cols, int8_t* qs, float* d, float* s);
};

const KernelSet* kernels_portable();
const KernelSet* kernels_avx2();    // null when not compiled in
const KernelSet* kernels_avx512();  // AVX-512 with VNNI; null when not compiled in

// Scalar reference for quantize_act (shared by the portable set).
void quantize_act_scalar(const float* x, int64_t cols, int8_t* qs, float* d, float* s);

// Re-selects the kernel set ("portable", "avx2", "avx512"; capped at what the CPU supports).
// For tests; not thread-safe against concurrent matmuls. Returns the name now in use.
const char* select_isa(const char* level);

}  // namespace ember::cpu
