// The decoder forward pass on the CPU, in the spirit of llama2.c's forward(): one pass for every
// family, with the family's differences (model/arch.h) as plain branches on its traits.
#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <tuple>
#include <vector>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "common/log.h"
#include "cpu/backend_cpu.h"
#include "cpu/matmul.h"
#include "cpu/ops.h"
#include "quant/quant.h"

namespace ember::cpu {
namespace {

WeightView view(const Tensor& t) {
    return WeightView{t.type, t.rows(), t.cols(), t.data, t.row_stride};
}

// A layer's matrices as the kernels read them; fused ones replace their parts (Phi-3).
struct LayerViews {
    WeightView wq, wk, wv, wqkv, wo, gate, up, gate_up, down;
};

struct FreeDeleter {
    void operator()(uint8_t* p) const { std::free(p); }
};

// Whether the kernel hands out transparent huge pages where asked (enabled: always or madvise).
bool huge_pages_available() {
    std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string line;
    std::getline(f, line);
    return line.find("[always]") != std::string::npos ||
           line.find("[madvise]") != std::string::npos;
}

// MemAvailable of /proc/meminfo in bytes; 0 where unknown.
uint64_t memory_available() {
    std::ifstream f("/proc/meminfo");
    std::string key, unit;
    uint64_t kb = 0;
    while (f >> key >> kb >> unit)
        if (key == "MemAvailable:") return kb * 1024;
    return 0;
}

constexpr size_t align64(size_t n) {
    return (n + 63) / 64 * 64;
}

// One block of host memory for the matrices that decode streams through once per token, in
// 2 MiB pages where the kernel grants them: with 4 KiB pages every 4 KiB of weights costs a
// TLB miss, and its page walk is two-level under a hypervisor. Measured on an AVX2 EPYC VM
// (TinyLlama, one thread, CPU time per token): Q4_0 41-43 -> 26-29 ms, Q8_0 66 -> 51 ms.
class WeightArena {
public:
    static constexpr size_t kHugePage = size_t(2) << 20;
    // False where the memory cannot be had.
    bool reserve(size_t bytes) {
        const size_t cap = (bytes + kHugePage - 1) / kHugePage * kHugePage;
        if (cap == 0) return true;
        m_base.reset(static_cast<uint8_t*>(std::aligned_alloc(kHugePage, cap)));
        if (!m_base) return false;
#ifdef MADV_HUGEPAGE
        ::madvise(m_base.get(), cap, MADV_HUGEPAGE);  // advice: 4 KiB pages where refused
#endif
        m_cap = cap;
        return true;
    }
    // bytes of the block, 64-byte aligned; null once it is used up.
    uint8_t* take(size_t bytes) {
        if (!m_base || m_used + align64(bytes) > m_cap) return nullptr;
        uint8_t* p = m_base.get() + m_used;
        m_used += align64(bytes);
        return p;
    }

private:
    std::unique_ptr<uint8_t, FreeDeleter> m_base;
    size_t m_cap = 0, m_used = 0;
};

// Weights and the pool, shared by every session of the model.
class CpuModel final : public BackendModel {
public:
    CpuModel(const LlamaModel& m, int n_threads, uint32_t n_layers)
        : m_model(m), m_pool(n_threads), m_n_layers(n_layers) {
        m_info.kind = BackendKind::Cpu;
        m_info.device = cpu_name();
        m_info.n_threads = n_threads;
    }
    Result<std::unique_ptr<Runner>> create_runner(int n_ctx) override;
    const BackendInfo& info() const override { return m_info; }
    MemoryStats memory() const override;

    // Views of the matmul weights; Q4_0/Q8_0 are repacked (see WeightLayout) when the
    // kernels in use have a packed path. Checks, reports and stops as opt says.
    Status prepare_weights(const LoadOptions& opt);

