#include <unordered_set>

#include "gguf/gguf.h"

namespace ember::gguf {

TensorTally tally_tensors(const File& file) {
    TensorTally t;
    // Identical aliases (the only overlap the reader accepts) hold their bytes once.
    std::unordered_set<uint64_t> seen;
    for (const TensorInfo& ti : file.tensors()) {
        if (!seen.insert(ti.offset).second) continue;
        const std::string type(type_name(ti.type));
        t.n_params += ti.n_elements();
        t.n_bytes += ti.n_bytes;
        t.bytes_per_type[type] += ti.n_bytes;
        if (ti.n_dims >= 2) t.matrix_bytes_per_type[type] += ti.n_bytes;
    }
    return t;
}

}  // namespace ember::gguf
