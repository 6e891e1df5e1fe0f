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

void gelu_tanh_mul_portable(const float* gate, const float* up, float* out, int n) {
    constexpr float kSqrt2OverPi = 0.7978845608028654f;
    for (int i = 0; i < n; i++) {
        const float x = gate[i];
        const float g = 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * (x + 0.044715f * x * x * x)));
        out[i] = g * up[i];
    }
}

void softcap_portable(float* x, int n, float cap) {
    for (int i = 0; i < n; i++) x[i] = cap * std::tanh(x[i] / cap);
}

const KernelSet kPortable = {"portable",
                             nullptr,
                             portable_rows,
                             quantize_act_scalar,
                             nullptr,
                             dot_portable,
                             axpy_portable,
                             silu_mul_portable,
                             0,
                             nullptr,
                             nullptr,
                             gelu_tanh_mul_portable,
                             softcap_portable};

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
    if (const std::string env = read_overrides().cpu_isa; level_of(env) >= 0) level = level_of(env);
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

// How one matrix is computed with kernel set k, and so which activations it reads.
enum class Path : uint8_t {
    Float,           // float_rows on float x (float weights, or the portable set's dequantizing)
    PackedPortable,  // Packed weights without packed_rows: dequantized rows on float x
    Quant,           // quant_rows on per-32 activations (ActQ8)
    PackedQ4,        // packed_rows on ActPacked with offset 8 (Q4_0)
    PackedQ8,        // packed_rows on ActPacked with the set's Q8_0 offset
    KQuant,          // kquant_rows on per-256 activations (ActQ8K)
};

Path path_of(const KernelSet& k, const WeightView& w) {
    // EMBER_CPU_NO_PACK=1 keeps K-quants on the per-32 kernels too (to measure the difference).
    static const bool no_kquant = read_overrides().cpu_no_pack;
    if (w.layout == WeightLayout::Packed) {
        if (!k.packed_rows) return Path::PackedPortable;
        return w.type == GgmlType::Q4_0 ? Path::PackedQ4 : Path::PackedQ8;
    }
    if (is_float_type(w.type) || !k.quant_rows) return Path::Float;
    if (k.kquant_rows && !no_kquant && is_k_quant(w.type) && w.cols % 256 == 0) return Path::KQuant;
    return Path::Quant;
}

// Rows per task. Decode: many small chunks for load balance; prefill: larger ones so a
// chunk's weights stay in cache while every token tile passes over them.
int64_t chunk_rows(int64_t rows, int n_threads, int n_tokens) {
    const int64_t per_thread = (rows + n_threads - 1) / n_threads;
    int64_t chunk = n_tokens == 1 ? per_thread / 8 : std::min<int64_t>(64, per_thread / 2);
    return std::max<int64_t>(4, (chunk + 3) / 4 * 4);
}

constexpr int kMaxOuts = 4;

// Everything the pool's tasks read; the lambdas capture one pointer to it, so std::function
// stores them inline (no allocation).
struct ManyCtx {
    ManyCtx(const KernelSet& k, const float* x, int n_tokens) : k(k), x(x), n_tokens(n_tokens) {}
    const KernelSet& k;
    const float* x;
    int n_tokens;
    int n_outs = 0;
    MatmulOut outs[kMaxOuts] = {};
    Path path[kMaxOuts] = {};
    int64_t chunk[kMaxOuts] = {};
    int first_task[kMaxOuts + 1] = {};  // tasks [first_task[i], first_task[i + 1]) are outs[i]'s
    bool need_q8 = false, need_q4p = false, need_q8p = false, need_k = false;
    ActQ8 a;
    ActPacked ap_q4, ap_q8;
    ActQ8K ak;

    // Token t's activations in every form some matrix reads.
    void quantize(int t) const {
        const int64_t cols = a.cols;
        const float* xt = x + int64_t(t) * cols;
        if (need_q8) {
            k.quantize_act(xt, cols, a.qs(t), a.d(t), a.s(t));
            if (need_q4p) pack_activations(a.qs(t), a.d(t), a.s(t), cols, 8, ap_q4, t);
            if (need_q8p)
                pack_activations(a.qs(t), a.d(t), a.s(t), cols, k.packed_q8_offset, ap_q8, t);
        }
        if (need_k)
            (k.quantize_act_k ? k.quantize_act_k : quantize_act_k)(xt, cols, ak.qs(t), ak.d(t),
                                                                   ak.bsums(t));
    }

