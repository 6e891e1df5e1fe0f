// Load-time check that the weights hold no NaN or Inf. A file damaged on disk or converted
// badly otherwise loads fine and only shows up as NaN logits or garbage text much later.
#pragma once

#include <string>

#include "ember/result.h"

namespace ember {

struct LlamaModel;

// Checks every element of each F32/F16/BF16 weight and the fp16 scales of every block of each
// quantized weight (d, and the min/dmin where the type has one). The work is split into chunks
// run on n_threads threads (0: one per hardware thread). The first bad value in tensor order
// gives "model.nonfinite_weights", naming path, the tensor and the element or block index.
Status check_finite_weights(const LlamaModel& model, const std::string& path, int n_threads = 0);

}  // namespace ember
