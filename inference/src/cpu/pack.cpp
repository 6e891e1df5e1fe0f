// The Packed weight layout (see WeightLayout in matmul.h) and its activation counterpart.
//
// Q4_0/Q8_0 blocks interleave a 2-byte scale with 16 or 32 bytes of quants, so SIMD loads of
// quants would straddle scales and need gathering. Packed stores, per row, the quants of
// every block in groups of 16 blocks, and all rows' fp16 scales in a second plane. Within a
// group of n blocks (16, or fewer in a row's last group) the quants are "transposed" in 4-byte
// units: unit j of every block, then unit j + 1, so 32-bit lane k of a 64-byte load holds
// block k's bytes 4j..4j+3 and one vpdpbusd accumulates a piece of every block's dot product
// into that block's own lane. Q4_0 has 4 units (16 qs bytes; low nibbles are elements 0-15,
// high ones 16-31), Q8_0 8 units; a unit takes 4*n bytes.
#include <algorithm>
#include <cassert>
#include <cstdlib>
#include <cstring>

#include "common/overrides.h"
#include "cpu/kernels.h"
#include "quant/quant.h"

namespace ember::cpu {

bool should_pack(const WeightView& w) {
    // EMBER_CPU_NO_PACK=1 keeps the GGUF layout (to measure what packing brings).
    static const bool disabled = read_overrides().cpu_no_pack;
    return !disabled && w.layout == WeightLayout::Ggml &&
           (w.type == GgmlType::Q4_0 || w.type == GgmlType::Q8_0) && w.cols % 32 == 0 &&
           w.row_stride == uint64_t(w.cols / 32) * (w.type == GgmlType::Q4_0 ? 18 : 34) &&
           active_kernels().packed_rows != nullptr;
}

namespace {

void pack_row(const WeightView& w, int64_t r, const WeightView& p) {
    const int64_t nb = w.cols / 32;
    const int qb = packed_quant_bytes(w.type), units = qb / 4;
    uint8_t* qs = const_cast<uint8_t*>(packed_qs(p, r));
    uint16_t* sc = const_cast<uint16_t*>(packed_scales(p, r));
    const uint8_t* src = w.data + r * w.row_stride;
    const size_t bb = w.type == GgmlType::Q4_0 ? sizeof(BlockQ4_0) : sizeof(BlockQ8_0);
    for (int64_t b0 = 0; b0 < nb; b0 += 16) {
        const int64_t n = std::min<int64_t>(16, nb - b0);
        uint8_t* group = qs + b0 * qb;
        for (int64_t k = 0; k < n; ++k) {
            const uint8_t* blk = src + (b0 + k) * bb;  // fp16 d, then the quants
            std::memcpy(&sc[b0 + k], blk, 2);
            for (int j = 0; j < units; ++j)
                std::memcpy(group + 4 * n * j + 4 * k, blk + 2 + 4 * j, 4);
        }
    }
}

}  // namespace

WeightView pack_weight(ThreadPool& pool, const WeightView& w, uint8_t* dst) {
    assert(w.layout == WeightLayout::Ggml);
    assert(w.type == GgmlType::Q4_0 || w.type == GgmlType::Q8_0);
    WeightView p = w;
    p.data = dst;
    p.layout = WeightLayout::Packed;
    const int64_t per_task = 64;
    const int n_tasks = int((w.rows + per_task - 1) / per_task);
    pool.parallel_for(n_tasks, [&](int task, int) {
        const int64_t r1 = std::min(w.rows, (task + 1) * per_task);
        for (int64_t r = task * per_task; r < r1; ++r) pack_row(w, r, p);
    });
    return p;
}

// Elements [32*b0, 32*(b0+n)) of packed row r as floats.
void dequantize_packed(const WeightView& w, int64_t r, int64_t b0, int64_t n, float* dst) {
    const int64_t nb = w.cols / 32;
    const int qb = packed_quant_bytes(w.type);
    const uint8_t* qs = packed_qs(w, r);
    const uint16_t* sc = packed_scales(w, r);
    for (int64_t b = b0; b < b0 + n; ++b) {
        const float d = fp16_to_fp32(sc[b]);
        const int64_t g0 = b / 16 * 16, gn = std::min<int64_t>(16, nb - g0), k = b - g0;
        const uint8_t* group = qs + g0 * qb;
        auto byte = [&](int e) { return group[4 * gn * (e / 4) + 4 * k + e % 4]; };
        float* out = dst + 32 * (b - b0);
        if (w.type == GgmlType::Q4_0) {
            for (int i = 0; i < 16; ++i) {
                out[i] = d * float(int(byte(i) & 0x0F) - 8);
                out[i + 16] = d * float(int(byte(i) >> 4) - 8);
            }
        } else {
            for (int i = 0; i < 32; ++i) out[i] = d * float(int8_t(byte(i)));
        }
    }
}

void packed_rows_portable(const WeightView& w, int64_t r0, int64_t r1, const float* x, int n_tokens,
                          float* y) {
    constexpr int64_t kBlocks = 32;
    float buf[kBlocks * 32];
    const int64_t nb = w.cols / 32;
    for (int64_t r = r0; r < r1; ++r) {
        for (int t = 0; t < n_tokens; ++t) y[int64_t(t) * w.rows + r] = 0;
        for (int64_t b = 0; b < nb; b += kBlocks) {
            const int64_t n = std::min(kBlocks, nb - b);
            dequantize_packed(w, r, b, n, buf);
            for (int t = 0; t < n_tokens; ++t) {
                const float* xt = x + int64_t(t) * w.cols + 32 * b;
                float acc[8] = {};
                for (int64_t i = 0; i < 32 * n; i += 8)
                    for (int k = 0; k < 8; ++k) acc[k] += buf[i + k] * xt[i + k];
                float s = 0;
                for (float v : acc) s += v;
                y[int64_t(t) * w.rows + r] += s;
            }
        }
    }
}

// Rearranges one token's natural-order Q8 activations (qs, d, s as ActQ8 holds them) into
// the packed order; offset is what the kernels add to the weight quants.
void pack_activations(const int8_t* qs, const float* d, const float* s, int64_t cols, int offset,
                      const ActPacked& a, int t) {
    const int64_t nb = cols / 32;
    int8_t* pq = a.qs(t);
    float* dx = a.dx(t);
    float* so = a.soff(t);
    for (int64_t b = 0; b < a.ng * 16; ++b) {
        int8_t* group = pq + 512 * (b / 16);
        const int64_t k = b % 16;
        for (int j = 0; j < 8; ++j) {
            if (b < nb)
                std::memcpy(group + 64 * j + 4 * k, qs + 32 * b + 4 * j, 4);
            else
                std::memset(group + 64 * j + 4 * k, 0, 4);
        }
        dx[b] = b < nb ? d[b] : 0.0f;
        so[b] = b < nb ? float(offset) * s[b] : 0.0f;
    }
}

}  // namespace ember::cpu
