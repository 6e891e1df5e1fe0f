// Conversions and (de)quantization of GGUF weight types, reference (scalar) versions.
#pragma once

#include <cstdint>

#include "quant/types.h"

namespace ember {

float fp16_to_fp32(uint16_t h);
uint16_t fp32_to_fp16(float f);  // round to nearest even
float bf16_to_fp32(uint16_t h);
uint16_t fp32_to_bf16(float f);  // round to nearest even
// The 6-bit scale and min of sub-block j (0-7) of a Q4_K/Q5_K block's 12 scale bytes q (ggml's
// get_scale_min_k4).
void scale_min_k4(int j, const uint8_t* q, uint8_t& sc, uint8_t& m);

// n elements of a supported type to floats; n is a multiple of the block size.
void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n);
// Floats to a supported type (ggml's reference quantizers; K-quants via their scale search).
void quantize_row(GgmlType type, const float* src, void* dst, int64_t n);
// Fills n elements' worth of valid random blocks directly (no float round trip), so a
// multi-GB model can be written in seconds. Values come out roughly uniform in [-scale, scale].
void fill_random(GgmlType type, void* dst, int64_t n, uint64_t seed, float scale);

}  // namespace ember
