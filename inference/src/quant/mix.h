// The weight type that llama.cpp's quantizer (llama-quantize) gives each tensor of a file type,
// so that synthetic files (ember-cli mkmodel) have the same mix of types as the files users
// download.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ember/result.h"
#include "quant/types.h"

namespace ember {

// llama.cpp's file types (llama_ftype): the numbers it writes as general.file_type.
enum class FileType : uint32_t {
    AllF32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    Q8_0 = 7,
    Q5_0 = 8,
    Q5_1 = 9,
    Q4_K_S = 14,
    Q4_K_M = 15,
    Q5_K_S = 16,
    Q5_K_M = 17,
    Q6_K = 18,
    BF16 = 32,
};

struct FileTypeInfo {
    std::string_view name;  // as llama-quantize names it: "Q4_K_M"
    FileType ftype;
    GgmlType base;  // the type of most matrices (llama.cpp's default_type)
};

// The file types Ember writes, by name, case-insensitive ("q4_k_m"); nullopt for others.
std::optional<FileTypeInfo> find_file_type(std::string_view name);

// What the choice depends on besides the tensor itself.
struct MixModel {
    std::string arch;  // general.architecture: "llama", "qwen2", ...
    uint32_t n_layer = 0;
    uint32_t n_head = 0, n_head_kv = 0;
    bool has_output = true;  // false: no output.weight, the logits reuse token_embd.weight
};

// The type of tensor `name` (ne0 = its row length, n_dims = its number of dimensions) in a file
// of type `ft`, as llama-quantize of an F16/F32 file gives it (pure: as `llama-quantize --pure`
// gives it: every matrix in the base type). 1-D tensors (norms, biases, rope factors) stay F32.
// An error where llama.cpp refuses too: a row length no fallback type can hold.
Result<GgmlType> llamacpp_tensor_type(const FileTypeInfo& ft, const MixModel& m,
                                      std::string_view name, uint64_t ne0, int n_dims,
                                      bool pure = false);

}  // namespace ember
