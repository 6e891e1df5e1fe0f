#include "model/hparams.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "gguf/gguf.h"

namespace ember {
namespace {

using gguf::ValueType;

Error bad_key(const gguf::File& f, const std::string& key, const std::string& what) {
    return make_error("model.bad_hparams", f.path() + ": metadata key '" + key + "' " + what);
}

std::string type_of(const gguf::Value& v) {
    return std::string(gguf::value_type_name(v.type));
}

// Gemma 2's defaults when its keys are absent (llama.cpp's and Hugging Face's).
constexpr double kGemma2AttnSoftcap = 50.0, kGemma2FinalSoftcap = 30.0;
constexpr uint32_t kGemma2Window = 4096;
// Gemma 3's local layers: llama.cpp hard-codes this base when rope.freq_base_swa is absent.
constexpr double kSwaRopeBase = 10000.0;

constexpr uint64_t kMaxCtx = uint64_t(std::numeric_limits<int32_t>::max());

Result<uint32_t> require(const gguf::File& f, const std::string& key, uint64_t lo, uint64_t hi) {
    EMBER_ASSIGN_OR_RETURN(auto v, read_uint_key(f, key, lo, hi));
    if (!v)
        return make_error("model.missing_key", f.path() + ": metadata key '" + key +
                                                   "' is missing (an integer is expected)");
    return uint32_t(*v);
}

// The highest N of the file's blk.N.* tensors plus one (0 when there are none).
uint32_t layers_in_tensors(const gguf::File& f) {
    uint64_t n = 0;
    for (const auto& t : f.tensors()) {
        if (t.name.rfind("blk.", 0) != 0) continue;
        uint64_t i = 0;
        size_t p = 4;
        for (; p < t.name.size() && p < 14 && std::isdigit((unsigned char)t.name[p]); p++)
            i = i * 10 + uint64_t(t.name[p] - '0');
        if (p > 4 && p < t.name.size() && t.name[p] == '.') n = std::max(n, i + 1);
    }
    return uint32_t(std::min<uint64_t>(n, std::numeric_limits<uint32_t>::max()));
}

// rope.scaling.*: none, linear, YaRN, and LongRoPE (whose factors are tensors: llama.cpp's
// converter writes no type for Phi-3, only rope.scaling.attn_factor and the original context).
Status read_rope_scaling(const gguf::File& f, const std::string& A, LlamaHParams& hp) {
    EMBER_ASSIGN_OR_RETURN(auto type, read_string_key(f, A + "rope.scaling.type"));
    const std::string t = type.value_or("");
    if (!t.empty() && t != "none" && t != "linear" && t != "yarn" && t != "longrope")
        return make_error("model.unsupported_feature",
                          f.path() + ": rope scaling '" + t + "' (" + A +
                              "rope.scaling.type) is not supported (Ember runs none, linear, "
                              "yarn and longrope)");
    EMBER_ASSIGN_OR_RETURN(auto attn_factor,
                           read_float_key(f, A + "rope.scaling.attn_factor", 1e-3, 1e3));
    hp.rope_attn_factor = float(attn_factor.value_or(1.0));
    // Like llama.cpp, the factor applies when no type says otherwise (older files wrote only
    // rope.scale_linear).
    EMBER_ASSIGN_OR_RETURN(auto factor, read_float_key(f, A + "rope.scaling.factor", 0.0, 1e6));
    if (!factor) {
        EMBER_ASSIGN_OR_RETURN(factor, read_float_key(f, A + "rope.scale_linear", 0.0, 1e6));
    }
    // 0 means none, as in llama.cpp; anything else divides positions.
    if (factor && *factor != 0.0 && *factor < 1e-3)
        return bad_key(f, A + "rope.scaling.factor",
                       "is " + std::to_string(*factor) + ", expected 0 (none) or at least 0.001");
    hp.rope_freq_scale = factor && *factor != 0.0 && t != "none" ? float(1.0 / *factor) : 1.0f;
    EMBER_ASSIGN_OR_RETURN(
        auto orig, read_uint_key(f, A + "rope.scaling.original_context_length", 1, kMaxCtx));
    hp.n_ctx_orig = orig ? uint32_t(*orig) : hp.n_ctx_train;
    if (orig && hp.rope_freq_scale < 1.0f)
        hp.n_ctx_scaled = uint32_t(std::min<double>(double(kMaxCtx), std::round(*orig * *factor)));
    if (t != "yarn") return {};
    // YaRN's defaults are llama.cpp's and Hugging Face's: the full ramp, beta 32 and 1.
    EMBER_ASSIGN_OR_RETURN(auto ext, read_float_key(f, A + "rope.scaling.yarn_ext_factor", 0, 1e3));
    EMBER_ASSIGN_OR_RETURN(auto fast, read_float_key(f, A + "rope.scaling.yarn_beta_fast", 0, 1e6));
    EMBER_ASSIGN_OR_RETURN(auto slow, read_float_key(f, A + "rope.scaling.yarn_beta_slow", 0, 1e6));
    hp.yarn.ext_factor = float(ext.value_or(1.0));
    hp.yarn.beta_fast = float(fast.value_or(32.0));
    hp.yarn.beta_slow = float(slow.value_or(1.0));
    if (!(hp.yarn.beta_fast > 0.0f) || !(hp.yarn.beta_slow > 0.0f))
        return bad_key(f, A + "rope.scaling.yarn_beta_fast",
                       "and yarn_beta_slow must be positive (rotations per original context)");
    return {};
}

bool layer_slides(SwaPattern p, uint32_t il) {
    switch (p) {
        case SwaPattern::None:
            return false;
        case SwaPattern::EvenLayers:
            return il % 2 == 0;
        case SwaPattern::FiveOfSix:
            return il % 6 < 5;
        case SwaPattern::AllLayers:
            return true;
    }
    return false;
}

// Head size, rope dimensions and attention scale.
Status read_head(const gguf::File& f, const std::string& A, LlamaHParams& hp) {
    auto bad = [&](const std::string& msg) {
        return make_error("model.bad_hparams", f.path() + ": " + msg);
    };
    EMBER_ASSIGN_OR_RETURN(auto key_len, read_uint_key(f, A + "attention.key_length", 1, 65536));
    EMBER_ASSIGN_OR_RETURN(auto val_len, read_uint_key(f, A + "attention.value_length", 1, 65536));
    if ((!key_len || !val_len) && hp.n_embd % hp.n_head != 0)
        return bad("embedding_length " + std::to_string(hp.n_embd) +
                   " is not a multiple of head_count " + std::to_string(hp.n_head) +
                   " and attention.key_length / value_length do not give the head size");
    const uint32_t embd_head = hp.n_embd / hp.n_head;
    hp.head_dim = key_len ? uint32_t(*key_len) : embd_head;
    // q and k heads have key_length dims, v heads (and the attention output) value_length;
    // each defaults to n_embd / n_head on its own, as in llama.cpp.
    hp.head_dim_v = val_len ? uint32_t(*val_len) : embd_head;
    EMBER_ASSIGN_OR_RETURN(auto n_rot, read_uint_key(f, A + "rope.dimension_count", 0, 65536));
    hp.n_rot = n_rot ? uint32_t(*n_rot) : hp.head_dim;
    if (hp.n_rot > hp.head_dim || hp.n_rot % 2 != 0)
        return bad("rope.dimension_count " + std::to_string(hp.n_rot) +
                   " must be even and at most the head size " + std::to_string(hp.head_dim));
    const ArchTraits& t = *hp.arch;
    const bool embd_scale = t.n_layer_embd_scale != 0 && hp.n_layer == t.n_layer_embd_scale;
    hp.attn_scale = 1.0f / std::sqrt(float(embd_scale ? embd_head : hp.head_dim));
    return {};
}

// Soft-caps, the sliding window and each layer's rope.
Status read_layer_rules(const gguf::File& f, const std::string& A, LlamaHParams& hp) {
    const ArchTraits& t = *hp.arch;
    if (t.softcaps) {
        EMBER_ASSIGN_OR_RETURN(auto a, read_float_key(f, A + "attn_logit_softcapping", 0, 1e30));
        EMBER_ASSIGN_OR_RETURN(auto c, read_float_key(f, A + "final_logit_softcapping", 0, 1e30));
        hp.attn_softcap = float(a.value_or(kGemma2AttnSoftcap));
        hp.final_softcap = float(c.value_or(kGemma2FinalSoftcap));
    }
    EMBER_ASSIGN_OR_RETURN(auto win, read_uint_key(f, A + "attention.sliding_window", 0, kMaxCtx));
    if (!win && t.swa == SwaPattern::FiveOfSix)
        return make_error("model.missing_key", f.path() + ": metadata key '" + A +
                                                   "attention.sliding_window' is missing");
    hp.n_swa = win ? uint32_t(*win) : (t.swa == SwaPattern::EvenLayers ? kGemma2Window : 0);
    if (t.swa == SwaPattern::None) hp.n_swa = 0;  // llama.cpp ignores Mistral's and Qwen's
    double swa_base = hp.rope_freq_base;
    if (t.swa_rope_base) {
        EMBER_ASSIGN_OR_RETURN(auto b, read_float_key(f, A + "rope.freq_base_swa", 1e-30, 1e30));
        swa_base = b.value_or(kSwaRopeBase);
    }
    hp.layer.assign(hp.n_layer, {});
    for (uint32_t il = 0; il < hp.n_layer; il++) {
        LayerHParams& l = hp.layer[il];
        l.swa = hp.n_swa > 0 && layer_slides(t.swa, il);
        const bool local_rope = l.swa && t.swa_rope_base;
        l.rope_base = local_rope ? float(swa_base) : hp.rope_freq_base;
        l.rope_freq_scale = local_rope ? 1.0f : hp.rope_freq_scale;
    }
    return {};
}

}  // namespace

Result<std::optional<uint64_t>> read_uint_key(const gguf::File& f, const std::string& key,
                                              uint64_t lo, uint64_t hi) {
    const gguf::Value* v = f.find(key);
    if (!v) return std::optional<uint64_t>{};
    if (!v->is_integer())
        return bad_key(f, key, "has type " + type_of(*v) + ", expected an integer");
    const bool neg = v->as_int() && *v->as_int() < 0;
    const uint64_t u = neg ? 0 : (v->as_int() ? uint64_t(*v->as_int()) : v->u64);
    if (neg || u < lo || u > hi)
        return bad_key(f, key,
                       "is " + (neg ? std::to_string(*v->as_int()) : std::to_string(u)) +
                           ", expected a value in [" + std::to_string(lo) + ", " +
                           std::to_string(hi) + "]");
    return std::optional<uint64_t>{u};
}

Result<std::optional<double>> read_float_key(const gguf::File& f, const std::string& key, double lo,
                                             double hi) {
    const gguf::Value* v = f.find(key);
    if (!v) return std::optional<double>{};
    const auto d = v->as_number();
    if (!d) return bad_key(f, key, "has type " + type_of(*v) + ", expected a number");
    if (!std::isfinite(*d) || *d < lo || *d > hi)
        return bad_key(f, key,
                       "is " + std::to_string(*d) + ", expected a finite value in [" +
                           std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return std::optional<double>{*d};
}

Result<std::optional<std::string>> read_string_key(const gguf::File& f, const std::string& key) {
    const gguf::Value* v = f.find(key);
    if (!v) return std::optional<std::string>{};
    if (v->type != ValueType::STRING)
        return bad_key(f, key, "has type " + type_of(*v) + ", expected a string");
    return std::optional<std::string>{v->str};
}

Result<LlamaHParams> read_hparams(const gguf::File& f) {
    EMBER_ASSIGN_OR_RETURN(auto arch, read_string_key(f, "general.architecture"));
    if (!arch || arch->empty())
        return make_error("model.missing_key",
                          f.path() + ": metadata key 'general.architecture' is missing");
    LlamaHParams hp;
    hp.arch = find_arch(*arch);
    if (!hp.arch)
        return make_error("model.unsupported_architecture", f.path() + ": architecture '" + *arch +
                                                                "' is not supported (Ember runs " +
                                                                std::string(supported_arch_list()) +
                                                                ")");
    const std::string A = *arch + ".";
    EMBER_ASSIGN_OR_RETURN(auto experts, read_uint_key(f, A + "expert_count", 0, 1u << 20));
    if (experts && *experts > 0)
        return make_error("model.unsupported_feature",
                          f.path() + ": mixture-of-experts models (" + A + "expert_count = " +
                              std::to_string(*experts) + ") are not supported yet");
    EMBER_ASSIGN_OR_RETURN(hp.n_embd, require(f, A + "embedding_length", 1, 65536));
    EMBER_ASSIGN_OR_RETURN(hp.n_layer, require(f, A + "block_count", 1, 1024));
    EMBER_ASSIGN_OR_RETURN(hp.n_head, require(f, A + "attention.head_count", 1, 1024));
    EMBER_ASSIGN_OR_RETURN(hp.n_ff, require(f, A + "feed_forward_length", 1, 1u << 20));
    EMBER_ASSIGN_OR_RETURN(auto n_kv, read_uint_key(f, A + "attention.head_count_kv", 1, 1024));
    hp.n_head_kv = n_kv ? uint32_t(*n_kv) : hp.n_head;
    EMBER_ASSIGN_OR_RETURN(auto ctx, read_uint_key(f, A + "context_length", 1, kMaxCtx));
    hp.n_ctx_train = ctx ? uint32_t(*ctx) : 2048;
    EMBER_ASSIGN_OR_RETURN(auto eps,
                           read_float_key(f, A + "attention.layer_norm_rms_epsilon", 1e-30, 1.0));
    hp.rms_eps = eps ? float(*eps) : 1e-5f;
    EMBER_ASSIGN_OR_RETURN(auto base, read_float_key(f, A + "rope.freq_base", 1e-30, 1e30));
    hp.rope_freq_base = base ? float(*base) : hp.arch->rope_base;
    if (!(hp.rope_freq_base > 0.0f) || !std::isfinite(hp.rope_freq_base))
        return bad_key(f, A + "rope.freq_base", "does not fit a finite positive float");
    EMBER_TRY(read_rope_scaling(f, A, hp));

    if (hp.n_head % hp.n_head_kv != 0)
        return make_error("model.bad_hparams", f.path() + ": head_count " +
                                                   std::to_string(hp.n_head) +
                                                   " is not a multiple of head_count_kv " +
                                                   std::to_string(hp.n_head_kv));
    // More layers in the tensors than block_count says would run silently truncated; fewer
    // are refused when their tensors are bound, naming the first one missing.
    const uint32_t in_tensors = layers_in_tensors(f);
    if (in_tensors > hp.n_layer)
        return bad_key(f, A + "block_count",
                       "is " + std::to_string(hp.n_layer) + " but the file's tensors describe " +
                           std::to_string(in_tensors) + " layers (blk.0 to blk." +
                           std::to_string(in_tensors ? in_tensors - 1 : 0) + ")");
    EMBER_TRY(read_head(f, A, hp));
    EMBER_TRY(read_layer_rules(f, A, hp));
    return hp;
}

// --- LlamaHParams helpers ---

const ArchTraits& LlamaHParams::traits() const {
    return arch ? *arch : *find_arch("llama");
}

LayerHParams LlamaHParams::layer_hp(uint32_t il) const {
    if (il < layer.size()) return layer[il];
    return LayerHParams{false, rope_freq_base, rope_freq_scale};
}

float LlamaHParams::attention_scale() const {
    return attn_scale > 0.0f ? attn_scale : 1.0f / std::sqrt(float(head_dim));
}

}  // namespace ember
