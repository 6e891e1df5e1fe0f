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

// Activations for K-quant weights, per token, one scale per 256 elements (ggml's Q8_K), so a
// super-block's dot stays in integers:
//   qs: int8[cols]; d: float[cols / 256]; bsums: int16[cols / 16], each the sum of 16 qs.
struct ActQ8K {
    uint8_t* base = nullptr;
    int64_t cols = 0;  // a multiple of 256

    static size_t token_bytes(int64_t cols) {
        return ActQ8::align_up(size_t(cols) + size_t(cols / 256) * 4 + size_t(cols / 16) * 2, 64);
    }
    size_t stride() const { return token_bytes(cols); }
    int8_t* qs(int t) const { return reinterpret_cast<int8_t*>(base + t * stride()); }
    float* d(int t) const { return reinterpret_cast<float*>(base + t * stride() + cols); }
    int16_t* bsums(int t) const { return reinterpret_cast<int16_t*>(d(t) + cols / 256); }
};

// Activations for Packed weights, per token, in groups of 16 blocks (zero padded):
//   qs: int8[ng * 512]: per group 8 vectors of 64 bytes, lane k of vector j holding block k's
//       elements 4j..4j+3 (the transposed order of the packed weights, see pack.cpp);
//   dx: float[ng * 16], the block scales;
//   soff: float[ng * 16], offset * d * sum(qs) per block, where the kernels read weights as
//       unsigned q + offset (8 for Q4_0, 128 for Q8_0).
struct ActPacked {
    uint8_t* base = nullptr;
    int64_t ng = 0;

    static size_t token_bytes(int64_t ng) { return size_t(ng) * (512 + 2 * 16 * 4); }
    size_t stride() const { return token_bytes(ng); }
    int8_t* qs(int t) const { return reinterpret_cast<int8_t*>(base + t * stride()); }
    float* dx(int t) const { return reinterpret_cast<float*>(base + t * stride() + ng * 512); }
    float* soff(int t) const { return dx(t) + ng * 16; }
};

// Packed weight planes (see WeightLayout): quants of row r, then its nb fp16 scales.
inline int packed_quant_bytes(GgmlType t) {
    return t == GgmlType::Q4_0 ? 16 : 32;
}
inline const uint8_t* packed_qs(const WeightView& w, int64_t r) {
    return w.data + r * (w.cols / 32) * packed_quant_bytes(w.type);
}
inline const uint16_t* packed_scales(const WeightView& w, int64_t r) {
    const uint8_t* plane = w.data + w.rows * (w.cols / 32) * packed_quant_bytes(w.type);
    return reinterpret_cast<const uint16_t*>(plane) + r * (w.cols / 32);
}

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
    // y rows [r0, r1) for Packed Q4_0/Q8_0 weights; null where the set has none (matmul then
    // dequantizes the packed rows).
    void (*packed_rows)(const WeightView& w, int64_t r0, int64_t r1, const ActPacked& a,
                        int n_tokens, float* y);
    // Float helpers for attention: dot product and y += a * x, n a multiple of 16 or not.
    float (*dot)(const float* a, const float* b, int n);
    void (*axpy)(float a, const float* x, float* y, int n);
    // out[i] = silu(gate[i]) * up[i]
    void (*silu_mul)(const float* gate, const float* up, float* out, int n);
    // What packed_rows adds to Q8_0 weight quants, so what the activations' offset term
    // removes: 128 where the quants are read unsigned (vpdpbusd), 0 where signed (AVX2).
    int packed_q8_offset = 0;
    // y rows [r0, r1) for Q4_K/Q5_K/Q6_K weights against ActQ8K activations; null where the
    // set has none (matmul then uses quant_rows with per-32 activations).
    void (*kquant_rows)(const WeightView& w, int64_t r0, int64_t r1, const ActQ8K& a, int n_tokens,
                        float* y) = nullptr;
    // quantize_act_k (below) with SIMD; null: the scalar one.
    void (*quantize_act_k)(const float* x, int64_t cols, int8_t* qs, float* d,
                           int16_t* bsums) = nullptr;
    // out[i] = gelu_tanh(gate[i]) * up[i], GELU's tanh form (Gemma's gate)
    void (*gelu_tanh_mul)(const float* gate, const float* up, float* out, int n) = nullptr;
    // x[i] = cap * tanh(x[i] / cap): Gemma 2's soft-caps of attention scores and logits
    void (*softcap)(float* x, int n, float cap) = nullptr;
};

// The kernel set in use (see select_isa).
const KernelSet& active_kernels();

const KernelSet* kernels_portable();
const KernelSet* kernels_avx2();    // null when not compiled in
const KernelSet* kernels_avx512();  // AVX-512 with VNNI; null when not compiled in

// Scalar reference for quantize_act (shared by the portable set).
void quantize_act_scalar(const float* x, int64_t cols, int8_t* qs, float* d, float* s);
// One token's activations (cols a multiple of 256) into qs/d/bsums as described at ActQ8K.
void quantize_act_k(const float* x, int64_t cols, int8_t* qs, float* d, int16_t* bsums);

// Packed-layout helpers (pack.cpp): elements [32*b0, 32*(b0+n)) of row r as floats; the
// float fallback for packed rows; natural-order Q8 activations of token t into a.
void dequantize_packed(const WeightView& w, int64_t r, int64_t b0, int64_t n, float* dst);
void packed_rows_portable(const WeightView& w, int64_t r0, int64_t r1, const float* x, int n_tokens,
                          float* y);
void pack_activations(const int8_t* qs, const float* d, const float* s, int64_t cols, int offset,
                      const ActPacked& a, int t);

// Re-selects the kernel set ("portable", "avx2", "avx512"; capped at what the CPU supports).
// For tests; not thread-safe against concurrent matmuls. Returns the name now in use.
const char* select_isa(const char* level);

}  // namespace ember::cpu
