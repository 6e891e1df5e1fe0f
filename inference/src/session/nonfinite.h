// Logits checked once per session: finite weights can still overflow (values near 3e38, rope
// frequency divisors of 0), and NaN logits would otherwise print as garbage or nulls.
#pragma once

#include <span>

#include "ember/result.h"
#include "session/model_impl.h"

namespace ember {

// session.nonfinite_logits when any logit is NaN or infinite, naming the likely cause.
Status check_finite_logits(std::span<const float> logits, const Model::Impl& m);

}  // namespace ember
