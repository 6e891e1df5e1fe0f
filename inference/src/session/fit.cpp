// ember::estimate_fit: the loader's own memory numbers, for the model dialog. A file and a
// catalog entry (a shape and a file type) go through the same estimate: the entry becomes the
// model its file would load as, with the tensor types llama-quantize gives that file type.
#include <algorithm>

#include "common/log.h"
#include "ember/ember.h"
#include "gguf/gguf.h"
#include "gguf/writer.h"
#include "model/hparams.h"
#include "model/llama.h"
#include "quant/mix.h"
#include "session/memory.h"
#include "session/offload.h"
#ifdef EMBER_HAVE_VULKAN
#include "vulkan/vulkan_backend.h"
#endif

namespace ember {
namespace {

#ifdef EMBER_HAVE_VULKAN
// Vulkan errors that mean there is no GPU to run on at all, rather than that this model does
// not run on the one there is.
bool no_gpu_code(const std::string& code) {
    return code == "vulkan.no_driver" || code == "vulkan.no_device" ||
           code == "vulkan.no_suitable_device" || code == "vulkan.init_failed" ||
           code == "vulkan.no_loader";
}
#endif

// Runs on the CPU: the weights (mapped from the file, or their repacked copies) + KV cache +
// buffers, against the free RAM.
FitEstimate on_cpu(const LlamaModel& m, int n_ctx, std::string why, bool no_gpu,
                   const FitLimits& limits) {
    FitEstimate f;
    const CpuMemoryNeed need = cpu_runtime_need(m.hp, n_ctx, 0);
    f.weights = m.weight_bytes;
    f.kv_cache = need.kv_cache;
    f.scratch = need.buffers;
    f.total = f.weights + f.kv_cache + f.scratch;
    if (limits.host_available) {
        f.available = limits.host_available;
        f.available_source = "override";
    } else {
        const HostMemory host = host_memory();
        f.available = host.available;
        f.available_source = host.source;
    }
    f.no_gpu = no_gpu;
    f.cpu_reason = std::move(why);
    if (f.total > f.available) {
        f.verdict = FitEstimate::Verdict::NoMemory;
        f.message = "does not fit in memory: needs " + format_bytes(f.total) + " of RAM, " +
                    format_bytes(f.available) + " free (runs on the CPU: " + f.cpu_reason + ")";
    } else {
        f.verdict = FitEstimate::Verdict::CpuOnly;
        f.message = "CPU only: " + f.cpu_reason;
    }
    return f;
}

// The verdict for a model, whichever way it was described.
FitEstimate verdict_for(const LlamaModel& m, int n_ctx, const std::string& device,
                        const FitLimits& limits) {
    if (device == "cpu") return on_cpu(m, n_ctx, "the device setting is CPU", false, limits);
    if (limits.n_gpu_layers == 0) return on_cpu(m, n_ctx, "n_gpu_layers is 0", false, limits);
#ifdef EMBER_HAVE_VULKAN
    const vulkan::GpuBudget budget{limits.gpu_available, limits.gpu_mem_limit,
                                   limits.gpu_mem_reserve};
    const uint32_t L = m.hp.n_layer;
    const bool all = limits.n_gpu_layers < 0 || uint32_t(limits.n_gpu_layers) >= L;
    auto est = vulkan::estimate_fit(m, n_ctx, device, budget);
    if (!est) return on_cpu(m, n_ctx, est.error().message, no_gpu_code(est.error().code), limits);
    FitEstimate f;
    auto take = [&](const vulkan::FitEstimate& e) {
        f.weights = e.weights;
        f.kv_cache = e.kv_cache;
        f.scratch = e.scratch;
        f.total = e.total;
        f.available = e.available;
        f.device = e.device;
        f.available_source = e.available_source;
    };
    take(*est);
    f.n_layers = L;
    if (est->fits && all) {
        f.verdict = FitEstimate::Verdict::FitsGpu;
        f.gpu_layers = L;
        f.message = "fits on GPU (" + f.device + "): needs " + format_bytes(f.total) + ", " +
                    format_bytes(f.available) + " free";
        return f;
    }
    // Partial offload: the loader's split (offload.cpp), at least one layer on each side.
    if (L >= 2) {
        const int most = int(L) - 1;
        auto split = vulkan::estimate_split(m, n_ctx, device, budget,
                                            all ? most : std::min(limits.n_gpu_layers, most));
        if (split && split->fits) {
            FitEstimate cpu = on_cpu(m, n_ctx, "", false, limits);
            f.verdict = FitEstimate::Verdict::DoesNotFit;
            f.gpu_layers = L - split->first_layer;
            f.split_gpu_bytes = split->total;
            f.cpu_reason =
                "the first " + std::to_string(split->first_layer) + " layers run on the CPU";
            f.message = std::string(all ? "partly fits: " : "split as asked: ") +
                        describe_split(f.gpu_layers, L, f.available, f.available_source) +
                        "; all of it needs " + format_bytes(f.total);
            if (uint64_t copy = host_copy_bytes(m, split->first_layer, n_ctx))
                f.message +=
                    "; prompts run every layer on the GPU from a copy of the CPU's "
                    "layers in " +
                    format_bytes(copy) + " of host RAM";
            // The CPU's share, at most the whole model's, must fit the RAM too.
            if (cpu.verdict == FitEstimate::Verdict::NoMemory) f.message += "; " + cpu.message;
            return f;
        }
    }
    // The loader runs it on the CPU then: "does not fit in memory" when the RAM cannot hold it.
    const std::string gpu = "needs " + format_bytes(f.total) + ", " + format_bytes(f.available) +
                            " free on " + f.device;
    FitEstimate cpu = on_cpu(m, n_ctx, "it does not fit the GPU (" + gpu + ")", false, limits);
    if (cpu.verdict == FitEstimate::Verdict::NoMemory) return cpu;
    f.verdict = FitEstimate::Verdict::DoesNotFit;
    f.cpu_reason = cpu.cpu_reason;
    f.message = "does not fit: " + gpu;
    return f;
#else
    (void)device;
    return on_cpu(m, n_ctx, "this build of Ember has no Vulkan backend", true, limits);
#endif
}

int context_for(const LlamaModel& m, int n_ctx) {
    return int(std::max<int64_t>(1, std::min<int64_t>(n_ctx, m.hp.max_ctx())));
}

// The metadata a converter writes for the shape; read back by the loader's own reader.
Result<LlamaHParams> shape_hparams(const ModelShape& s) {
    gguf::Writer w;
    const std::string A = s.arch + ".";
    w.set_string("general.architecture", s.arch);
    w.set_u32(A + "block_count", s.n_layer);
    w.set_u32(A + "embedding_length", s.n_embd);
    w.set_u32(A + "feed_forward_length", s.n_ff);
    w.set_u32(A + "attention.head_count", s.n_head);
    w.set_u32(A + "attention.head_count_kv", s.n_head_kv);
    if (s.n_ctx_train) w.set_u32(A + "context_length", s.n_ctx_train);
    if (s.sliding_window) w.set_u32(A + "attention.sliding_window", s.sliding_window);
    if (s.head_dim) {
        w.set_u32(A + "attention.key_length", s.head_dim);
        w.set_u32(A + "attention.value_length", s.head_dim);
    }
    EMBER_ASSIGN_OR_RETURN(auto bytes, w.to_bytes());
    EMBER_ASSIGN_OR_RETURN(auto file,
                           gguf::File::from_bytes(std::move(bytes), "the catalog entry"));
    return read_hparams(*file);
}

}  // namespace

Result<FitEstimate> estimate_fit(const std::string& path, int n_ctx, const std::string& device,
                                 const FitLimits& limits) {
    EMBER_ASSIGN_OR_RETURN(auto file, gguf::File::open(path));
    EMBER_ASSIGN_OR_RETURN(LlamaModel m, load_llama(*file));
    return verdict_for(m, context_for(m, n_ctx), device, limits);
}

Result<FitEstimate> estimate_fit(const ModelShape& s, int n_ctx, const std::string& device,
                                 const FitLimits& limits) {
    if (!s.n_layer || !s.n_embd || !s.n_head || !s.n_head_kv || !s.n_ff || !s.n_vocab)
        return make_error("fit.unknown_shape", "the model's shape is unknown");
    const auto ft = find_file_type(s.file_type);
    if (!ft)
        return make_error("fit.unknown_file_type",
                          "file type '" + s.file_type + "' is not one llama-quantize writes");
    LlamaModel m;
    EMBER_ASSIGN_OR_RETURN(m.hp, shape_hparams(s));
    m.hp.n_vocab = s.n_vocab;
    // Without a trained context the one asked for is taken, as the app's own default would be.
    if (!s.n_ctx_train) m.hp.n_ctx_train = uint32_t(std::max(n_ctx, 1));
    const LlamaHParams& hp = m.hp;
    const ArchTraits& arch = hp.traits();
    const MixModel mix{s.arch, hp.n_layer, hp.n_head, hp.n_head_kv, !s.tied};

    // Each tensor as load_model binds it: the file's name, [cols, rows], the quantizer's type.
    // Its data pointer is an identity only (the backends count a tensor's bytes once per
    // distinct pointer, as a file's tied output shares the embedding's): a byte of `ids` each,
    // never read.
    Status st;
    std::vector<uint8_t> ids(size_t(hp.n_layer) * 32 + 8);
    size_t next_id = 0;
    auto tensor = [&](const std::string& name, int64_t cols, int64_t rows) {
        Tensor t;
        auto type = llamacpp_tensor_type(*ft, mix, name, uint64_t(cols), rows > 1 ? 2 : 1);
        if (!type) {
            if (st.ok()) st = type.take_error();
            return t;
        }
        t.name = name;
        t.type = *type;
        t.ne[0] = cols;
        t.ne[1] = rows;
        t.row_stride = row_bytes(*type_traits(t.type), uint64_t(cols));
        t.n_bytes = t.row_stride * uint64_t(rows);
        t.data = &ids.at(next_id++);
        m.weight_bytes += t.n_bytes;
        return t;
    };
    const int64_t E = hp.n_embd, F = hp.n_ff, V = hp.n_vocab, HD = hp.head_dim;
    const int64_t QD = hp.n_q_dim(), KVD = hp.n_kv_dim();
    m.tok_embd = tensor("token_embd.weight", E, V);
    m.output_norm = tensor("output_norm.weight", E, 1);
    m.tied_output = s.tied;
    m.output = s.tied ? m.tok_embd : tensor("output.weight", E, V);
    m.layers.resize(hp.n_layer);
    for (uint32_t i = 0; i < hp.n_layer; i++) {
        LlamaLayer& l = m.layers[i];
        const std::string p = "blk." + std::to_string(i) + ".";
        l.attn_norm = tensor(p + "attn_norm.weight", E, 1);
        if (arch.fused_qkv) {
            l.wqkv = tensor(p + "attn_qkv.weight", E, QD + 2 * KVD);
        } else {
            l.wq = tensor(p + "attn_q.weight", E, QD);
            l.wk = tensor(p + "attn_k.weight", E, KVD);
            l.wv = tensor(p + "attn_v.weight", E, KVD);
        }
        if (arch.qkv_bias) {
            l.bq = tensor(p + "attn_q.bias", QD, 1);
            l.bk = tensor(p + "attn_k.bias", KVD, 1);
            l.bv = tensor(p + "attn_v.bias", KVD, 1);
        }
        if (arch.qk_norm) {
            l.q_norm = tensor(p + "attn_q_norm.weight", HD, 1);
            l.k_norm = tensor(p + "attn_k_norm.weight", HD, 1);
        }
        l.wo = tensor(p + "attn_output.weight", QD, E);
        if (arch.post_norms) {
            l.post_attn_norm = tensor(p + "post_attention_norm.weight", E, 1);
            l.post_ffn_norm = tensor(p + "post_ffw_norm.weight", E, 1);
        }
        l.ffn_norm = tensor(p + "ffn_norm.weight", E, 1);
        if (arch.fused_gate_up) {
            l.ffn_gate_up = tensor(p + "ffn_up.weight", E, 2 * F);
        } else {
            l.ffn_gate = tensor(p + "ffn_gate.weight", E, F);
            l.ffn_up = tensor(p + "ffn_up.weight", E, F);
        }
        l.ffn_down = tensor(p + "ffn_down.weight", F, E);
    }
    if (!st.ok()) return st.take_error();
    return verdict_for(m, context_for(m, n_ctx), device, limits);
}

}  // namespace ember