    void run(int task) const {
        int i = 0;
        while (task >= first_task[i + 1]) ++i;
        const WeightView& w = *outs[i].w;
        float* y = outs[i].y;
        const int64_t r0 = (task - first_task[i]) * chunk[i];
        const int64_t r1 = std::min(w.rows, r0 + chunk[i]);
        switch (path[i]) {
            case Path::Float:
                return k.float_rows(w, r0, r1, x, n_tokens, y);
            case Path::PackedPortable:
                return packed_rows_portable(w, r0, r1, x, n_tokens, y);
            case Path::Quant:
                return k.quant_rows(w, r0, r1, a, n_tokens, y);
            case Path::PackedQ4:
                return k.packed_rows(w, r0, r1, ap_q4, n_tokens, y);
            case Path::PackedQ8:
                return k.packed_rows(w, r0, r1, ap_q8, n_tokens, y);
            case Path::KQuant:
                return k.kquant_rows(w, r0, r1, ak, n_tokens, y);
        }
    }
};

// Lays the activation forms the matrices need out in scratch, 64-byte aligned.
void place_activations(ManyCtx& c, int64_t cols, MatmulScratch& scratch) {
    const size_t nt = size_t(c.n_tokens);
    c.a.cols = cols;
    c.a.nb_pad = int64_t(ActQ8::align_up(size_t(cols / 32), 8));
    c.a.stride = ActQ8::token_bytes(cols);
    c.ap_q4.ng = c.ap_q8.ng = (cols / 32 + 15) / 16;
    c.ak.cols = cols;
    const size_t q8 = c.need_q8 ? c.a.stride * nt : 0;
    const size_t q4p = c.need_q4p ? c.ap_q4.stride() * nt : 0;
    const size_t q8p = c.need_q8p ? c.ap_q8.stride() * nt : 0;
    const size_t kq = c.need_k ? c.ak.stride() * nt : 0;
    const size_t need = q8 + q4p + q8p + kq + 64;
    if (scratch.buf.size() < need) scratch.buf.resize(need);
    const uintptr_t p = reinterpret_cast<uintptr_t>(scratch.buf.data());
    uint8_t* at = reinterpret_cast<uint8_t*>((p + 63) / 64 * 64);
    c.a.base = at;
    c.ap_q4.base = at += q8;
    c.ap_q8.base = at += q4p;
    c.ak.base = at += q8p;
}

}  // namespace

void matmul_many(ThreadPool& pool, std::span<const MatmulOut> outs, const float* x, int n_tokens,
                 MatmulScratch& scratch) {
    assert(outs.size() <= size_t(kMaxOuts));
    if (n_tokens <= 0) return;
    ManyCtx c(kernels(), x, n_tokens);
    int64_t cols = -1;
    int n_tasks = 0;
    for (const MatmulOut& o : outs) {
        if (!o.w || o.w->rows <= 0) continue;
        const WeightView& w = *o.w;
        assert(w.cols % 32 == 0 || is_float_type(w.type));
        assert(cols < 0 || cols == w.cols);  // one input for every matrix
        cols = w.cols;
        const int i = c.n_outs++;
        c.outs[i] = o;
        c.path[i] = path_of(c.k, w);
        c.chunk[i] = chunk_rows(w.rows, pool.size(), n_tokens);
        c.first_task[i] = n_tasks;
        n_tasks += int((w.rows + c.chunk[i] - 1) / c.chunk[i]);
        c.need_q8 |=
            c.path[i] == Path::Quant || c.path[i] == Path::PackedQ4 || c.path[i] == Path::PackedQ8;
        c.need_q4p |= c.path[i] == Path::PackedQ4;
        c.need_q8p |= c.path[i] == Path::PackedQ8;
        c.need_k |= c.path[i] == Path::KQuant;
    }
    if (c.n_outs == 0) return;
    c.first_task[c.n_outs] = n_tasks;
    place_activations(c, cols, scratch);

    // The activations once for all the matrices, then every matrix's row chunks in one pass
    // over the pool (one wait for all of them).
    if (c.need_q8 || c.need_k) {
        if (n_tokens == 1)
            c.quantize(0);
        else
            pool.parallel_for(n_tokens, [cp = &c](int t, int) { cp->quantize(t); });
    }
    pool.parallel_for(n_tasks, [cp = &c](int task, int) { cp->run(task); });
}

void matmul(ThreadPool& pool, const WeightView& w, const float* x, int n_tokens, float* y,
            MatmulScratch& scratch) {
    const MatmulOut one{&w, y};
    matmul_many(pool, {&one, 1}, x, n_tokens, scratch);
}

void get_row(const WeightView& w, int64_t row, float* dst) {
    assert(row >= 0 && row < w.rows);
    if (w.layout == WeightLayout::Packed) return dequantize_packed(w, row, 0, w.cols / 32, dst);
    dequantize_row(w.type, w.data + row * w.row_stride, dst, w.cols);
}

}  // namespace ember::cpu
