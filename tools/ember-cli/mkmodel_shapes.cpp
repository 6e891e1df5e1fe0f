#include "mkmodel_shapes.h"

#include <cmath>

namespace ember::cli::mkmodel {
namespace {

Shape llama(uint32_t embd, uint32_t layers, uint32_t heads, uint32_t kv, uint32_t ffn,
            uint32_t vocab, uint32_t ctx, float base, bool tied) {
    Shape s;
    s.embd = embd, s.layers = layers, s.heads = heads, s.kv_heads = kv, s.ffn = ffn;
    s.vocab = vocab, s.ctx = ctx, s.rope_base = base, s.tied = tied;
    return s;
}

Shape with(Shape s, const char* arch, float eps) {
    s.arch = arch;
    s.norm_eps = eps;
    return s;
}

// Real models' shapes, from their Hugging Face config.json (vocabulary sizes included).
std::map<std::string, Shape> make_presets() {
    std::map<std::string, Shape> p;
    p["tinyllama-1.1b"] = llama(2048, 22, 32, 4, 5632, 32000, 2048, 10000.0f, false);
    p["llama2-7b"] = llama(4096, 32, 32, 32, 11008, 32000, 4096, 10000.0f, false);
    p["llama3-8b"] = llama(4096, 32, 32, 8, 14336, 128256, 8192, 500000.0f, false);
    p["llama3.1-8b"] = llama(4096, 32, 32, 8, 14336, 128256, 131072, 500000.0f, false);
    p["llama3.1-8b"].llama3_rope = 8.0f;
    p["llama3.2-1b"] = llama(2048, 16, 32, 8, 8192, 128256, 131072, 500000.0f, true);
    p["llama3.2-1b"].llama3_rope = 32.0f;
    p["llama3.2-1b"].head_dim = 64;  // config.json gives head_dim
    p["smollm2-135m"] = llama(576, 30, 9, 3, 1536, 49152, 8192, 100000.0f, true);
    // Mistral Nemo: head_dim 128, not 5120 / 32 = 160.
    p["mistral-nemo-12b"] = llama(5120, 40, 32, 8, 14336, 131072, 1024000, 1e6f, false);
    p["mistral-nemo-12b"].head_dim = 128;
    // Qwen 2.5: q/k/v biases.
    p["qwen2.5-0.5b"] =
        with(llama(896, 24, 14, 2, 4864, 151936, 32768, 1e6f, true), "qwen2", 1e-6f);
    p["qwen2.5-7b"] =
        with(llama(3584, 28, 28, 4, 18944, 152064, 32768, 1e6f, false), "qwen2", 1e-6f);
    // Qwen 3: per-head q/k norms, head_dim 128 given.
    p["qwen3-8b"] = with(llama(4096, 36, 32, 8, 12288, 151936, 40960, 1e6f, false), "qwen3", 1e-6f);
    p["qwen3-8b"].head_dim = 128;
    // Gemma 2 9B: head_dim 256, window 4096 on even layers, soft-capped attention (50) and
    // logits (30); tied.
    Shape g2 = with(llama(3584, 42, 16, 8, 14336, 256000, 8192, 10000.0f, true), "gemma2", 1e-6f);
    g2.head_dim = 256, g2.swa = 4096;
    p["gemma2-9b"] = g2;
    // Gemma 3 4B: head_dim 256, window 1024 on five layers of six, global layers' rope base
    // 1e6 with linear factor 8, local layers' 10000; tied.
    Shape g = with(llama(2560, 34, 8, 4, 10240, 262208, 131072, 1e6f, true), "gemma3", 1e-6f);
    g.head_dim = 256, g.swa = 1024, g.rope_base_swa = 10000.0f, g.rope_linear = 8.0f;
    p["gemma3-4b"] = g;
    // Phi-3.5 mini: fused qkv and gate/up, LongRoPE from an original context of 4096.
    Shape phi = with(llama(3072, 32, 32, 32, 8192, 32064, 131072, 10000.0f, false), "phi3", 1e-5f);
    phi.swa = 262144, phi.orig_ctx = 4096;
    p["phi3.5-mini"] = phi;
    return p;
}

// Llama 3.1-style frequency divisors (low 1, high 4, original context 8192; factor 8 for 3.1,
// 32 for 3.2).
std::vector<float> llama3_rope_freqs(int n_rot, float base, float factor) {
    const float low = 1.0f, high = 4.0f, old_ctx = 8192.0f;
    std::vector<float> f(size_t(n_rot / 2));
    for (int i = 0; i < n_rot / 2; i++) {
        const float freq = std::pow(base, -2.0f * i / n_rot);
        const float wavelen = 2.0f * float(M_PI) / freq;
        if (wavelen < old_ctx / high)
            f[size_t(i)] = 1.0f;
        else if (wavelen > old_ctx / low)
            f[size_t(i)] = factor;
        else {
            const float smooth = (old_ctx / wavelen - low) / (high - low);
            f[size_t(i)] = 1.0f / ((1 - smooth) / factor + smooth);
        }
    }
    return f;
}

// LongRoPE factors of Phi-3.5 mini's range (long 1 to ~65, short 1 to ~3, rising with the
// dimension); smooth curves, not the released values.
std::vector<float> longrope_factors(uint32_t n, bool long_factors) {
    std::vector<float> f(n);
    for (uint32_t i = 0; i < n; i++) {
        const float x = n > 1 ? float(i) / float(n - 1) : 0.0f;
        f[i] = long_factors ? 1.0f + 64.0f * x * x * (3 - 2 * x) : 1.0f + 2.0f * x * x;
    }
    return f;
}

}  // namespace

const std::map<std::string, Shape>& presets() {
    static const std::map<std::string, Shape> p = make_presets();
    return p;
}

Status check_shape(const Shape& s) {
    auto bad = [](const std::string& m) { return make_error("cli.bad_shape", m); };
    if (s.arch != "llama" && s.arch != "qwen2" && s.arch != "qwen3" && s.arch != "gemma2" &&
        s.arch != "gemma3" && s.arch != "phi3")
        return bad("architecture '" + s.arch + "' is not one mkmodel writes");
    if (!s.embd || !s.layers || !s.heads || !s.kv_heads || !s.ffn || !s.vocab)
        return bad("embedding, layers, heads, kv-heads, ffn and vocabulary must be positive");
    if (s.heads % s.kv_heads)
        return bad("--heads (" + std::to_string(s.heads) + ") must be a multiple of --kv-heads (" +
                   std::to_string(s.kv_heads) + ")");
    if (!s.head_dim && s.embd % s.heads)
        return bad("--embd (" + std::to_string(s.embd) + ") must be a multiple of --heads (" +
                   std::to_string(s.heads) + "), or give --head-dim");
    if (s.orig_ctx && s.arch != "phi3")
        return bad("--orig-ctx (LongRoPE's original context) is Phi-3's, not " + s.arch + "'s");
    if (s.yarn > 0 && s.rope_linear > 0)
        return bad("--yarn cannot be combined with the preset's linear rope scaling");
    if (s.head_size() % 2)
        return bad("the head size " + std::to_string(s.head_size()) + " must be even (rope)");
    if (s.arch == "phi3" && s.head_dim && s.head_dim != s.embd / s.heads)
        return bad("phi3 has no head size of its own: it is embd / heads");
    return {};
}

void write_hparams(gguf::Writer& w, const Shape& s) {
    const std::string A = s.arch + ".";
    w.set_u32(A + "block_count", s.layers);
    w.set_u32(A + "context_length", s.ctx);
    w.set_u32(A + "embedding_length", s.embd);
    w.set_u32(A + "feed_forward_length", s.ffn);
    w.set_u32(A + "attention.head_count", s.heads);
    w.set_u32(A + "attention.head_count_kv", s.kv_heads);
    // The converter writes no base for Gemma 2 (10000 is its default).
    if (s.arch != "gemma2") w.set_f32(A + "rope.freq_base", s.rope_base);
    if (s.arch == "gemma2") {
        w.set_f32(A + "attn_logit_softcapping", 50.0f);
        w.set_f32(A + "final_logit_softcapping", 30.0f);
    }
    w.set_f32(A + "attention.layer_norm_rms_epsilon", s.norm_eps);
    // Written by the converter where config.json gives head_dim (Gemma 3 always).
    if (s.head_dim) {
        w.set_u32(A + "attention.key_length", s.head_dim);
        w.set_u32(A + "attention.value_length", s.head_dim);
    }
    if (s.arch == "llama") {
        w.set_u32(A + "vocab_size", s.vocab);
        w.set_u32(A + "rope.dimension_count", s.head_size());
    }
    if (s.swa) w.set_u32(A + "attention.sliding_window", s.swa);
    if (s.rope_base_swa > 0) w.set_f32(A + "rope.freq_base_swa", s.rope_base_swa);
    if (s.rope_linear > 0) {
        w.set_string(A + "rope.scaling.type", "linear");
        w.set_f32(A + "rope.scaling.factor", s.rope_linear);
    }
    // The converter's keys for config.json's rope_scaling {"type": "yarn", "factor": F,
    // "original_max_position_embeddings": ctx}.
    if (s.yarn > 0) {
        w.set_string(A + "rope.scaling.type", "yarn");
        w.set_f32(A + "rope.scaling.factor", s.yarn);
        w.set_u32(A + "rope.scaling.original_context_length", s.ctx);
    }
    if (s.arch == "phi3") {
        w.set_u32(A + "rope.dimension_count", s.head_size());
        if (s.orig_ctx) {
            w.set_u32(A + "rope.scaling.original_context_length", s.orig_ctx);
            // The converter's LongRoPE attention factor.
            const double scale = double(s.ctx) / s.orig_ctx;
            const double f =
                scale > 1.0 ? std::sqrt(1.0 + std::log(scale) / std::log(s.orig_ctx)) : 1.0;
            w.set_f32(A + "rope.scaling.attn_factor", float(f));
        }
    }
}

std::vector<TensorSpec> tensor_list(const Shape& s) {
    const uint32_t hd = s.head_size(), qd = s.heads * hd, kvd = s.kv_heads * hd;
    const float in_scale = 1.0f / std::sqrt(float(s.embd)),
                ff_scale = 1.0f / std::sqrt(float(s.ffn));
    std::vector<TensorSpec> t;
    auto matrix = [&](std::string name, uint64_t cols, uint64_t rows, float scale) {
        t.push_back({std::move(name), {cols, rows}, scale, 0.0f, {}});
    };
    auto vector = [&](std::string name, uint64_t n, float center, float spread) {
        t.push_back({std::move(name), {n}, spread, center, {}});
    };
    auto values = [&](std::string name, std::vector<float> v) {
        t.push_back({std::move(name), {uint64_t(v.size())}, 0.0f, 0.0f, std::move(v)});
    };
    matrix("token_embd.weight", s.embd, s.vocab, 1.0f);
    if (s.llama3_rope > 0)
        values("rope_freqs.weight", llama3_rope_freqs(int(hd), s.rope_base, s.llama3_rope));
    if (s.arch == "phi3" && s.orig_ctx) {
        values("rope_factors_long.weight", longrope_factors(hd / 2, true));
        values("rope_factors_short.weight", longrope_factors(hd / 2, false));
    }
    const bool qkv_bias = s.arch == "qwen2", qk_norm = s.arch == "qwen3" || s.arch == "gemma3";
    const bool post_norms = s.arch == "gemma2" || s.arch == "gemma3", fused = s.arch == "phi3";
    for (uint32_t l = 0; l < s.layers; l++) {
        const std::string p = "blk." + std::to_string(l) + ".";
        vector(p + "attn_norm.weight", s.embd, 1.0f, 0.1f);
        if (fused) {
            matrix(p + "attn_qkv.weight", s.embd, qd + 2 * kvd, in_scale);
        } else {
            matrix(p + "attn_q.weight", s.embd, qd, in_scale);
            matrix(p + "attn_k.weight", s.embd, kvd, in_scale);
            matrix(p + "attn_v.weight", s.embd, kvd, in_scale);
        }
        if (qkv_bias) {
            vector(p + "attn_q.bias", qd, 0.0f, 0.05f);
            vector(p + "attn_k.bias", kvd, 0.0f, 0.05f);
            vector(p + "attn_v.bias", kvd, 0.0f, 0.05f);
        }
        if (qk_norm) {
            vector(p + "attn_q_norm.weight", hd, 1.0f, 0.1f);
            vector(p + "attn_k_norm.weight", hd, 1.0f, 0.1f);
        }
        matrix(p + "attn_output.weight", qd, s.embd, 1.0f / std::sqrt(float(qd)));
        if (post_norms) vector(p + "post_attention_norm.weight", s.embd, 1.0f, 0.1f);
        vector(p + "ffn_norm.weight", s.embd, 1.0f, 0.1f);
        if (fused) {
            matrix(p + "ffn_up.weight", s.embd, 2 * uint64_t(s.ffn),
                   in_scale);  // gate rows, then up
        } else {
            matrix(p + "ffn_gate.weight", s.embd, s.ffn, in_scale);
            matrix(p + "ffn_up.weight", s.embd, s.ffn, in_scale);
        }
        matrix(p + "ffn_down.weight", s.ffn, s.embd, ff_scale);
        if (post_norms) vector(p + "post_ffw_norm.weight", s.embd, 1.0f, 0.1f);
    }
    vector("output_norm.weight", s.embd, 1.0f, 0.1f);
    if (!s.tied) matrix("output.weight", s.embd, s.vocab, in_scale);
    return t;
}

}  // namespace ember::cli::mkmodel
