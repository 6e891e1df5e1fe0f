// Reference quantizers: floats to GGUF blocks. Accuracy matters more than speed here; they
// write test weights and small converted tensors, never run per token.
#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>

#include "quant/quant.h"

namespace ember {
namespace {

uint8_t clamp_round(float v, int lo, int hi) {
    int q = int(std::nearbyint(v));
    return uint8_t(std::clamp(q, lo, hi));
}

// The value of largest magnitude, with its sign (legacy symmetric quantizers map it to -2^(b-1)).
float signed_absmax(const float* x, int n) {
    float amax = 0, m = 0;
    for (int i = 0; i < n; ++i)
        if (std::fabs(x[i]) > amax) {
            amax = std::fabs(x[i]);
            m = x[i];
        }
    return m;
}

void quant_q8_0(const float* x, BlockQ8_0* b, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, x += 32) {
        float amax = 0;
        for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
        float d = amax / 127;
        float id = d ? 1 / d : 0;
        b[i].d = fp32_to_fp16(d);
        for (int j = 0; j < 32; ++j) b[i].qs[j] = int8_t(std::nearbyint(x[j] * id));
    }
}

void quant_q4_0(const float* x, BlockQ4_0* b, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, x += 32) {
        float d = signed_absmax(x, 32) / -8;
        float id = d ? 1 / d : 0;
        b[i].d = fp32_to_fp16(d);
        for (int j = 0; j < 16; ++j) {
            uint8_t lo = clamp_round(x[j] * id + 8, 0, 15);
            uint8_t hi = clamp_round(x[j + 16] * id + 8, 0, 15);
            b[i].qs[j] = lo | (hi << 4);
        }
    }
}

void quant_q5_0(const float* x, BlockQ5_0* b, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, x += 32) {
        float d = signed_absmax(x, 32) / -16;
        float id = d ? 1 / d : 0;
        b[i].d = fp32_to_fp16(d);
        uint32_t qh = 0;
        for (int j = 0; j < 16; ++j) {
            uint8_t lo = clamp_round(x[j] * id + 16, 0, 31);
            uint8_t hi = clamp_round(x[j + 16] * id + 16, 0, 31);
            b[i].qs[j] = (lo & 0xF) | ((hi & 0xF) << 4);
            qh |= uint32_t(lo >> 4) << j;
            qh |= uint32_t(hi >> 4) << (j + 16);
        }
        std::memcpy(b[i].qh, &qh, 4);
    }
}

// Affine legacy blocks: x = d * q + m with m the block minimum.
template <class B>
void quant_affine(const float* x, B* b, int64_t nb, int nmax) {
    for (int64_t i = 0; i < nb; ++i, x += 32) {
        float lo = *std::min_element(x, x + 32), hi = *std::max_element(x, x + 32);
        float d = (hi - lo) / float(nmax);
        float id = d ? 1 / d : 0;
        b[i].d = fp32_to_fp16(d);
        b[i].m = fp32_to_fp16(lo);
        uint8_t q[32];
        for (int j = 0; j < 32; ++j) q[j] = clamp_round((x[j] - lo) * id, 0, nmax);
        for (int j = 0; j < 16; ++j) b[i].qs[j] = (q[j] & 0xF) | ((q[j + 16] & 0xF) << 4);
        if constexpr (sizeof(B) == sizeof(BlockQ5_1)) {
            uint32_t qh = 0;
            for (int j = 0; j < 32; ++j) qh |= uint32_t(q[j] >> 4) << j;
            std::memcpy(b[i].qh, &qh, 4);
        }
    }
}

