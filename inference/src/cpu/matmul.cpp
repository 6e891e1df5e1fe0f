// matmul entry point: ISA selection, activation quantization, work split across the pool.
// The portable kernels live here too: they dequantize weight rows to floats.
#include "cpu/matmul.h"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "common/overrides.h"
#include "cpu/kernels.h"
#include "quant/quant.h"

namespace ember::cpu {
namespace {

bool is_float_type(GgmlType t) {
    return t == GgmlType::F32 || t == GgmlType::F16 || t == GgmlType::BF16;
}

// ---- portable kernels ----

float dot_f32(const float* a, const float* b, int64_t n) {
    float acc[8] = {};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; ++k) acc[k] += a[i + k] * b[i + k];
    float sum = 0;
    for (; i < n; ++i) sum += a[i] * b[i];
    for (float v : acc) sum += v;
    return sum;
}

// Rows are dequantized into a stack-sized chunk at a time so no per-thread buffer is needed.
void portable_rows(const WeightView& w, int64_t r0, int64_t r1, const float* x, int n_tokens,
                   float* y) {
    constexpr int64_t kChunk = 1024;  // a multiple of every block size
    float buf[kChunk];
    const TypeTraits tt = *type_traits(w.type);
    for (int64_t r = r0; r < r1; ++r) {
        const uint8_t* row = w.data + r * w.row_stride;
        float sums[64];
        for (int t0 = 0; t0 < n_tokens; t0 += 64) {
            int nt = std::min(64, n_tokens - t0);
            std::fill(sums, sums + nt, 0.0f);
            for (int64_t c = 0; c < w.cols; c += kChunk) {
                int64_t n = std::min(kChunk, w.cols - c);
                dequantize_row(w.type, row + row_bytes(tt, c), buf, n);
                for (int t = 0; t < nt; ++t) sums[t] += dot_f32(buf, x + (t0 + t) * w.cols + c, n);
            }
            for (int t = 0; t < nt; ++t) y[(t0 + t) * w.rows + r] = sums[t];
        }
    }
}

float dot_portable(const float* a, const float* b, int n) {
    return dot_f32(a, b, n);
}

void axpy_portable(float a, const float* x, float* y, int n) {
    for (int i = 0; i < n; ++i) y[i] += a * x[i];
}

void silu_mul_portable(const float* gate, const float* up, float* out, int n) {
    for (int i = 0; i < n; i++) {
        const float g = gate[i];
        out[i] = g / (1.0f + std::exp(-g)) * up[i];
    }
}

const KernelSet kPortable = {"portable", nullptr,      portable_rows, quantize_act_scalar,
                             nullptr,    dot_portable, axpy_portable, silu_mul_portable, 0};

// ---- ISA selection ----

int level_of(std::string_view name) {
    if (name == "portable") return 0;
    if (name == "avx2") return 1;
    if (name == "avx512" || name == "avx512_vnni") return 2;
    return -1;
}

const KernelSet* best_for_level(int max_level) {
    if (max_level >= 2 && kernels_avx512()) return kernels_avx512();
    if (max_level >= 1 && kernels_avx2()) return kernels_avx2();
    return &kPortable;
}

const KernelSet* detect() {
    int level = 2;
    if (const std::string env = read_overrides().cpu_isa; level_of(env) >= 0)
        level = level_of(env);
    return best_for_level(level);
}

std::atomic<const KernelSet*> g_kernels{nullptr};

const KernelSet& kernels() {
    const KernelSet* k = g_kernels.load(std::memory_order_acquire);
    if (!k) {
        k = detect();
        g_kernels.store(k, std::memory_order_release);
    }
    return *k;
}

}  // namespace

const KernelSet& active_kernels() {
    return kernels();
}

const KernelSet* kernels_portable() {
    return &kPortable;
}

void quantize_act_scalar(const float* x, int64_t cols, int8_t* qs, float* d, float* s) {
    const int64_t nb = cols / 32;
    for (int64_t b = 0; b < nb; ++b) {
        const float* xb = x + b * 32;
        float amax = 0;
        for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(xb[i]));
        float scale = amax / 127;
        float inv = scale > 0 ? 1 / scale : 0;
        int sum = 0;
        for (int i = 0; i < 32; ++i) {
            int q = int(std::nearbyint(xb[i] * inv));
            q = std::clamp(q, -127, 127);
            qs[b * 32 + i] = int8_t(q);
            sum += q;
        }
        d[b] = scale;
        s[b] = scale * float(sum);
    }
    const int64_t nb_pad = int64_t(ActQ8::align_up(size_t(nb), 8));
    for (int64_t b = nb; b < nb_pad; ++b) d[b] = s[b] = 0;
}

