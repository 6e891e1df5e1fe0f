// ember::inspect and ember::supported_tensor_types: what a file holds and what the engine runs,
// asked of the engine so that the app and tools never keep their own rules or lists.
#include <map>

#include "ember/ember.h"
#include "gguf/gguf.h"
#include "model/inspect.h"
#include "model/llama.h"
#include "quant/types.h"

namespace ember {

std::vector<std::string> supported_tensor_types() {
    std::vector<std::string> out;
    for (uint32_t id = 0; id < 64; id++) {
        const auto traits = type_traits(id);
        if (traits && traits->supported) out.emplace_back(traits->name);
    }
    return out;
}

namespace {

std::string quantization_label(const std::map<std::string, uint64_t>& matrix_bytes_per_type) {
    // The dominant type of the 2-D weights names the quantization, as model hubs do: the norms
    // and biases (F32, 1-D) never decide it.
    std::string label;
    uint64_t best = 0;
    for (const auto& [name, bytes] : matrix_bytes_per_type)
        if (bytes > best) best = bytes, label = name;
    return label;
}

}  // namespace

ModelInfo describe_file(const gguf::File& f, const LlamaModel* m) {
    ModelInfo info;
    info.path = f.path();
    info.architecture = f.get_string("general.architecture").value_or("");
    info.name = f.get_string("general.name").value_or("");
    info.gguf_version = f.version();
    info.file_size = f.file_size();
    info.n_tensors = f.tensors().size();
    const gguf::TensorTally tally = gguf::tally_tensors(f);
    info.n_params = tally.n_params;
    info.weight_bytes = tally.n_bytes;
    info.bytes_per_type.assign(tally.bytes_per_type.begin(), tally.bytes_per_type.end());
    info.quantization = quantization_label(tally.matrix_bytes_per_type);
    info.tokenizer_model = f.get_string("tokenizer.ggml.model").value_or("");
    info.chat_template = f.get_string("tokenizer.chat_template").value_or("");
    info.n_ctx_train = f.get_u32(info.architecture + ".context_length").value_or(0);
    if (!m) return info;
    const LlamaHParams& hp = m->hp;
    info.n_vocab = hp.n_vocab;
    info.n_ctx_train = hp.n_ctx_train;
    info.n_ctx_max = hp.max_ctx();
    info.n_embd = hp.n_embd;
    info.n_layer = hp.n_layer;
    info.n_head = hp.n_head;
    info.n_head_kv = hp.n_head_kv;
    info.n_ff = hp.n_ff;
    info.head_dim = hp.head_dim;
    info.n_rot = hp.n_rot;
    info.sliding_window = hp.n_swa;
    for (uint32_t l = 0; l < hp.n_layer; l++) info.n_swa_layers += hp.layer_hp(l).swa ? 1 : 0;
    return info;
}

Result<ModelInfo> inspect(const std::string& path) {
    EMBER_ASSIGN_OR_RETURN(auto file, gguf::File::open(path));
    const gguf::File& f = *file;
    if (f.get_string("general.architecture").value_or("").empty())
        return make_error("inspect.not_a_model",
                          path + " has no general.architecture: not a model file");
    if (f.tensors().empty())
        return make_error("inspect.not_a_model", path + " holds no tensors: not a model file");
    // The shape, where the engine knows the architecture; a file it does not run is still
    // described (the app says why it cannot load it).
    auto m = load_llama(f);
    ModelInfo info = describe_file(f, m ? &*m : nullptr);
    info.path = path;
    return info;
}

}  // namespace ember