// Finds scale >= 0 and mn >= 0 with x ~ scale * q - mn, q in [0, nmax], by trying a few
// quantization grids and refitting the pair by least squares for each (as ggml does).
void fit_scale_min(const float* x, int n, int nmax, float& scale, float& mn) {
    float lo = std::min(0.0f, *std::min_element(x, x + n));
    float hi = *std::max_element(x, x + n);
    scale = 0;
    mn = -lo;
    if (hi <= lo) return;
    float best = INFINITY;
    for (int step = -10; step <= 10; ++step) {
        float iscale = (float(nmax) + 0.1f * float(step)) / (hi - lo);
        double sq = 0, sqx = 0, sq2 = 0, sx = 0;
        uint8_t q[256];
        for (int i = 0; i < n; ++i) {
            q[i] = clamp_round((x[i] - lo) * iscale, 0, nmax);
            sq += q[i];
            sq2 += double(q[i]) * q[i];
            sqx += q[i] * double(x[i]);
            sx += x[i];
        }
        // Least squares for x = s * q + c.
        double det = n * sq2 - sq * sq;
        double s = det > 0 ? (n * sqx - sq * sx) / det : 0;
        double c = det > 0 ? (sx - s * sq) / n : 1;
        if (c > 0) {  // the min must stay <= 0 (or all q are equal): fit the scale alone
            c = 0;
            s = sq2 > 0 ? sqx / sq2 : 0;
        }
        if (s <= 0) continue;
        double err = 0;
        for (int i = 0; i < n; ++i) {
            double e = s * q[i] + c - x[i];
            err += e * e;
        }
        if (err < best) {
            best = float(err);
            scale = float(s);
            mn = float(-c);
        }
    }
}

// Packs 8 six-bit scales and mins as ggml's get_scale_min_k4 reads them.
void pack_scales_k4(const uint8_t* sc, const uint8_t* m, uint8_t* out) {
    std::memset(out, 0, K_SCALE_SIZE);
    for (int j = 0; j < 8; ++j) {
        if (j < 4) {
            out[j] |= sc[j] & 63;
            out[j + 4] |= m[j] & 63;
        } else {
            out[j + 4] = uint8_t((sc[j] & 0xF) | ((m[j] & 0xF) << 4));
            out[j - 4] |= uint8_t((sc[j] >> 4) << 6);
            out[j] |= uint8_t((m[j] >> 4) << 6);
        }
    }
}

// Shared by Q4_K and Q5_K: 8 sub-blocks of 32 with 6-bit scales and mins.
// q receives the 256 quants in [0, nmax].
void quant_k_superblock(const float* x, int nmax, uint16_t& d_out, uint16_t& dmin_out,
                        uint8_t* scales_out, uint8_t* q) {
    float scale[8], mn[8];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 8; ++j) {
        fit_scale_min(x + 32 * j, 32, nmax, scale[j], mn[j]);
        max_scale = std::max(max_scale, scale[j]);
        max_min = std::max(max_min, mn[j]);
    }
    float d = max_scale / 63, dmin = max_min / 63;
    d_out = fp32_to_fp16(d);
    dmin_out = fp32_to_fp16(dmin);
    uint8_t sc[8], m[8];
    for (int j = 0; j < 8; ++j) {
        sc[j] = d > 0 ? clamp_round(scale[j] / d, 0, 63) : 0;
        m[j] = dmin > 0 ? clamp_round(mn[j] / dmin, 0, 63) : 0;
    }
    pack_scales_k4(sc, m, scales_out);
    float dq = fp16_to_fp32(d_out), dmq = fp16_to_fp32(dmin_out);
    for (int j = 0; j < 8; ++j) {
        float ds = dq * sc[j], dm = dmq * m[j];
        for (int l = 0; l < 32; ++l) {
            float v = x[32 * j + l];
            q[32 * j + l] = ds > 0 ? clamp_round((v + dm) / ds, 0, nmax) : 0;
        }
    }
}

void quant_q4_k(const float* x, BlockQ4_K* b, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, x += QK_K) {
        uint8_t q[QK_K];
        quant_k_superblock(x, 15, b[i].d, b[i].dmin, b[i].scales, q);
        for (int p = 0; p < 4; ++p)
            for (int l = 0; l < 32; ++l)
                b[i].qs[32 * p + l] = q[64 * p + l] | (q[64 * p + 32 + l] << 4);
    }
}