void quantize_act_k(const float* x, int64_t cols, int8_t* qs, float* d, int16_t* bsums) {
    for (int64_t b = 0; b < cols / 256; ++b) {
        const float* xb = x + b * 256;
        float amax = 0;
        for (int i = 0; i < 256; ++i) amax = std::max(amax, std::fabs(xb[i]));
        const float scale = amax / 127;
        const float inv = scale > 0 ? 1 / scale : 0;
        for (int i = 0; i < 256; i += 16) {
            int sum = 0;
            for (int k = i; k < i + 16; ++k) {
                const int q = std::clamp(int(std::nearbyint(xb[k] * inv)), -127, 127);
                qs[b * 256 + k] = int8_t(q);
                sum += q;
            }
            bsums[b * 16 + i / 16] = int16_t(sum);
        }
        d[b] = scale;
    }
}

const char* select_isa(const char* level) {
    int l = level_of(level ? level : "");
    const KernelSet* k = l >= 0 ? best_for_level(l) : detect();
    g_kernels.store(k, std::memory_order_release);
    return k->name;
}

const char* isa_name() {
    return kernels().name;
}

namespace {

bool is_k_quant(GgmlType t) {
    return t == GgmlType::Q4_K || t == GgmlType::Q5_K || t == GgmlType::Q6_K;
}

// K-quant weights with the set's kquant_rows: per-256 activations (see ActQ8K).
void matmul_kquant(ThreadPool& pool, const KernelSet& k, const WeightView& w, const float* x,
                   int n_tokens, float* y, int64_t chunk, MatmulScratch& scratch) {
    struct Ctx {
        const KernelSet& k;
        const WeightView& w;
        const float* x;
        int n_tokens;
        float* y;
        int64_t chunk;
        ActQ8K a;
    } c{k, w, x, n_tokens, y, chunk, {}};
    c.a.cols = w.cols;
    const size_t need = c.a.stride() * size_t(n_tokens) + 64;
    if (scratch.buf.size() < need) scratch.buf.resize(need);
    const uintptr_t p = reinterpret_cast<uintptr_t>(scratch.buf.data());
    c.a.base = reinterpret_cast<uint8_t*>((p + 63) / 64 * 64);
    auto quantize = [](const Ctx& c, int t) {
        (c.k.quantize_act_k ? c.k.quantize_act_k : quantize_act_k)(
            c.x + int64_t(t) * c.w.cols, c.w.cols, c.a.qs(t), c.a.d(t), c.a.bsums(t));
    };
    if (n_tokens == 1)
        quantize(c, 0);
    else
        pool.parallel_for(n_tokens, [cp = &c, quantize](int t, int) { quantize(*cp, t); });
    const int n_tasks = int((w.rows + chunk - 1) / chunk);
    pool.parallel_for(n_tasks, [cp = &c](int task, int) {
        const int64_t r0 = task * cp->chunk, r1 = std::min(cp->w.rows, r0 + cp->chunk);
        cp->k.kquant_rows(cp->w, r0, r1, cp->a, cp->n_tokens, cp->y);
    });
}

}  // namespace

