// The greedy choice over a vocabulary's logits, shared by the sampler and Session::eval_argmax.
#pragma once

#include <cstdint>
#include <span>

namespace ember {

// Index of the first largest logit (as std::max_element picks it), 0 for none: one pass, 8
// logits a compare where SSE2 allows.
int32_t argmax(std::span<const float> logits);

}  // namespace ember