    const LlamaModel& m_model;
    ThreadPool m_pool;
    // Layers [0, m_n_layers) run here; the output layer too where that is all of them.
    uint32_t m_n_layers;
    bool has_output() const { return m_n_layers == m_model.hp.n_layer; }
    BackendInfo m_info;
    std::vector<LayerViews> m_layers;
    WeightView m_output;

private:
    Result<WeightView> prepare(const Tensor& t);
    // The tensors this backend reads, each data once, in model.tensors()'s order (so a NaN
    // check reports the same first bad value as check_finite_weights), and the subset of
    // matrices prepare() is called on.
    std::vector<const Tensor*> used_tensors(std::set<const Tensor*>& matrices) const;
    // The check of t's rows in slices of a few MiB on the pool, reporting after each group of
    // slices; done/total count the load's bytes of work.
    Status check_tensor(const Tensor& t, const LoadOptions& opt, uint64_t& done, uint64_t total);
    // Where prepare() puts the matrices it repacks or copies (see WeightArena); m_packed holds
    // those that did not fit it.
    WeightArena m_arena;
    // Whether prepare() copies the matrices it does not repack into m_arena too (huge pages).
    bool m_copy_all = false;
    std::vector<std::unique_ptr<uint8_t, FreeDeleter>> m_packed;
    // Packed views by source: identical GGUF aliases (same bytes, type and shape) share one copy.
    std::map<std::tuple<const uint8_t*, GgmlType, int64_t, int64_t>, WeightView> m_shared;
};

Result<WeightView> CpuModel::prepare(const Tensor& t) {
    if (!t.present()) return WeightView{};  // a tensor this family does not use
    WeightView v = view(t);
    const bool pack = should_pack(v);
    if (!pack && !m_copy_all) return v;
    const auto key = std::make_tuple(v.data, v.type, v.rows, v.cols);
    if (auto it = m_shared.find(key); it != m_shared.end()) return it->second;
    const size_t bytes = size_t(v.rows) * v.row_stride;
    uint8_t* buf = m_arena.take(bytes);
    if (!buf && !pack) return v;  // a copy is only for speed
    if (!buf) {
        buf = static_cast<uint8_t*>(std::aligned_alloc(64, align64(bytes)));
        if (!buf)
            return make_error("cpu.out_of_memory", "cannot allocate " + std::to_string(bytes) +
                                                       " bytes to repack " + t.name);
        m_packed.emplace_back(buf);
    }
    WeightView packed = v;
    if (pack) {
        packed = pack_weight(m_pool, v, buf);
    } else {  // the same bytes, in slices of 4 MiB on the pool
        constexpr size_t kSlice = size_t(4) << 20;
        const int n = int((bytes + kSlice - 1) / kSlice);
        m_pool.parallel_for(n, [&](int i, int) {
            const size_t at = size_t(i) * kSlice;
            std::memcpy(buf + at, v.data + at, std::min(kSlice, bytes - at));
        });
        packed.data = buf;
    }
    // The mapped file's pages of this tensor are no longer read: let the kernel drop them
    // (advice only; MADV_PAGEOUT never discards data, so a heap-backed model is unaffected).
    const uintptr_t lo = (reinterpret_cast<uintptr_t>(t.data) + 4095) / 4096 * 4096;
    const uintptr_t hi = (reinterpret_cast<uintptr_t>(t.data) + bytes) / 4096 * 4096;
#ifdef MADV_PAGEOUT
    if (hi > lo) ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_PAGEOUT);
#endif
    m_shared.emplace(key, packed);
    return packed;
}

std::vector<const Tensor*> CpuModel::used_tensors(std::set<const Tensor*>& matrices) const {
    std::set<const Tensor*> unused;  // the layers and output another backend runs
    for (uint32_t l = m_n_layers; l < m_model.hp.n_layer; l++)
        for (const Tensor* t : m_model.tensors())
            if (t->name.rfind("blk." + std::to_string(l) + ".", 0) == 0) unused.insert(t);
    if (!has_output()) unused.insert({&m_model.output_norm, &m_model.output});
    for (uint32_t l = 0; l < m_n_layers; l++) {
        const LlamaLayer& L = m_model.layers[l];
        matrices.insert({&L.wq, &L.wk, &L.wv, &L.wqkv, &L.wo, &L.ffn_gate, &L.ffn_up,
                         &L.ffn_gate_up, &L.ffn_down});
    }
    if (has_output() && !m_model.tied_output) matrices.insert(&m_model.output);
    std::vector<const Tensor*> out;
    std::set<const uint8_t*> seen;
    for (const Tensor* t : m_model.tensors())
        if (!unused.count(t) && t->data && seen.insert(t->data).second) out.push_back(t);
    return out;
}

Status CpuModel::check_tensor(const Tensor& t, const LoadOptions& opt, uint64_t& done,
                              uint64_t total) {
    constexpr uint64_t kSliceBytes = 4u << 20;
    const int64_t rows = std::max<int64_t>(1, t.rows());
    const uint64_t row_bytes = std::max<uint64_t>(1, t.n_bytes / uint64_t(rows));
    const int64_t per_slice = int64_t(std::max<uint64_t>(1, kSliceBytes / row_bytes));
    const int64_t n_slices = (rows + per_slice - 1) / per_slice;
    // Groups of slices between reports: a few per thread, so every thread stays busy.
    const int64_t per_group = int64_t(m_pool.size()) * 4;
    std::vector<Status> found(size_t(std::min(n_slices, per_group)));
    for (int64_t g = 0; g < n_slices; g += per_group) {
        const int n = int(std::min(per_group, n_slices - g));
        m_pool.parallel_for(n, [&](int i, int) {
            const int64_t r0 = (g + i) * per_slice;
            found[size_t(i)] = opt.check_rows(t, r0, std::min(per_slice, rows - r0));
        });
        for (int i = 0; i < n; i++)  // the first bad value of the tensor, as a serial check
            if (!found[size_t(i)].ok()) return found[size_t(i)];
        done += uint64_t(std::min(per_slice * (g + n), rows) - per_slice * g) * row_bytes;
        if ((opt.cancel && opt.cancel->load()) ||
            (opt.progress && !opt.progress(float(double(std::min(done, total)) / double(total)))))
            return make_error("cpu.cancelled", "loading was cancelled");
    }
    return {};
}

Status CpuModel::prepare_weights(const LoadOptions& opt) {
    // Tensor by tensor in file order: check it, then repack it while its pages are fresh, and
    // report. The work is counted in bytes read: checked, then repacked.
    std::set<const Tensor*> matrices;
    const std::vector<const Tensor*> used = used_tensors(matrices);
    // The matrices go into one block of huge pages: those repacked always, the others (copied
    // as they are) where huge pages are to be had and the copies leave a quarter of the free
    // memory free (the file's pages of each are dropped once copied).
    size_t pack_bytes = 0, copy_bytes = 0;
    for (const Tensor* t : used)
        if (matrices.count(t))
            (should_pack(view(*t)) ? pack_bytes : copy_bytes) += align64(t->n_bytes);
    const uint64_t avail = memory_available();
    m_copy_all = huge_pages_available() && avail > 0 && pack_bytes + copy_bytes <= avail / 4 * 3;
    if (!m_arena.reserve(pack_bytes + (m_copy_all ? copy_bytes : 0)) && m_copy_all) {
        m_copy_all = false;           // the repacked ones alone, then; where even that fails,
        m_arena.reserve(pack_bytes);  // prepare() allocates them one by one
    }
    auto packs = [&](const Tensor* t) {
        return matrices.count(t) && (m_copy_all || should_pack(view(*t)));
    };
    uint64_t total = 0, done = 0;
    for (const Tensor* t : used)
        total += (opt.check_rows ? t->n_bytes : 0) + (packs(t) ? t->n_bytes : 0);
    auto stop = [&] {
        const float p = total ? float(double(std::min(done, total)) / double(total)) : 1.0f;
        return (opt.cancel && opt.cancel->load()) || (opt.progress && !opt.progress(p));
    };
    if (stop()) return make_error("cpu.cancelled", "loading was cancelled");
    for (const Tensor* t : used) {
        if (opt.check_rows) EMBER_TRY(check_tensor(*t, opt, done, std::max<uint64_t>(1, total)));
        if (!matrices.count(t)) continue;
        EMBER_TRY(prepare(*t));
        if (packs(t)) done += t->n_bytes;
        if (stop()) return make_error("cpu.cancelled", "loading was cancelled");
    }
    // The views, from prepare()'s copies above (a second call finds them).
    m_layers.clear();
    for (uint32_t l = 0; l < m_n_layers; l++) {
        const LlamaLayer& L = m_model.layers[l];
        LayerViews v;
        EMBER_ASSIGN_OR_RETURN(v.wq, prepare(L.wq));
        EMBER_ASSIGN_OR_RETURN(v.wk, prepare(L.wk));
        EMBER_ASSIGN_OR_RETURN(v.wv, prepare(L.wv));
        EMBER_ASSIGN_OR_RETURN(v.wqkv, prepare(L.wqkv));
        EMBER_ASSIGN_OR_RETURN(v.wo, prepare(L.wo));
        EMBER_ASSIGN_OR_RETURN(v.gate, prepare(L.ffn_gate));
        EMBER_ASSIGN_OR_RETURN(v.up, prepare(L.ffn_up));
        EMBER_ASSIGN_OR_RETURN(v.gate_up, prepare(L.ffn_gate_up));
        EMBER_ASSIGN_OR_RETURN(v.down, prepare(L.ffn_down));
        m_layers.push_back(v);
    }
    // A tied output shares tok_embd's bytes, which embedding lookups still read.
    if (!has_output()) {
        m_output = WeightView{};
    } else if (m_model.tied_output) {
        m_output = view(m_model.output);
    } else {
        EMBER_ASSIGN_OR_RETURN(m_output, prepare(m_model.output));
    }
    return {};
}

// One session: the KV cache and the activation buffers.
class CpuRunner final : public Runner {
public:
    CpuRunner(CpuModel& owner, int n_ctx);
    Status forward(std::span<const int32_t> tokens, int pos, float* logits) override;
    Status forward_hidden(std::span<const int32_t> tokens, int pos, float* hidden) override;
    int n_ctx() const override { return m_n_ctx; }
    // Checked before every layer: a long prompt on the CPU stops within one layer's time.
    void set_cancel(const std::atomic<bool>* cancel) override { m_cancel = cancel; }
    // Partial offload: rows of these layers' K/V to and from the device's F16 copy.
    Status copy_kv(Runner& device, int from, int to, bool to_device) override;
    float* host_k(uint32_t l) { return &m_k_cache[size_t(l) * m_n_ctx * hp.n_kv_dim()]; }
    float* host_v(uint32_t l) { return &m_v_cache[size_t(l) * m_n_ctx * hp.n_v_dim()]; }

private:
    Status check_input(std::span<const int32_t> tokens, int pos) const;
    void ensure_batch(int n);
    // False where the cancel flag ended it between layers (the cache rows then hold garbage
    // past what the session counts).
    bool forward_batch(const int32_t* tokens, int n, int pos, float* logits);
    Status cancelled() const {
        return make_error("cpu.cancelled", "cancelled during a forward pass on the CPU");
    }
    void embed(const int32_t* tokens, int n);
    void project_qkv(uint32_t l, int n);
    void attention_block(uint32_t l, int n, int pos);
    void ffn_block(uint32_t l, int n);
    void output(int n, float* logits);
    // Each of the n rows of x (stride `stride`) becomes rmsnorm(row) * w, in place.
    void norm_rows(float* x, int n, int stride, const Tensor& w, int len);