void quant_q5_k(const float* x, BlockQ5_K* b, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, x += QK_K) {
        uint8_t q[QK_K];
        quant_k_superblock(x, 31, b[i].d, b[i].dmin, b[i].scales, q);
        std::memset(b[i].qh, 0, sizeof b[i].qh);
        for (int p = 0; p < 4; ++p)
            for (int l = 0; l < 32; ++l) {
                uint8_t lo = q[64 * p + l], hi = q[64 * p + 32 + l];
                b[i].qs[32 * p + l] = (lo & 0xF) | ((hi & 0xF) << 4);
                b[i].qh[l] |= uint8_t(((lo >> 4) << (2 * p)) | ((hi >> 4) << (2 * p + 1)));
            }
    }
}

void quant_q6_k(const float* x, BlockQ6_K* b, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, x += QK_K) {
        float sub[16], max_abs = 0;
        for (int s = 0; s < 16; ++s) {
            sub[s] = signed_absmax(x + 16 * s, 16) / -32;
            max_abs = std::max(max_abs, std::fabs(sub[s]));
        }
        float d = max_abs / 127;
        b[i].d = fp32_to_fp16(d);
        float dq = fp16_to_fp32(b[i].d);
        uint8_t q[QK_K];
        for (int s = 0; s < 16; ++s) {
            int sc = d > 0 ? std::clamp(int(std::nearbyint(sub[s] / d)), -128, 127) : 0;
            b[i].scales[s] = int8_t(sc);
            float ds = dq * float(sc);
            for (int l = 0; l < 16; ++l)
                q[16 * s + l] = ds != 0 ? clamp_round(x[16 * s + l] / ds + 32, 0, 63) : 32;
        }
        std::memset(b[i].qh, 0, sizeof b[i].qh);
        for (int n = 0; n < 2; ++n)
            for (int l = 0; l < 32; ++l) {
                const uint8_t* qq = q + 128 * n + l;
                uint8_t q1 = qq[0], q2 = qq[32], q3 = qq[64], q4 = qq[96];
                b[i].ql[64 * n + l] = (q1 & 0xF) | ((q3 & 0xF) << 4);
                b[i].ql[64 * n + l + 32] = (q2 & 0xF) | ((q4 & 0xF) << 4);
                b[i].qh[32 * n + l] =
                    uint8_t((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
            }
    }
}

}  // namespace

void quantize_row(GgmlType type, const float* src, void* dst, int64_t n) {
    switch (type) {
        case GgmlType::F32:
            std::memcpy(dst, src, size_t(n) * 4);
            return;
        case GgmlType::F16: {
            auto d = static_cast<uint16_t*>(dst);
            for (int64_t i = 0; i < n; ++i) d[i] = fp32_to_fp16(src[i]);
            return;
        }
        case GgmlType::BF16: {
            auto d = static_cast<uint16_t*>(dst);
            for (int64_t i = 0; i < n; ++i) d[i] = fp32_to_bf16(src[i]);
            return;
        }
        case GgmlType::Q4_0:
            return quant_q4_0(src, static_cast<BlockQ4_0*>(dst), n / 32);
        case GgmlType::Q4_1:
            return quant_affine(src, static_cast<BlockQ4_1*>(dst), n / 32, 15);
        case GgmlType::Q5_0:
            return quant_q5_0(src, static_cast<BlockQ5_0*>(dst), n / 32);
        case GgmlType::Q5_1:
            return quant_affine(src, static_cast<BlockQ5_1*>(dst), n / 32, 31);
        case GgmlType::Q8_0:
            return quant_q8_0(src, static_cast<BlockQ8_0*>(dst), n / 32);
        case GgmlType::Q4_K:
            return quant_q4_k(src, static_cast<BlockQ4_K*>(dst), n / QK_K);
        case GgmlType::Q5_K:
            return quant_q5_k(src, static_cast<BlockQ5_K*>(dst), n / QK_K);
        case GgmlType::Q6_K:
            return quant_q6_k(src, static_cast<BlockQ6_K*>(dst), n / QK_K);
        default:
            assert(!"quantize_row: unsupported type");
    }
}

}  // namespace ember
