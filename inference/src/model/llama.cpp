#include "model/llama.h"

#include <set>

#include "gguf/gguf.h"

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
    Result<Tensor> bind(const std::string& name, int64_t cols, int64_t rows, bool optional = false) {
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

Result<uint32_t> require_u32(const gguf::File& f, const std::string& key) {
    auto v = f.get_u32(key);
    if (!v) return make_error("model.missing_key", f.path() + ": metadata key '" + key +
                                                       "' is missing or not an unsigned integer");
    return *v;
}

}  // namespace

Result<LlamaModel> load_llama(const gguf::File& file) {
    const std::string arch = file.get_string("general.architecture").value_or("");
    if (arch.empty())
        return make_error("model.missing_key", file.path() + ": metadata key "
                                               "'general.architecture' is missing or not a string");
    if (arch != "llama")
        return make_error("model.unsupported_architecture",
                          file.path() + ": architecture '" + arch +
                              "' is not supported (Ember runs 'llama': Llama 2/3, TinyLlama, "
                              "SmolLM, Mistral)");

    LlamaModel m;
    LlamaHParams& hp = m.hp;
    EMBER_ASSIGN_OR_RETURN(hp.n_embd, require_u32(file, "llama.embedding_length"));
    EMBER_ASSIGN_OR_RETURN(hp.n_layer, require_u32(file, "llama.block_count"));
    EMBER_ASSIGN_OR_RETURN(hp.n_head, require_u32(file, "llama.attention.head_count"));
    EMBER_ASSIGN_OR_RETURN(hp.n_ff, require_u32(file, "llama.feed_forward_length"));
    hp.n_head_kv = file.get_u32("llama.attention.head_count_kv").value_or(hp.n_head);
    hp.n_ctx_train = file.get_u32("llama.context_length").value_or(2048);
    hp.rms_eps = file.get_f32("llama.attention.layer_norm_rms_epsilon").value_or(1e-5f);
    hp.rope_freq_base = file.get_f32("llama.rope.freq_base").value_or(10000.0f);

    auto bad = [&](const std::string& msg) {
        return make_error("model.bad_hparams", file.path() + ": " + msg);
    };
    if (hp.n_embd == 0 || hp.n_layer == 0 || hp.n_head == 0 || hp.n_ff == 0 || hp.n_head_kv == 0 ||
        hp.n_ctx_train == 0)
        return bad("embedding_length, block_count, head_count, head_count_kv, "
                   "feed_forward_length and context_length must all be positive");
    if (hp.n_layer > 1024 || hp.n_embd > 65536 || hp.n_head > 1024 || hp.n_ff > 1u << 20)
        return bad("hyperparameters out of range (layers " + std::to_string(hp.n_layer) +
                   ", embedding " + std::to_string(hp.n_embd) + ")");
    if (hp.n_embd % hp.n_head != 0)
        return bad("embedding_length " + std::to_string(hp.n_embd) +
                   " is not a multiple of head_count " + std::to_string(hp.n_head));
    if (hp.n_head % hp.n_head_kv != 0)
        return bad("head_count " + std::to_string(hp.n_head) + " is not a multiple of head_count_kv " +
                   std::to_string(hp.n_head_kv));
    hp.head_dim = hp.n_embd / hp.n_head;
    hp.n_rot = file.get_u32("llama.rope.dimension_count").value_or(hp.head_dim);
    if (hp.n_rot > hp.head_dim || hp.n_rot % 2 != 0)
        return bad("rope.dimension_count " + std::to_string(hp.n_rot) +
                   " must be even and at most the head size " + std::to_string(hp.head_dim));
    if (!(hp.rms_eps > 0.0f) || !(hp.rope_freq_base > 0.0f))
        return bad("layer_norm_rms_epsilon and rope.freq_base must be positive");

    Binder b{file, 0, {}};
    const gguf::TensorInfo* embd = file.find_tensor("token_embd.weight");
    if (!embd) return make_error("model.missing_tensor", file.path() + ": tensor 'token_embd.weight' is missing");
    hp.n_vocab = uint32_t(embd->ne[1]);
    if (auto toks = file.get_array("tokenizer.ggml.tokens"); toks && toks->size() != hp.n_vocab)
        return bad("token_embd.weight has " + std::to_string(hp.n_vocab) +
                   " rows but the vocabulary has " + std::to_string(toks->size()) + " tokens");

    const int64_t E = hp.n_embd, F = hp.n_ff, V = hp.n_vocab;
    const int64_t QD = int64_t(hp.n_head) * hp.head_dim, KVD = hp.n_kv_dim();
    EMBER_ASSIGN_OR_RETURN(m.tok_embd, b.bind("token_embd.weight", E, V));
    EMBER_ASSIGN_OR_RETURN(m.output_norm, b.bind_f32_vector("output_norm.weight", E));
    EMBER_ASSIGN_OR_RETURN(m.output, b.bind("output.weight", E, V, /*optional=*/true));
    if (!m.output.present()) {
        m.output = m.tok_embd;
        m.tied_output = true;
    }
    EMBER_ASSIGN_OR_RETURN(m.rope_freqs, b.bind_f32_vector("rope_freqs.weight", hp.n_rot / 2, true));

    m.layers.resize(hp.n_layer);
    for (uint32_t i = 0; i < hp.n_layer; i++) {
        const std::string p = "blk." + std::to_string(i) + ".";
        LlamaLayer& l = m.layers[i];
        EMBER_ASSIGN_OR_RETURN(l.attn_norm, b.bind_f32_vector(p + "attn_norm.weight", E));
        EMBER_ASSIGN_OR_RETURN(l.wq, b.bind(p + "attn_q.weight", E, QD));
        EMBER_ASSIGN_OR_RETURN(l.wk, b.bind(p + "attn_k.weight", E, KVD));
        EMBER_ASSIGN_OR_RETURN(l.wv, b.bind(p + "attn_v.weight", E, KVD));
        EMBER_ASSIGN_OR_RETURN(l.wo, b.bind(p + "attn_output.weight", QD, E));
        EMBER_ASSIGN_OR_RETURN(l.ffn_norm, b.bind_f32_vector(p + "ffn_norm.weight", E));
        EMBER_ASSIGN_OR_RETURN(l.ffn_gate, b.bind(p + "ffn_gate.weight", E, F));
        EMBER_ASSIGN_OR_RETURN(l.ffn_up, b.bind(p + "ffn_up.weight", E, F));
        EMBER_ASSIGN_OR_RETURN(l.ffn_down, b.bind(p + "ffn_down.weight", F, E));
    }
    m.weight_bytes = b.weight_bytes;
    return m;
}

}  // namespace ember
