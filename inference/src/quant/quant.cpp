// Scalar conversions and dequantizers for GGUF block layouts. The SIMD kernels in cpu/ are
// tested against these.
#include "quant/quant.h"

#include <cassert>
#include <cstring>

namespace ember {
namespace {

uint32_t float_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
float bits_float(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

void dequant_q4_0(const BlockQ4_0* b, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, y += 32) {
        float d = fp16_to_fp32(b[i].d);
        for (int j = 0; j < 16; ++j) {
            y[j] = d * float((b[i].qs[j] & 0xF) - 8);
            y[j + 16] = d * float((b[i].qs[j] >> 4) - 8);
        }
    }
}

void dequant_q4_1(const BlockQ4_1* b, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, y += 32) {
        float d = fp16_to_fp32(b[i].d), m = fp16_to_fp32(b[i].m);
        for (int j = 0; j < 16; ++j) {
            y[j] = d * float(b[i].qs[j] & 0xF) + m;
            y[j + 16] = d * float(b[i].qs[j] >> 4) + m;
        }
    }
}

template <class B>
void dequant_q5(const B* b, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, y += 32) {
        float d = fp16_to_fp32(b[i].d);
        float m = 0;
        int off = 16;
        if constexpr (sizeof(B) == sizeof(BlockQ5_1)) {
            m = fp16_to_fp32(b[i].m);
            off = 0;
        }
        uint32_t qh;
        std::memcpy(&qh, b[i].qh, 4);
        for (int j = 0; j < 16; ++j) {
            int lo = (b[i].qs[j] & 0xF) | (((qh >> j) & 1) << 4);
            int hi = (b[i].qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4);
            y[j] = d * float(lo - off) + m;
            y[j + 16] = d * float(hi - off) + m;
        }
    }
}

void dequant_q8_0(const BlockQ8_0* b, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, y += 32) {
        float d = fp16_to_fp32(b[i].d);
        for (int j = 0; j < 32; ++j) y[j] = d * float(b[i].qs[j]);
    }
}

void dequant_q4_k(const BlockQ4_K* b, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i) {
        float d = fp16_to_fp32(b[i].d), dmin = fp16_to_fp32(b[i].dmin);
        const uint8_t* q = b[i].qs;
        for (int j = 0; j < 8; j += 2, q += 32) {
            uint8_t sc0, m0, sc1, m1;
            scale_min_k4(j, b[i].scales, sc0, m0);
            scale_min_k4(j + 1, b[i].scales, sc1, m1);
            float d0 = d * sc0, mm0 = dmin * m0, d1 = d * sc1, mm1 = dmin * m1;
            for (int l = 0; l < 32; ++l) *y++ = d0 * float(q[l] & 0xF) - mm0;
            for (int l = 0; l < 32; ++l) *y++ = d1 * float(q[l] >> 4) - mm1;
        }
    }
}

void dequant_q5_k(const BlockQ5_K* b, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i) {
        float d = fp16_to_fp32(b[i].d), dmin = fp16_to_fp32(b[i].dmin);
        const uint8_t* q = b[i].qs;
        const uint8_t* qh = b[i].qh;
        for (int j = 0; j < 8; j += 2, q += 32) {
            uint8_t sc0, m0, sc1, m1;
            scale_min_k4(j, b[i].scales, sc0, m0);
            scale_min_k4(j + 1, b[i].scales, sc1, m1);
            float d0 = d * sc0, mm0 = dmin * m0, d1 = d * sc1, mm1 = dmin * m1;
            for (int l = 0; l < 32; ++l)
                *y++ = d0 * float((q[l] & 0xF) + (((qh[l] >> j) & 1) << 4)) - mm0;
            for (int l = 0; l < 32; ++l)
                *y++ = d1 * float((q[l] >> 4) + (((qh[l] >> (j + 1)) & 1) << 4)) - mm1;
        }
    }
}

