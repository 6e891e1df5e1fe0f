// The Llama forward pass on the CPU, in the spirit of llama2.c's forward().
#include <sys/mman.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <vector>

#include "common/log.h"
#include "cpu/backend_cpu.h"
#include "cpu/matmul.h"
#include "cpu/ops.h"

namespace ember::cpu {
namespace {

WeightView view(const Tensor& t) {
    return WeightView{t.type, t.rows(), t.cols(), t.data, t.row_stride};
}

struct LayerViews {
    WeightView wq, wk, wv, wo, gate, up, down;
};

struct FreeDeleter {
    void operator()(uint8_t* p) const { std::free(p); }
};

// Weights and the pool, shared by every session of the model.
class CpuModel final : public BackendModel {
public:
    CpuModel(const LlamaModel& m, int n_threads) : m_model(m), m_pool(n_threads) {
        m_info.kind = BackendKind::Cpu;
        m_info.device = cpu_name();
        m_info.n_threads = n_threads;
    }
    Result<std::unique_ptr<Runner>> create_runner(int n_ctx) override;
    const BackendInfo& info() const override { return m_info; }
    MemoryStats memory() const override;

    // Views of the matmul weights; Q4_0/Q8_0 are repacked (see WeightLayout) when the
    // kernels in use have a packed path.
    Status prepare_weights();

    const LlamaModel& m_model;
    ThreadPool m_pool;
    BackendInfo m_info;
    std::vector<LayerViews> m_layers;
    WeightView m_output;

private:
    Result<WeightView> prepare(const Tensor& t);
    std::vector<std::unique_ptr<uint8_t, FreeDeleter>> m_packed;
};

Result<WeightView> CpuModel::prepare(const Tensor& t) {
    WeightView v = view(t);
    if (!should_pack(v)) return v;
    const size_t bytes = size_t(v.rows) * v.row_stride;
    auto* buf = static_cast<uint8_t*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64));
    if (!buf)
        return make_error("cpu.out_of_memory", "cannot allocate " + std::to_string(bytes) +
                                                   " bytes to repack " + t.name);
    m_packed.emplace_back(buf);
    WeightView packed = pack_weight(m_pool, v, buf);
    // The mapped file's pages of this tensor are no longer read: let the kernel drop them
    // (advice only; MADV_PAGEOUT never discards data, so a heap-backed model is unaffected).
    const uintptr_t lo = (reinterpret_cast<uintptr_t>(t.data) + 4095) / 4096 * 4096;
    const uintptr_t hi = (reinterpret_cast<uintptr_t>(t.data) + bytes) / 4096 * 4096;
#ifdef MADV_PAGEOUT
    if (hi > lo) ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_PAGEOUT);
#endif
    return packed;
}