void matmul(ThreadPool& pool, const WeightView& w, const float* x, int n_tokens, float* y,
            MatmulScratch& scratch) {
    assert(w.cols % 32 == 0 || is_float_type(w.type));
    if (w.rows <= 0 || n_tokens <= 0) return;
    const KernelSet& k = kernels();
    const int n_threads = pool.size();

    // Row chunks: many small ones for decode (load balance), larger ones for prefill so a
    // chunk's weights stay in cache while every token tile passes over them.
    int64_t per_thread = (w.rows + n_threads - 1) / n_threads;
    int64_t chunk = n_tokens == 1 ? per_thread / 8 : std::min<int64_t>(64, per_thread / 2);
    chunk = std::max<int64_t>(4, (chunk + 3) / 4 * 4);
    const int n_tasks = int((w.rows + chunk - 1) / chunk);
    // EMBER_CPU_NO_PACK=1 keeps K-quants on the per-32 kernels too (to measure the difference).
    static const bool no_kquant = read_overrides().cpu_no_pack;
    if (k.kquant_rows && !no_kquant && is_k_quant(w.type) && w.layout == WeightLayout::Ggml &&
        w.cols % 256 == 0)
        return matmul_kquant(pool, k, w, x, n_tokens, y, chunk, scratch);

    // The lambdas capture one pointer so std::function stores them inline (no allocation).
    struct Ctx {
        const KernelSet& k;
        const WeightView& w;
        const float* x;
        int n_tokens;
        float* y;
        int64_t chunk;
        ActQ8 a;
        ActPacked ap;
    } c{k, w, x, n_tokens, y, chunk, {}, {}};

    if (w.layout == WeightLayout::Packed && !k.packed_rows) {
        pool.parallel_for(n_tasks, [cp = &c](int task, int) {
            int64_t r0 = task * cp->chunk, r1 = std::min(cp->w.rows, r0 + cp->chunk);
            packed_rows_portable(cp->w, r0, r1, cp->x, cp->n_tokens, cp->y);
        });
        return;
    }
    if (is_float_type(w.type) || !k.quant_rows) {
        pool.parallel_for(n_tasks, [cp = &c](int task, int) {
            int64_t r0 = task * cp->chunk, r1 = std::min(cp->w.rows, r0 + cp->chunk);
            cp->k.float_rows(cp->w, r0, r1, cp->x, cp->n_tokens, cp->y);
        });
        return;
    }

    ActQ8& a = c.a;
    a.cols = w.cols;
    a.nb_pad = int64_t(ActQ8::align_up(size_t(w.cols / 32), 8));
    a.stride = ActQ8::token_bytes(w.cols);
    const bool packed = w.layout == WeightLayout::Packed;
    // Packed weights: natural-order activations first, then rearranged into c.ap.
    c.ap.ng = (w.cols / 32 + 15) / 16;
    const size_t packed_bytes = packed ? ActPacked::token_bytes(c.ap.ng) * size_t(n_tokens) : 0;
    size_t need = a.stride * size_t(n_tokens) + packed_bytes + 64;
    if (scratch.buf.size() < need) scratch.buf.resize(need);
    uintptr_t p = reinterpret_cast<uintptr_t>(scratch.buf.data());
    a.base = reinterpret_cast<uint8_t*>((p + 63) / 64 * 64);
    c.ap.base = a.base + a.stride * size_t(n_tokens);

    auto quantize = [](const Ctx& c, int t) {
        c.k.quantize_act(c.x + int64_t(t) * c.w.cols, c.w.cols, c.a.qs(t), c.a.d(t), c.a.s(t));
        if (c.w.layout == WeightLayout::Packed)
            pack_activations(c.a.qs(t), c.a.d(t), c.a.s(t), c.w.cols,
                             c.w.type == GgmlType::Q4_0 ? 8 : c.k.packed_q8_offset, c.ap, t);
    };
    if (n_tokens == 1) {
        quantize(c, 0);
    } else {
        pool.parallel_for(n_tokens, [cp = &c, quantize](int t, int) { quantize(*cp, t); });
    }
    if (packed) {
        pool.parallel_for(n_tasks, [cp = &c](int task, int) {
            int64_t r0 = task * cp->chunk, r1 = std::min(cp->w.rows, r0 + cp->chunk);
            cp->k.packed_rows(cp->w, r0, r1, cp->ap, cp->n_tokens, cp->y);
        });
        return;
    }
    pool.parallel_for(n_tasks, [cp = &c](int task, int) {
        int64_t r0 = task * cp->chunk, r1 = std::min(cp->w.rows, r0 + cp->chunk);
        cp->k.quant_rows(cp->w, r0, r1, cp->a, cp->n_tokens, cp->y);
    });
}

void get_row(const WeightView& w, int64_t row, float* dst) {
    assert(row >= 0 && row < w.rows);
    if (w.layout == WeightLayout::Packed) return dequantize_packed(w, row, 0, w.cols / 32, dst);
    dequantize_row(w.type, w.data + row * w.row_stride, dst, w.cols);
}

}  // namespace ember::cpu
