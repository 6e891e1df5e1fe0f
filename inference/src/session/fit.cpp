// ember::estimate_fit: the loader's own memory numbers, for the model dialog.
#include "common/log.h"
#include "ember/ember.h"
#include "gguf/gguf.h"
#include "model/llama.h"
#ifdef EMBER_HAVE_VULKAN
#include "vulkan/vulkan_backend.h"
#endif

namespace ember {
namespace {

FitEstimate cpu_only(std::string why) {
    FitEstimate f;
    f.verdict = FitEstimate::Verdict::CpuOnly;
    f.message = "CPU only: " + why;
    return f;
}

// Builds the verdict from the Vulkan backend's estimate of a model.
FitEstimate verdict_for(const LlamaModel& m, int n_ctx, const std::string& device) {
#ifdef EMBER_HAVE_VULKAN
    auto est = vulkan::estimate_fit(m, n_ctx, device);
    if (!est) return cpu_only(est.error().message);
    FitEstimate f;
    f.weights = est->weights;
    f.kv_cache = est->kv_cache;
    f.scratch = est->scratch;
    f.total = est->total;
    f.available = est->available;
    f.device = est->device;
    f.available_source = est->available_source;
    if (est->fits) {
        f.verdict = FitEstimate::Verdict::FitsGpu;
        f.message = "fits on GPU (" + f.device + "): needs " + format_bytes(f.total) + ", " +
                    format_bytes(f.available) + " free";
    } else {
        f.verdict = FitEstimate::Verdict::DoesNotFit;
        f.message = "does not fit: needs " + format_bytes(f.total) + ", " +
                    format_bytes(f.available) + " free on " + f.device;
    }
    return f;
#else
    (void)m, (void)n_ctx, (void)device;
    return cpu_only("this build of Ember has no Vulkan backend");
#endif
}

}  // namespace

Result<FitEstimate> estimate_fit(const std::string& path, int n_ctx, const std::string& device) {
    EMBER_ASSIGN_OR_RETURN(auto file, gguf::File::open(path));
    EMBER_ASSIGN_OR_RETURN(LlamaModel m, load_llama(*file));
    return verdict_for(m, std::min<int>(n_ctx, int(m.hp.n_ctx_train)), device);
}

FitEstimate estimate_fit(const ModelShape& s, uint64_t weight_bytes, int n_ctx,
                         const std::string& device) {
    if (!s.n_layer || !s.n_embd || !s.n_head || !s.n_head_kv || !s.n_vocab || s.n_embd % s.n_head)
        return cpu_only("the model's shape is unknown");
    // A stand-in model with the real shape whose tensors share the weight bytes in proportion
    // to their element counts, so the backend applies its own layout rules to it.
    LlamaModel m;
    m.hp.n_layer = s.n_layer;
    m.hp.n_embd = s.n_embd;
    m.hp.n_head = s.n_head;
    m.hp.n_head_kv = s.n_head_kv;
    m.hp.n_ff = s.n_ff;
    m.hp.n_vocab = s.n_vocab;
    m.hp.head_dim = s.n_embd / s.n_head;
    m.hp.n_rot = m.hp.head_dim;
    m.hp.n_ctx_train = uint32_t(std::max(n_ctx, 1));
    const double E = s.n_embd, F = s.n_ff, V = s.n_vocab, KVD = double(s.n_head_kv) * m.hp.head_dim;
    const double per_layer = E * E * 2 + E * KVD * 2 + E * F * 3;
    const double total = per_layer * s.n_layer + V * E * 2;
    auto tensor = [&](const char* name, double elems, int64_t cols, int64_t rows) {
        Tensor t;
        t.name = name;
        t.type = GgmlType::F32;
        t.ne[0] = cols;
        t.ne[1] = rows;
        t.n_bytes = uint64_t(double(weight_bytes) * elems / total);
        t.row_stride = t.n_bytes / uint64_t(std::max<int64_t>(rows, 1));
        return t;
    };
    m.tok_embd = tensor("token_embd.weight", V * E, s.n_embd, s.n_vocab);
    m.output = tensor("output.weight", V * E, s.n_embd, s.n_vocab);
    m.output_norm = tensor("output_norm.weight", 0, s.n_embd, 1);
    m.layers.resize(s.n_layer);
    for (auto& l : m.layers) {
        l.wq = tensor("attn_q", E * E, s.n_embd, s.n_embd);
        l.wo = tensor("attn_output", E * E, s.n_embd, s.n_embd);
        l.wk = tensor("attn_k", E * KVD, s.n_embd, int64_t(KVD));
        l.wv = tensor("attn_v", E * KVD, s.n_embd, int64_t(KVD));
        l.ffn_gate = tensor("ffn_gate", E * F, s.n_embd, s.n_ff);
        l.ffn_up = tensor("ffn_up", E * F, s.n_embd, s.n_ff);
        l.ffn_down = tensor("ffn_down", E * F, s.n_ff, s.n_embd);
        l.attn_norm = tensor("attn_norm", 0, s.n_embd, 1);
        l.ffn_norm = tensor("ffn_norm", 0, s.n_embd, 1);
    }
    m.weight_bytes = weight_bytes;
    return verdict_for(m, n_ctx, device);
}

}  // namespace ember