    CpuModel& m_owner;
    const LlamaModel& m;
    const LlamaHParams& hp;
    const ArchTraits& arch;
    int m_n_ctx;
    int m_batch_cap = 0;
    const std::atomic<bool>* m_cancel = nullptr;
    static constexpr int kMaxBatch = 256;  // prefill runs in chunks of this many tokens

    // KV cache, F32 (see ops.h), of this backend's layers L: k [L][n_ctx][n_kv_dim],
    // v [L][n_ctx][n_v_dim]
    std::vector<float> m_k_cache, m_v_cache;
    // Rope's frequency divisors for this context (Llama 3's, or LongRoPE's long or short
    // factors chosen by n_ctx): [n_rot/2], or nullptr
    const float* m_rope_factors = nullptr;
    // Activations for a batch of B tokens:
    std::vector<float> m_x;       // [B][n_embd] residual stream
    std::vector<float> m_xb;      // [B][n_embd] normed input / output of projections
    std::vector<float> m_q;       // [B][n_head*head_dim]
    std::vector<float> m_k;       // [B][n_kv_dim]
    std::vector<float> m_v;       // [B][n_v_dim]
    std::vector<float> m_qkv;     // [B][n_q_dim + n_kv_dim + n_v_dim], fused_qkv only
    std::vector<float> m_att;     // [B][n_head*head_dim_v] attention output
    std::vector<float> m_hb;      // [B][n_ff] gate, then act(gate)*up
    std::vector<float> m_hb2;     // [B][n_ff] up; [B][2*n_ff] gate|up with fused_gate_up
    std::vector<float> m_scores;  // [threads][n_ctx] attention scores
    MatmulScratch m_mm;
};

CpuRunner::CpuRunner(CpuModel& owner, int n_ctx)
    : m_owner(owner), m(owner.m_model), hp(m.hp), arch(m.hp.traits()), m_n_ctx(n_ctx) {
    m_k_cache.assign(size_t(owner.m_n_layers) * n_ctx * hp.n_kv_dim(), 0.0f);
    m_v_cache.assign(size_t(owner.m_n_layers) * n_ctx * hp.n_v_dim(), 0.0f);
    const Tensor* factors = m.rope_factors(n_ctx);
    m_rope_factors = factors ? reinterpret_cast<const float*>(factors->data) : nullptr;
    m_scores.assign(size_t(owner.m_pool.size()) * n_ctx, 0.0f);
    ensure_batch(1);
}

void CpuRunner::ensure_batch(int n) {
    if (n <= m_batch_cap) return;
    const size_t B = size_t(n);
    m_x.resize(B * hp.n_embd);
    m_xb.resize(B * hp.n_embd);
    m_q.resize(B * hp.n_q_dim());
    m_k.resize(B * hp.n_kv_dim());
    m_v.resize(B * hp.n_v_dim());
    if (arch.fused_qkv) m_qkv.resize(B * (hp.n_q_dim() + hp.n_kv_dim() + hp.n_v_dim()));
    m_att.resize(B * hp.n_att_dim());
    m_hb.resize(B * hp.n_ff);
    m_hb2.resize(B * hp.n_ff * (arch.fused_gate_up ? 2 : 1));
    m_batch_cap = n;
}

Status CpuRunner::check_input(std::span<const int32_t> tokens, int pos) const {
    if (tokens.empty()) return make_error("session.empty_batch", "forward: no tokens to evaluate");
    if (pos < 0 || size_t(pos) + tokens.size() > size_t(m_n_ctx))
        return make_error("session.context_full", "context full: " + std::to_string(pos) + " + " +
                                                      std::to_string(tokens.size()) +
                                                      " tokens exceed the context of " +
                                                      std::to_string(m_n_ctx));
    for (int32_t t : tokens)
        if (t < 0 || uint32_t(t) >= hp.n_vocab)
            return make_error("session.bad_token", "token id " + std::to_string(t) +
                                                       " is outside the vocabulary [0, " +
                                                       std::to_string(hp.n_vocab) + ")");
    return {};
}

Status CpuRunner::forward(std::span<const int32_t> tokens, int pos, float* logits) {
    if (!m_owner.has_output())
        return make_error("internal", "forward: this CPU runner has no output layer");
    EMBER_TRY(check_input(tokens, pos));
    for (size_t i = 0; i < tokens.size(); i += kMaxBatch) {
        const int n = int(std::min<size_t>(kMaxBatch, tokens.size() - i));
        const bool last = i + size_t(n) == tokens.size();
        if (!forward_batch(tokens.data() + i, n, pos + int(i), last ? logits : nullptr))
            return cancelled();
    }
    return {};
}

// The first layers of a split model: the residual stream after them, hidden [n][E].
Status CpuRunner::forward_hidden(std::span<const int32_t> tokens, int pos, float* hidden) {
    EMBER_TRY(check_input(tokens, pos));
    const size_t E = hp.n_embd;
    for (size_t i = 0; i < tokens.size(); i += kMaxBatch) {
        const int n = int(std::min<size_t>(kMaxBatch, tokens.size() - i));
        if (!forward_batch(tokens.data() + i, n, pos + int(i), nullptr)) return cancelled();
        std::copy_n(m_x.data(), size_t(n) * E, hidden + i * E);
    }
    return {};
}

// F16 <-> F32 rows (a prompt's K/V rows, tens of MB): with F16C where the CPU has it.
#if defined(__x86_64__)
__attribute__((target("avx,f16c"))) void to_f32_f16c(const uint16_t* src, float* dst, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(
            dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
    for (; i < n; ++i) dst[i] = fp16_to_fp32(src[i]);
}
__attribute__((target("avx,f16c"))) void to_f16_f16c(const float* src, uint16_t* dst, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; ++i) dst[i] = fp32_to_fp16(src[i]);
}
bool has_f16c() {
    static const bool yes = __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c");
    return yes;
}
#else
bool has_f16c() {
    return false;
}
void to_f32_f16c(const uint16_t*, float*, size_t) {}
void to_f16_f16c(const float*, uint16_t*, size_t) {}
#endif

void convert_row(const uint16_t* src, float* dst, size_t n) {
    if (has_f16c()) return to_f32_f16c(src, dst, n);
    for (size_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(src[i]);
}
void convert_row(const float* src, uint16_t* dst, size_t n) {
    if (has_f16c()) return to_f16_f16c(src, dst, n);
    for (size_t i = 0; i < n; ++i) dst[i] = fp32_to_fp16(src[i]);
}

// Rows [from, to) of every layer's K and V: the device keeps them F16 in host memory, [n_ctx][D]
// per layer like this cache; one task per layer and K/V on the pool.
Status CpuRunner::copy_kv(Runner& device, int from, int to, bool to_device) {
    if (from < 0 || from > to || to > m_n_ctx)
        return make_error("internal", "copy_kv: rows [" + std::to_string(from) + ", " +
                                          std::to_string(to) + ") outside the context of " +
                                          std::to_string(m_n_ctx));
    const size_t D = hp.n_kv_dim();
    if (hp.n_v_dim() != D)
        return make_error("internal", "copy_kv: value rows of another width than key rows");
    const uint32_t L = m_owner.m_n_layers;
    std::vector<uint16_t*> dev(2 * size_t(L));
    for (uint32_t l = 0; l < L; ++l)
        for (int v = 0; v < 2; ++v)
            if (!(dev[2 * l + v] = device.kv_f16(l, v == 1)))
                return make_error("internal",
                                  "copy_kv: the device keeps no K/V of layer " + std::to_string(l));
    if (from == to) return {};
    const size_t at = size_t(from) * D, n = size_t(to - from) * D;
    m_owner.m_pool.parallel_for(int(2 * L), [&](int task, int) {
        float* mine = task % 2 ? host_v(uint32_t(task / 2)) : host_k(uint32_t(task / 2));
        if (to_device)
            convert_row(mine + at, dev[size_t(task)] + at, n);
        else
            convert_row(dev[size_t(task)] + at, mine + at, n);
    });
    return {};
}

const float* f32(const Tensor& t) {
    return reinterpret_cast<const float*>(t.data);
}

void CpuRunner::norm_rows(float* x, int n, int stride, const Tensor& w, int len) {
    for (int t = 0; t < n; t++) {
        float* row = x + size_t(t) * stride;
        rms_norm(row, f32(w), row, len, hp.rms_eps);
    }
}

bool CpuRunner::forward_batch(const int32_t* tokens, int n, int pos, float* logits) {
    ensure_batch(n);
    embed(tokens, n);
    for (uint32_t l = 0; l < m_owner.m_n_layers; l++) {
        if (m_cancel && m_cancel->load()) return false;
        attention_block(l, n, pos);
        ffn_block(l, n);
    }
    if (logits) output(n, logits);
    return true;
}

// x[t] = tok_embd[token t]  [n][E]; Gemma scales it by sqrt(n_embd), rounded to float as
// Hugging Face does.
void CpuRunner::embed(const int32_t* tokens, int n) {
    const int E = int(hp.n_embd);
    for (int t = 0; t < n; t++) get_row(view(m.tok_embd), tokens[t], &m_x[size_t(t) * E]);
    if (arch.embd_scale) scale_inplace(m_x.data(), n * E, std::sqrt(float(E)));
}

// q [n][QD], k [n][KVD], v [n][VD] from the normed input xb [n][E].
void CpuRunner::project_qkv(uint32_t l, int n) {
    const LlamaLayer& L = m.layers[l];
    const LayerViews& W = m_owner.m_layers[l];
    ThreadPool& pool = m_owner.m_pool;
    const int QD = int(hp.n_q_dim()), KVD = int(hp.n_kv_dim()), VD = int(hp.n_v_dim());
    if (arch.fused_qkv) {
        // qkv = Wqkv xb [n][QD + KVD + VD]: each row holds q, then k, then v
        matmul(pool, W.wqkv, m_xb.data(), n, m_qkv.data(), m_mm);
        const size_t row = size_t(QD) + size_t(KVD) + size_t(VD);
        for (int t = 0; t < n; t++) {
            const float* r = &m_qkv[size_t(t) * row];
            std::copy_n(r, QD, &m_q[size_t(t) * QD]);
            std::copy_n(r + QD, KVD, &m_k[size_t(t) * KVD]);
            std::copy_n(r + QD + KVD, VD, &m_v[size_t(t) * VD]);
        }
    } else {
        // q = Wq xb, k = Wk xb, v = Wv xb, in one pass over the pool
        const MatmulOut qkv[] = {{&W.wq, m_q.data()}, {&W.wk, m_k.data()}, {&W.wv, m_v.data()}};
        matmul_many(pool, qkv, m_xb.data(), n, m_mm);
    }
    // Biases (Qwen 2): q += bq [QD], k += bk [KVD], v += bv [VD]
    for (int t = 0; t < n; t++) {
        if (L.bq.present()) add_inplace(&m_q[size_t(t) * QD], f32(L.bq), QD);
        if (L.bk.present()) add_inplace(&m_k[size_t(t) * KVD], f32(L.bk), KVD);
        if (L.bv.present()) add_inplace(&m_v[size_t(t) * VD], f32(L.bv), VD);
    }
}

void CpuRunner::attention_block(uint32_t l, int n, int pos) {
    const LlamaLayer& L = m.layers[l];
    const LayerViews& W = m_owner.m_layers[l];
    const LayerHParams lh = hp.layer_hp(l);
    ThreadPool& pool = m_owner.m_pool;
    const int E = int(hp.n_embd), KVD = int(hp.n_kv_dim()), QD = int(hp.n_q_dim());
    const int VD = int(hp.n_v_dim()), HD = int(hp.head_dim);
    float* k_cache = &m_k_cache[size_t(l) * m_n_ctx * KVD];  // [n_ctx][KVD]
    float* v_cache = &m_v_cache[size_t(l) * m_n_ctx * VD];   // [n_ctx][VD]

    // Attention input: xb = rmsnorm(x) * attn_norm  [n][E]
    for (int t = 0; t < n; t++)
        rms_norm(&m_x[size_t(t) * E], f32(L.attn_norm), &m_xb[size_t(t) * E], E, hp.rms_eps);

    // Projections (and biases): q [n][QD], k [n][KVD], v [n][VD]
    project_qkv(l, n);

    // Qwen 3, Gemma 3: RMSNorm over each head of q and k, before rope  [n * heads][HD]
    if (arch.qk_norm) {
        norm_rows(m_q.data(), n * int(hp.n_head), HD, L.q_norm, HD);
        norm_rows(m_k.data(), n * int(hp.n_head_kv), HD, L.k_norm, HD);
    }

    // RoPE on q and k with this layer's base and scale (YaRN, LongRoPE factors), then append
    // k and v to the cache at positions pos..pos+n-1
    RopeSpec rope_spec;
    rope_spec.n_rot = int(hp.n_rot);
    rope_spec.freq_base = lh.rope_base;
    rope_spec.freq_scale = lh.rope_freq_scale;
    rope_spec.freq_factors = m_rope_factors;
    rope_spec.neox = arch.rope == RopeMode::Neox;
    rope_spec.attn_factor = hp.rope_attn_factor;
    rope_spec.ext_factor = hp.yarn.ext_factor;
    rope_spec.beta_fast = hp.yarn.beta_fast;
    rope_spec.beta_slow = hp.yarn.beta_slow;
    rope_spec.n_ctx_orig = int(hp.n_ctx_orig);
    for (int t = 0; t < n; t++) {
        rope(&m_q[size_t(t) * QD], int(hp.n_head), HD, pos + t, rope_spec);
        rope(&m_k[size_t(t) * KVD], int(hp.n_head_kv), HD, pos + t, rope_spec);
    }
    std::copy_n(m_k.data(), size_t(n) * KVD, k_cache + size_t(pos) * KVD);
    std::copy_n(m_v.data(), size_t(n) * VD, v_cache + size_t(pos) * VD);

    // Causal grouped-query attention over the cache (soft-capped scores, sliding window on
    // the layers that have one): att [n][n_head * head_dim_v]
    AttentionSpec spec;
    spec.n_head = int(hp.n_head);
    spec.n_head_kv = int(hp.n_head_kv);
    spec.head_dim = HD;
    spec.scale = hp.attention_scale();
    spec.softcap = hp.attn_softcap;
    spec.window = lh.swa ? int(hp.n_swa) : 0;
    spec.head_dim_v = int(hp.v_head());
    attention(pool, m_q.data(), k_cache, v_cache, m_att.data(), n, pos, spec, m_scores.data());

    // Output projection: xb = Wo att [n][E]; Gemma norms it again before the residual
    matmul(pool, W.wo, m_att.data(), n, m_xb.data(), m_mm);
    if (L.post_attn_norm.present()) norm_rows(m_xb.data(), n, E, L.post_attn_norm, E);

    // Residual: x += xb
    add_inplace(m_x.data(), m_xb.data(), n * E);
}

void CpuRunner::ffn_block(uint32_t l, int n) {
    const LlamaLayer& L = m.layers[l];
    const LayerViews& W = m_owner.m_layers[l];
    ThreadPool& pool = m_owner.m_pool;
    const int E = int(hp.n_embd), F = int(hp.n_ff);
    auto act_mul = arch.act == FfnAct::GeluTanh ? gelu_tanh_mul : silu_mul;

    // FFN input: xb = rmsnorm(x) * ffn_norm  [n][E]
    for (int t = 0; t < n; t++)
        rms_norm(&m_x[size_t(t) * E], f32(L.ffn_norm), &m_xb[size_t(t) * E], E, hp.rms_eps);

    if (arch.fused_gate_up) {
        // Phi-3: hb2 = Wgate_up xb [n][2F], each row gate then up; hb = act(gate) * up [n][F]
        matmul(pool, W.gate_up, m_xb.data(), n, m_hb2.data(), m_mm);
        for (int t = 0; t < n; t++) {
            const float* gu = &m_hb2[size_t(t) * 2 * F];
            act_mul(gu, gu + F, &m_hb[size_t(t) * F], F);
        }
    } else {
        // Gated FFN: hb = act(Wgate xb) * (Wup xb)  [n][F]; act is SiLU or GELU-tanh (Gemma)
        const MatmulOut gate_up[] = {{&W.gate, m_hb.data()}, {&W.up, m_hb2.data()}};
        matmul_many(pool, gate_up, m_xb.data(), n, m_mm);
        act_mul(m_hb.data(), m_hb2.data(), m_hb.data(), n * F);
    }

    // Down projection: xb = Wdown hb [n][E]; Gemma norms it again before the residual
    matmul(pool, W.down, m_hb.data(), n, m_xb.data(), m_mm);
    if (L.post_ffn_norm.present()) norm_rows(m_xb.data(), n, E, L.post_ffn_norm, E);

    // Residual: x += xb
    add_inplace(m_x.data(), m_xb.data(), n * E);
}

// Final norm of the last token and the output head: logits = Wout rmsnorm(x) [n_vocab],
// soft-capped where the family does so (Gemma 2).
void CpuRunner::output(int n, float* logits) {
    const int E = int(hp.n_embd);
    float* x_last = &m_x[size_t(n - 1) * E];
    rms_norm(x_last, f32(m.output_norm), m_xb.data(), E, hp.rms_eps);
    matmul(m_owner.m_pool, m_owner.m_output, m_xb.data(), 1, logits, m_mm);
    if (hp.final_softcap > 0.0f) softcap(logits, int(hp.n_vocab), hp.final_softcap);
}

Result<std::unique_ptr<Runner>> CpuModel::create_runner(int n_ctx) {
    if (n_ctx <= 0) return make_error("session.bad_context", "context length must be positive");
    return std::unique_ptr<Runner>(new CpuRunner(*this, n_ctx));
}

MemoryStats CpuModel::memory() const {
    MemoryStats s;
    s.source = "process RSS";
    std::ifstream f("/proc/self/statm");
    uint64_t pages_total = 0, pages_rss = 0;
    if (f >> pages_total >> pages_rss) s.used = pages_rss * 4096;
    std::ifstream mi("/proc/meminfo");
    std::string key;
    uint64_t kb = 0;
    std::string unit;
    while (mi >> key >> kb >> unit)
        if (key == "MemTotal:") s.budget = kb * 1024;
    return s;
}

}  // namespace

std::string cpu_name() {
    std::ifstream f("/proc/cpuinfo");
    std::string line;
    while (std::getline(f, line)) {
        if (line.rfind("model name", 0) == 0) {
            auto p = line.find(':');
            if (p != std::string::npos) {
                std::string s = line.substr(p + 1);
                s.erase(0, s.find_first_not_of(' '));
                return s;
            }
        }
    }
    return "CPU";
}

Result<std::unique_ptr<BackendModel>> create_backend_model(const LlamaModel& model, int n_threads,
                                                           int n_layers, const LoadOptions& opt) {
    if (n_threads <= 0) n_threads = physical_cores();
    const uint32_t L =
        n_layers < 0 ? model.hp.n_layer : std::min<uint32_t>(uint32_t(n_layers), model.hp.n_layer);
    auto m = std::make_unique<CpuModel>(model, n_threads, L);
    EMBER_TRY(m->prepare_weights(opt));
    return std::unique_ptr<BackendModel>(std::move(m));
}

}  // namespace ember::cpu
