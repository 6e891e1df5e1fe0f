// Random weights written straight into block layouts, for synthetic models and benchmarks.
// Quant bytes come from a 64-bit generator eight at a time; scales come from a small table of
// pre-converted fp16 values, so no per-block float conversion is needed.
#include <cassert>
#include <cstring>

#include "quant/quant.h"

namespace ember {
namespace {

class Rng {
public:
    explicit Rng(uint64_t seed) : m_state(seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull) {}
    uint64_t next() {  // splitmix64
        uint64_t z = (m_state += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    void bytes(uint8_t* p, size_t n) {
        while (n >= 8) {
            uint64_t v = next();
            std::memcpy(p, &v, 8);
            p += 8;
            n -= 8;
        }
        if (n) {
            uint64_t v = next();
            std::memcpy(p, &v, n);
        }
    }
    float uniform() { return float(next() >> 40) * (1.0f / 16777216.0f); }  // [0, 1)

private:
    uint64_t m_state;
};

// 256 fp16 scales of base * [0.5, 1.0), picked by a random byte per block.
struct ScaleTable {
    uint16_t v[256];
    ScaleTable(Rng& rng, float base) {
        for (auto& s : v) s = fp32_to_fp16(base * (0.5f + 0.5f * rng.uniform()));
    }
};

template <class B, class Fn>
void fill_blocks(void* dst, int64_t nb, Rng& rng, Fn&& set_scales) {
    auto* b = static_cast<B*>(dst);
    for (int64_t i = 0; i < nb; ++i) {
        rng.bytes(reinterpret_cast<uint8_t*>(&b[i]), sizeof(B));
        set_scales(b[i], rng.next());
    }
}

// Q4_K/Q5_K scale bytes with each sub-block's min equal to its scale, which centres the
// sub-block's values around zero: x = d*sc*q - dmin*sc with dmin = d * nmax / 2.
void random_k4_scales(uint8_t* out, uint64_t r) {
    uint8_t sc[8];
    for (int j = 0; j < 8; ++j) sc[j] = uint8_t(32 + ((r >> (5 * j)) & 31));  // [32, 63]
    std::memset(out, 0, K_SCALE_SIZE);
    for (int j = 0; j < 8; ++j) {
        if (j < 4) {
            out[j] |= sc[j] & 63;
            out[j + 4] |= sc[j] & 63;
        } else {
            out[j + 4] = uint8_t((sc[j] & 0xF) | ((sc[j] & 0xF) << 4));
            out[j - 4] |= uint8_t((sc[j] >> 4) << 6);
            out[j] |= uint8_t((sc[j] >> 4) << 6);
        }
    }
}

}  // namespace

void fill_random(GgmlType type, void* dst, int64_t n, uint64_t seed, float scale) {
    Rng rng(seed ^ (uint64_t(type) << 56));
    switch (type) {
        case GgmlType::F32: {
            auto* d = static_cast<float*>(dst);
            for (int64_t i = 0; i < n; ++i) d[i] = scale * (2 * rng.uniform() - 1);
            return;
        }
        case GgmlType::F16:
        case GgmlType::BF16: {
            // A table of converted values indexed by random bytes keeps this fast.
            uint16_t table[256];
            for (auto& t : table) {
                float v = scale * (2 * rng.uniform() - 1);
                t = type == GgmlType::F16 ? fp32_to_fp16(v) : fp32_to_bf16(v);
            }
            auto* d = static_cast<uint16_t*>(dst);
            int64_t i = 0;
            for (; i + 8 <= n; i += 8) {
                uint64_t r = rng.next();
                for (int k = 0; k < 8; ++k) d[i + k] = table[(r >> (8 * k)) & 0xFF];
            }
            for (; i < n; ++i) d[i] = table[rng.next() & 0xFF];
            return;
        }
        case GgmlType::Q4_0: {
            ScaleTable t(rng, scale / 8);
            return fill_blocks<BlockQ4_0>(dst, n / 32, rng,
                                          [&](BlockQ4_0& b, uint64_t r) { b.d = t.v[r & 0xFF]; });
        }
        case GgmlType::Q4_1: {
            // m = -7.5 d centres the block's values on zero.
            ScaleTable t(rng, 2 * scale / 15);
            uint16_t mins[256];
            for (int i = 0; i < 256; ++i) mins[i] = fp32_to_fp16(-7.5f * fp16_to_fp32(t.v[i]));
            return fill_blocks<BlockQ4_1>(dst, n / 32, rng, [&](BlockQ4_1& b, uint64_t r) {
                b.d = t.v[r & 0xFF];
                b.m = mins[r & 0xFF];
            });
        }
        case GgmlType::Q5_0: {
            ScaleTable t(rng, scale / 16);
            return fill_blocks<BlockQ5_0>(dst, n / 32, rng,
                                          [&](BlockQ5_0& b, uint64_t r) { b.d = t.v[r & 0xFF]; });
        }
        case GgmlType::Q5_1: {
            ScaleTable t(rng, 2 * scale / 31);
            uint16_t mins[256];
            for (int i = 0; i < 256; ++i) mins[i] = fp32_to_fp16(-15.5f * fp16_to_fp32(t.v[i]));
            return fill_blocks<BlockQ5_1>(dst, n / 32, rng, [&](BlockQ5_1& b, uint64_t r) {
                b.d = t.v[r & 0xFF];
                b.m = mins[r & 0xFF];
            });
        }
        case GgmlType::Q8_0: {
            ScaleTable t(rng, scale / 127);
            return fill_blocks<BlockQ8_0>(dst, n / 32, rng,
                                          [&](BlockQ8_0& b, uint64_t r) { b.d = t.v[r & 0xFF]; });
        }
        case GgmlType::Q4_K: {
            // Per sub-block: x = d*sc*(q - 7.5) with sc in [32, 63]; |x| <= ~scale.
            float d = 2 * scale / (15 * 63);
            uint16_t dh = fp32_to_fp16(d), dminh = fp32_to_fp16(d * 7.5f);
            return fill_blocks<BlockQ4_K>(dst, n / QK_K, rng, [&](BlockQ4_K& b, uint64_t r) {
                b.d = dh;
                b.dmin = dminh;
                random_k4_scales(b.scales, r);
            });
        }
        case GgmlType::Q5_K: {
            float d = 2 * scale / (31 * 63);
            uint16_t dh = fp32_to_fp16(d), dminh = fp32_to_fp16(d * 15.5f);
            return fill_blocks<BlockQ5_K>(dst, n / QK_K, rng, [&](BlockQ5_K& b, uint64_t r) {
                b.d = dh;
                b.dmin = dminh;
                random_k4_scales(b.scales, r);
            });
        }
        case GgmlType::Q6_K: {
            ScaleTable t(rng, scale / (32 * 128));
            return fill_blocks<BlockQ6_K>(dst, n / QK_K, rng, [&](BlockQ6_K& b, uint64_t r) {
                b.d = t.v[r & 0xFF];
                // Scales in [-127, -64] u [64, 127]: random sign, magnitude >= 64.
                uint64_t s = rng.next(), g = rng.next();
                for (int k = 0; k < 16; ++k) {
                    int mag = 64 + int((s >> (4 * k)) & 15) * 4 + int((g >> (2 * k)) & 3);
                    b.scales[k] = int8_t((g >> (32 + k)) & 1 ? -mag : mag);
                }
            });
        }
        default:
            assert(!"fill_random: unsupported type");
    }
}

}  // namespace ember
