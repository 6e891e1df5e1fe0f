// Binding a model's tensors to the views the backends read (hparams.cpp reads the metadata).
#include "model/llama.h"

#include <cmath>
#include <cstring>
#include <set>

#include "gguf/gguf.h"
#include "model/hparams.h"

namespace ember {
namespace {

struct Binder {
    const gguf::File& file;
    uint64_t weight_bytes = 0;
    std::set<std::string> bound;

    Error err(const std::string& code, const std::string& msg) const {
        return make_error(code, file.path() + ": " + msg);
    }

    // Binds `name` expecting shape [cols, rows] (rows = 1 for vectors).
    Result<Tensor> bind(const std::string& name, int64_t cols, int64_t rows,
                        bool optional = false) {
        const gguf::TensorInfo* ti = file.find_tensor(name);
        if (!ti) {
            if (optional) return Tensor{};
            return err("model.missing_tensor", "tensor '" + name + "' is missing");
        }
        const auto tt = type_traits(ti->type);
        if (!tt || !tt->supported)
            return err("model.unsupported_type",
                       "tensor '" + name + "' has type " + std::string(type_name(ti->type)) +
                           " (id " + std::to_string(uint32_t(ti->type)) +
                           "), which Ember does not support (supported: F32, F16, BF16, Q8_0, "
                           "Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K)");
        const bool shape_ok = int64_t(ti->ne[0]) == cols && int64_t(ti->ne[1]) == rows &&
                              ti->ne[2] == 1 && ti->ne[3] == 1;
        if (!shape_ok)
            return err("model.bad_shape",
                       "tensor '" + name + "' has shape [" + std::to_string(ti->ne[0]) + ", " +
                           std::to_string(ti->ne[1]) + ", " + std::to_string(ti->ne[2]) + ", " +
                           std::to_string(ti->ne[3]) + "], expected [" + std::to_string(cols) +
                           ", " + std::to_string(rows) + "] from the metadata");
        Tensor t;
        t.name = name;
        t.type = ti->type;
        t.ne[0] = cols;
        t.ne[1] = rows;
        t.data = file.tensor_data(*ti);
        t.n_bytes = ti->n_bytes;
        t.row_stride = row_bytes(*tt, uint64_t(cols));
        if (bound.insert(name).second) weight_bytes += t.n_bytes;
        return t;
    }