Status CpuModel::prepare_weights() {
    m_layers.clear();
    for (const LlamaLayer& L : m_model.layers) {
        LayerViews v;
        EMBER_ASSIGN_OR_RETURN(v.wq, prepare(L.wq));
        EMBER_ASSIGN_OR_RETURN(v.wk, prepare(L.wk));
        EMBER_ASSIGN_OR_RETURN(v.wv, prepare(L.wv));
        EMBER_ASSIGN_OR_RETURN(v.wo, prepare(L.wo));
        EMBER_ASSIGN_OR_RETURN(v.gate, prepare(L.ffn_gate));
        EMBER_ASSIGN_OR_RETURN(v.up, prepare(L.ffn_up));
        EMBER_ASSIGN_OR_RETURN(v.down, prepare(L.ffn_down));
        m_layers.push_back(v);
    }
    // A tied output shares tok_embd's bytes, which embedding lookups still read.
    if (m_model.tied_output) {
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
    int n_ctx() const override { return m_n_ctx; }

private:
    void ensure_batch(int n);
    void forward_batch(const int32_t* tokens, int n, int pos, float* logits);

    CpuModel& m_owner;
    const LlamaModel& m;
    int m_n_ctx;
    int m_batch_cap = 0;
    static constexpr int kMaxBatch = 256;  // prefill runs in chunks of this many tokens

    // KV cache, F32 (see ops.h): [n_layer][n_ctx][n_kv_dim]
    std::vector<float> m_k_cache, m_v_cache;
    // Activations for a batch of B tokens:
    std::vector<float> m_x;      // [B][n_embd] residual stream
    std::vector<float> m_xb;     // [B][n_embd] normed input / output of projections
    std::vector<float> m_q;      // [B][n_head*head_dim]
    std::vector<float> m_k;      // [B][n_kv_dim]
    std::vector<float> m_v;      // [B][n_kv_dim]
    std::vector<float> m_att;    // [B][n_head*head_dim] attention output
    std::vector<float> m_hb;     // [B][n_ff] gate, then silu(gate)*up
    std::vector<float> m_hb2;    // [B][n_ff] up
    std::vector<float> m_scores; // [threads][n_ctx] attention scores
    MatmulScratch m_mm;
};

CpuRunner::CpuRunner(CpuModel& owner, int n_ctx) : m_owner(owner), m(owner.m_model), m_n_ctx(n_ctx) {
    const size_t kv = size_t(m.hp.n_layer) * n_ctx * m.hp.n_kv_dim();
    m_k_cache.assign(kv, 0.0f);
    m_v_cache.assign(kv, 0.0f);
    m_scores.assign(size_t(owner.m_pool.size()) * n_ctx, 0.0f);
    ensure_batch(1);
}

void CpuRunner::ensure_batch(int n) {
    if (n <= m_batch_cap) return;
    const auto& hp = m.hp;
    const size_t B = size_t(n);
    m_x.resize(B * hp.n_embd);
    m_xb.resize(B * hp.n_embd);
    m_q.resize(B * hp.n_head * hp.head_dim);
    m_k.resize(B * hp.n_kv_dim());
    m_v.resize(B * hp.n_kv_dim());
    m_att.resize(B * hp.n_head * hp.head_dim);
    m_hb.resize(B * hp.n_ff);
    m_hb2.resize(B * hp.n_ff);
    m_batch_cap = n;
}

Status CpuRunner::forward(std::span<const int32_t> tokens, int pos, float* logits) {
    if (tokens.empty()) return make_error("session.empty_batch", "forward: no tokens to evaluate");
    if (pos < 0 || size_t(pos) + tokens.size() > size_t(m_n_ctx))
        return make_error("session.context_full",
                          "context full: " + std::to_string(pos) + " + " +
                              std::to_string(tokens.size()) + " tokens exceed the context of " +
                              std::to_string(m_n_ctx));
    for (int32_t t : tokens)
        if (t < 0 || uint32_t(t) >= m.hp.n_vocab)
            return make_error("session.bad_token", "token id " + std::to_string(t) +
                                                       " is outside the vocabulary [0, " +
                                                       std::to_string(m.hp.n_vocab) + ")");
    for (size_t i = 0; i < tokens.size(); i += kMaxBatch) {
        const int n = int(std::min<size_t>(kMaxBatch, tokens.size() - i));
        const bool last = i + size_t(n) == tokens.size();
        forward_batch(tokens.data() + i, n, pos + int(i), last ? logits : nullptr);
    }
    return {};
}

void CpuRunner::forward_batch(const int32_t* tokens, int n, int pos, float* logits) {
    ensure_batch(n);
    const LlamaHParams& hp = m.hp;
    ThreadPool& pool = m_owner.m_pool;
    const int E = int(hp.n_embd), KVD = int(hp.n_kv_dim()), QD = int(hp.n_head * hp.head_dim);
    const int F = int(hp.n_ff);
    const float* freq_factors =
        m.rope_freqs.present() ? reinterpret_cast<const float*>(m.rope_freqs.data) : nullptr;

    // Token embedding: x[t] = tok_embd[token t]
    for (int t = 0; t < n; t++) get_row(view(m.tok_embd), tokens[t], &m_x[size_t(t) * E]);

    for (uint32_t l = 0; l < hp.n_layer; l++) {
        const LlamaLayer& L = m.layers[l];
        const LayerViews& W = m_owner.m_layers[l];
        const auto* attn_norm = reinterpret_cast<const float*>(L.attn_norm.data);  // [E]
        const auto* ffn_norm = reinterpret_cast<const float*>(L.ffn_norm.data);    // [E]
        float* k_cache = &m_k_cache[size_t(l) * m_n_ctx * KVD];  // [n_ctx][KVD]
        float* v_cache = &m_v_cache[size_t(l) * m_n_ctx * KVD];  // [n_ctx][KVD]

        // Attention input: xb = rmsnorm(x) * attn_norm
        for (int t = 0; t < n; t++)
            rms_norm(&m_x[size_t(t) * E], attn_norm, &m_xb[size_t(t) * E], E, hp.rms_eps);

        // Projections: q = Wq xb [QD], k = Wk xb [KVD], v = Wv xb [KVD]
        matmul(pool, W.wq, m_xb.data(), n, m_q.data(), m_mm);
        matmul(pool, W.wk, m_xb.data(), n, m_k.data(), m_mm);
        matmul(pool, W.wv, m_xb.data(), n, m_v.data(), m_mm);

        // RoPE on q and k, then append k and v to the cache at positions pos..pos+n-1
        for (int t = 0; t < n; t++) {
            rope(&m_q[size_t(t) * QD], int(hp.n_head), int(hp.head_dim), int(hp.n_rot), pos + t,
                 hp.rope_freq_base, freq_factors);
            rope(&m_k[size_t(t) * KVD], int(hp.n_head_kv), int(hp.head_dim), int(hp.n_rot),
                 pos + t, hp.rope_freq_base, freq_factors);
        }
        std::copy_n(m_k.data(), size_t(n) * KVD, k_cache + size_t(pos) * KVD);
        std::copy_n(m_v.data(), size_t(n) * KVD, v_cache + size_t(pos) * KVD);

        // Causal grouped-query attention over the cache: att [n][QD]
        attention(pool, m_q.data(), k_cache, v_cache, m_att.data(), n, pos, int(hp.n_head),
                  int(hp.n_head_kv), int(hp.head_dim), m_scores.data());

        // Output projection and residual: x += Wo att
        matmul(pool, W.wo, m_att.data(), n, m_xb.data(), m_mm);
        add_inplace(m_x.data(), m_xb.data(), n * E);

        // FFN input: xb = rmsnorm(x) * ffn_norm
        for (int t = 0; t < n; t++)
            rms_norm(&m_x[size_t(t) * E], ffn_norm, &m_xb[size_t(t) * E], E, hp.rms_eps);

        // SwiGLU: hb = silu(Wgate xb) * (Wup xb)  [n][F]
        matmul(pool, W.gate, m_xb.data(), n, m_hb.data(), m_mm);
        matmul(pool, W.up, m_xb.data(), n, m_hb2.data(), m_mm);
        silu_mul(m_hb.data(), m_hb2.data(), m_hb.data(), n * F);

        // Down projection and residual: x += Wdown hb
        matmul(pool, W.down, m_hb.data(), n, m_xb.data(), m_mm);
        add_inplace(m_x.data(), m_xb.data(), n * E);
    }
    if (!logits) return;

    // Final norm of the last token and the output head: logits = Wout rmsnorm(x) [n_vocab]
    float* x_last = &m_x[size_t(n - 1) * E];
    rms_norm(x_last, reinterpret_cast<const float*>(m.output_norm.data), m_xb.data(), E,
             hp.rms_eps);
    matmul(pool, m_owner.m_output, m_xb.data(), 1, logits, m_mm);
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

Result<std::unique_ptr<BackendModel>> create_backend_model(const LlamaModel& model, int n_threads) {
    if (n_threads <= 0) n_threads = physical_cores();
    auto m = std::make_unique<CpuModel>(model, n_threads);
    EMBER_TRY(m->prepare_weights());
    return std::unique_ptr<BackendModel>(std::move(m));
}

}  // namespace ember::cpu