void dequant_q6_k(const BlockQ6_K* b, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i) {
        float d = fp16_to_fp32(b[i].d);
        const uint8_t* ql = b[i].ql;
        const uint8_t* qh = b[i].qh;
        const int8_t* sc = b[i].scales;
        for (int n = 0; n < 2; ++n, y += 128, ql += 64, qh += 32, sc += 8) {
            for (int l = 0; l < 32; ++l) {
                int is = l / 16;
                int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
                int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
                int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                y[l] = d * sc[is + 0] * q1;
                y[l + 32] = d * sc[is + 2] * q2;
                y[l + 64] = d * sc[is + 4] * q3;
                y[l + 96] = d * sc[is + 6] * q4;
            }
        }
    }
}

}  // namespace

void scale_min_k4(int j, const uint8_t* q, uint8_t& sc, uint8_t& m) {
    if (j < 4) {
        sc = q[j] & 63;
        m = q[j + 4] & 63;
    } else {
        sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

float fp16_to_fp32(uint16_t h) {
    uint32_t sign = uint32_t(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1F;
    uint32_t mant = h & 0x3FF;
    if (exp == 0) {
        // Zero or subnormal: mant * 2^-24 is exact in float.
        float v = float(mant) * (1.0f / 16777216.0f);
        return bits_float(float_bits(v) | sign);
    }
    if (exp == 31) return bits_float(sign | 0x7F800000u | (mant << 13));
    return bits_float(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t fp32_to_fp16(float f) {
    uint32_t x = float_bits(f);
    uint16_t sign = uint16_t((x >> 16) & 0x8000);
    uint32_t ax = x & 0x7FFFFFFF;
    if (ax > 0x7F800000) return sign | 0x7E00 | uint16_t((ax >> 13) & 0x3FF);  // quiet NaN
    if (ax >= 0x477FF000) return sign | 0x7C00;  // >= 65520 rounds to infinity
    if (ax < 0x38800000) {
        // Half subnormal range: adding 0.5 puts the value's 2^-24 units into float's low
        // mantissa bits, and the FPU's rounding is round-to-nearest-even.
        float v = bits_float(ax) + 0.5f;
        return sign | uint16_t(float_bits(v) - 0x3F000000u);
    }
    uint32_t r = ax - 0x38000000u + 0xFFFu + ((ax >> 13) & 1);
    return sign | uint16_t(r >> 13);
}

float bf16_to_fp32(uint16_t h) {
    return bits_float(uint32_t(h) << 16);
}

uint16_t fp32_to_bf16(float f) {
    uint32_t x = float_bits(f);
    if ((x & 0x7FFFFFFF) > 0x7F800000) return uint16_t((x >> 16) | 0x40);  // quiet NaN
    return uint16_t((x + 0x7FFF + ((x >> 16) & 1)) >> 16);
}

void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n) {
    switch (type) {
        case GgmlType::F32:
            std::memcpy(dst, src, size_t(n) * 4);
            return;
        case GgmlType::F16: {
            auto s = static_cast<const uint16_t*>(src);
            for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(s[i]);
            return;
        }
        case GgmlType::BF16: {
            auto s = static_cast<const uint16_t*>(src);
            for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_fp32(s[i]);
            return;
        }
        case GgmlType::Q4_0:
            return dequant_q4_0(static_cast<const BlockQ4_0*>(src), dst, n / 32);
        case GgmlType::Q4_1:
            return dequant_q4_1(static_cast<const BlockQ4_1*>(src), dst, n / 32);
        case GgmlType::Q5_0:
            return dequant_q5(static_cast<const BlockQ5_0*>(src), dst, n / 32);
        case GgmlType::Q5_1:
            return dequant_q5(static_cast<const BlockQ5_1*>(src), dst, n / 32);
        case GgmlType::Q8_0:
            return dequant_q8_0(static_cast<const BlockQ8_0*>(src), dst, n / 32);
        case GgmlType::Q4_K:
            return dequant_q4_k(static_cast<const BlockQ4_K*>(src), dst, n / QK_K);
        case GgmlType::Q5_K:
            return dequant_q5_k(static_cast<const BlockQ5_K*>(src), dst, n / QK_K);
        case GgmlType::Q6_K:
            return dequant_q6_k(static_cast<const BlockQ6_K*>(src), dst, n / QK_K);
        default:
            assert(!"dequantize_row: unsupported type");
    }
}

}  // namespace ember