    // Norm weights are used directly as floats by every backend.
    Result<Tensor> bind_f32_vector(const std::string& name, int64_t n, bool optional = false) {
        EMBER_ASSIGN_OR_RETURN(Tensor t, bind(name, n, 1, optional));
        if (t.present() && t.type != GgmlType::F32)
            return err("model.unsupported_type", "tensor '" + name + "' has type " +
                                                     std::string(type_name(t.type)) +
                                                     ", expected F32 for a norm/frequency vector");
        return t;
    }
};

// Binds one layer's tensors as the family lays them out (ArchTraits says which exist).
Status bind_layer(Binder& b, const LlamaHParams& hp, uint32_t i, LlamaLayer& l) {
    const ArchTraits& t = hp.traits();
    const std::string p = "blk." + std::to_string(i) + ".";
    const int64_t E = hp.n_embd, F = hp.n_ff, HD = hp.head_dim;
    const int64_t QD = hp.n_q_dim(), KVD = hp.n_kv_dim(), VD = hp.n_v_dim();
    const int64_t AD = hp.n_att_dim();  // attention output: n_head value heads
    EMBER_ASSIGN_OR_RETURN(l.attn_norm, b.bind_f32_vector(p + "attn_norm.weight", E));
    if (t.fused_qkv) {
        EMBER_ASSIGN_OR_RETURN(l.wqkv, b.bind(p + "attn_qkv.weight", E, QD + KVD + VD));
    } else {
        EMBER_ASSIGN_OR_RETURN(l.wq, b.bind(p + "attn_q.weight", E, QD));
        EMBER_ASSIGN_OR_RETURN(l.wk, b.bind(p + "attn_k.weight", E, KVD));
        EMBER_ASSIGN_OR_RETURN(l.wv, b.bind(p + "attn_v.weight", E, VD));
        // Qwen 2 always has them; llama.cpp also reads them when a llama file has them.
        const bool opt = !t.qkv_bias;
        EMBER_ASSIGN_OR_RETURN(l.bq, b.bind_f32_vector(p + "attn_q.bias", QD, opt));
        EMBER_ASSIGN_OR_RETURN(l.bk, b.bind_f32_vector(p + "attn_k.bias", KVD, opt));
        EMBER_ASSIGN_OR_RETURN(l.bv, b.bind_f32_vector(p + "attn_v.bias", VD, opt));
    }
    if (t.qk_norm) {
        EMBER_ASSIGN_OR_RETURN(l.q_norm, b.bind_f32_vector(p + "attn_q_norm.weight", HD));
        EMBER_ASSIGN_OR_RETURN(l.k_norm, b.bind_f32_vector(p + "attn_k_norm.weight", HD));
    }
    EMBER_ASSIGN_OR_RETURN(l.wo, b.bind(p + "attn_output.weight", AD, E));
    if (t.post_norms) {
        EMBER_ASSIGN_OR_RETURN(l.post_attn_norm,
                               b.bind_f32_vector(p + "post_attention_norm.weight", E));
        EMBER_ASSIGN_OR_RETURN(l.post_ffn_norm, b.bind_f32_vector(p + "post_ffw_norm.weight", E));
    }
    EMBER_ASSIGN_OR_RETURN(l.ffn_norm, b.bind_f32_vector(p + "ffn_norm.weight", E));
    if (t.fused_gate_up) {
        EMBER_ASSIGN_OR_RETURN(l.ffn_gate_up, b.bind(p + "ffn_up.weight", E, 2 * F));
    } else {
        EMBER_ASSIGN_OR_RETURN(l.ffn_gate, b.bind(p + "ffn_gate.weight", E, F));
        EMBER_ASSIGN_OR_RETURN(l.ffn_up, b.bind(p + "ffn_up.weight", E, F));
    }
    EMBER_ASSIGN_OR_RETURN(l.ffn_down, b.bind(p + "ffn_down.weight", F, E));
    return {};
}

// Frequency divisors (Llama 3's, LongRoPE's) must be finite and positive: 0 or Inf gives NaN
// logits.
Status check_rope_freqs(const gguf::File& file, const Tensor& t) {
    if (!t.present()) return {};
    const auto* f = reinterpret_cast<const float*>(t.data);
    for (int64_t i = 0; i < t.cols(); i++) {
        float v;
        std::memcpy(&v, f + i, sizeof v);
        if (!std::isfinite(v) || !(v > 0.0f))
            return make_error("model.bad_rope_freqs",
                              file.path() + ": tensor '" + t.name + "' has " + std::to_string(v) +
                                  " at element " + std::to_string(i) +
                                  ", expected finite positive frequency divisors");
    }
    return {};
}

// LongRoPE's long and short factors (Phi-3.5, Phi-4 mini): both or neither.
Status bind_longrope(const gguf::File& file, Binder& b, LlamaModel& m) {
    const int64_t half = m.hp.n_rot / 2;
    EMBER_ASSIGN_OR_RETURN(m.rope_long, b.bind_f32_vector("rope_factors_long.weight", half, true));
    EMBER_ASSIGN_OR_RETURN(m.rope_short,
                           b.bind_f32_vector("rope_factors_short.weight", half, true));
    if (m.rope_long.present() != m.rope_short.present())
        return make_error(
            "model.missing_tensor",
            file.path() + ": tensor '" +
                (m.rope_long.present() ? "rope_factors_short.weight" : "rope_factors_long.weight") +
                "' is missing (LongRoPE needs both the long and the short factors)");
    if (m.rope_long.present() && m.rope_freqs.present())
        return make_error("model.bad_rope_freqs",
                          file.path() +
                              ": both 'rope_freqs.weight' and LongRoPE's "
                              "'rope_factors_long/short.weight' are present; expected "
                              "one kind of frequency divisors");
    EMBER_TRY(check_rope_freqs(file, m.rope_long));
    EMBER_TRY(check_rope_freqs(file, m.rope_short));
    const auto type = file.get_string(m.hp.traits().name + std::string(".rope.scaling.type"));
    if (type && *type == "longrope" && !m.rope_long.present())
        return make_error("model.missing_tensor",
                          file.path() +
                              ": rope.scaling.type is longrope but the tensors "
                              "'rope_factors_long.weight' / 'rope_factors_short.weight' "
                              "are missing");
    return {};
}

}  // namespace

Result<LlamaModel> load_model(const gguf::File& file) {
    LlamaModel m;
    EMBER_ASSIGN_OR_RETURN(m.hp, read_hparams(file));
    LlamaHParams& hp = m.hp;
    auto bad = [&](const std::string& msg) {
        return make_error("model.bad_hparams", file.path() + ": " + msg);
    };
    Binder b{file, 0, {}};
    const gguf::TensorInfo* embd = file.find_tensor("token_embd.weight");
    if (!embd)
        return make_error("model.missing_tensor",
                          file.path() + ": tensor 'token_embd.weight' is missing");
    if (embd->ne[1] == 0 || embd->ne[1] > (1u << 24))
        return bad("token_embd.weight has " + std::to_string(embd->ne[1]) + " rows");
    hp.n_vocab = uint32_t(embd->ne[1]);
    if (auto toks = file.get_array("tokenizer.ggml.tokens"); toks && toks->size() != hp.n_vocab)
        return bad("token_embd.weight has " + std::to_string(hp.n_vocab) +
                   " rows but the vocabulary has " + std::to_string(toks->size()) + " tokens");

    const int64_t E = hp.n_embd, V = hp.n_vocab;
    EMBER_ASSIGN_OR_RETURN(m.tok_embd, b.bind("token_embd.weight", E, V));
    EMBER_ASSIGN_OR_RETURN(m.output_norm, b.bind_f32_vector("output_norm.weight", E));
    EMBER_ASSIGN_OR_RETURN(m.output, b.bind("output.weight", E, V, /*optional=*/true));
    if (!m.output.present()) {
        m.output = m.tok_embd;
        m.tied_output = true;
    }
    EMBER_ASSIGN_OR_RETURN(m.rope_freqs,
                           b.bind_f32_vector("rope_freqs.weight", hp.n_rot / 2, true));
    EMBER_TRY(check_rope_freqs(file, m.rope_freqs));
    EMBER_TRY(bind_longrope(file, b, m));

    m.layers.resize(hp.n_layer);
    for (uint32_t i = 0; i < hp.n_layer; i++) EMBER_TRY(bind_layer(b, hp, i, m.layers[i]));
    m.weight_bytes = b.weight_bytes;
    return m;
}

std::vector<const Tensor*> LlamaModel::tensors() const {
    std::vector<const Tensor*> out;
    auto add = [&](const Tensor& t) {
        if (t.present()) out.push_back(&t);
    };
    add(tok_embd);
    add(output_norm);
    if (!tied_output) add(output);
    add(rope_freqs);
    add(rope_long);
    add(rope_short);
    for (const LlamaLayer& l : layers)
        for (const Tensor* t :
             {&l.attn_norm, &l.wq, &l.wk, &l.wv, &l.wqkv, &l.bq, &l.bk, &l.bv, &l.q_norm, &l.k_norm,
              &l.wo, &l.post_attn_norm, &l.ffn_norm, &l.ffn_gate, &l.ffn_up, &l.ffn_gate_up,
              &l.ffn_down, &l.post_ffn_norm})
            add(*t);
    return out;
}

const Tensor* LlamaModel::rope_factors(int n_ctx) const {
    if (rope_long.present())
        return uint64_t(n_ctx) > uint64_t(hp.n_ctx_orig) ? &rope_long : &rope_short;
    return rope_freqs.present() ? &rope_freqs : nullptr;
}

}  // namespace ember
