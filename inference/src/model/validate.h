// Load-time check that the weights hold no NaN or Inf. A file damaged on disk or converted
// badly otherwise loads fine and only shows up as NaN logits or garbage text much later.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "ember/result.h"

namespace ember {

struct LlamaModel;
struct Tensor;

// Checks every element of each F32/F16/BF16 weight and the fp16 scales of every block of each
// quantized weight (d, and the min/dmin where the type has one). The work is split into chunks
// run on n_threads threads (0: one per hardware thread). The first bad value in tensor order
// gives "model.nonfinite_weights", naming path, the tensor and the element or block index.
// Tensors for which skip(t) is true (checked already, by check_finite_rows) are left out.
Status check_finite_weights(const LlamaModel& model, const std::string& path, int n_threads = 0,
                            const std::function<bool(const Tensor&)>& skip = {});

// The same check on rows [row0, row0 + nrows) of one tensor, for a loader that reads each part
// of the file once (the Vulkan upload, chunk by chunk): the error names the first bad value of
// those rows. Safe to call from several threads at once.
Status check_finite_rows(const Tensor& t, int64_t row0, int64_t nrows, const std::string& path);

}  // namespace ember
