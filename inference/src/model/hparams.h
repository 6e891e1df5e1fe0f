// Reading a model's hyperparameters from GGUF metadata, strictly: a key that is present must
// have a usable type and a possible value, or the file is refused with a message naming it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "ember/result.h"
#include "model/llama.h"

namespace ember {
namespace gguf {
class File;
}

// An integer key of any GGUF integer type whose value lies in [lo, hi]; nullopt when absent.
// A string, float, bool or array, or a value out of range, gives "model.bad_hparams".
Result<std::optional<uint64_t>> read_uint_key(const gguf::File& f, const std::string& key,
                                              uint64_t lo, uint64_t hi);
// A float key (FLOAT32/FLOAT64, or an integer) that is finite and in [lo, hi]; nullopt when
// absent. Anything else gives "model.bad_hparams".
Result<std::optional<double>> read_float_key(const gguf::File& f, const std::string& key, double lo,
                                             double hi);
// A string key; nullopt when absent, "model.bad_hparams" when of another type.
Result<std::optional<std::string>> read_string_key(const gguf::File& f, const std::string& key);

// The architecture's traits, hyperparameters and per-layer values (everything but n_vocab,
// which comes from token_embd.weight). Refuses unsupported architectures and rope scalings,
// and a block_count that disagrees with the file's blk.N tensors.
Result<LlamaHParams> read_hparams(const gguf::File& f);

}  // namespace ember
