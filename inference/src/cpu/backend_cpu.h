// The CPU backend: runs the forward pass on the mapped weights with the worker pool.
#pragma once

#include <memory>

#include "ember/result.h"
#include "model/backend.h"
#include "model/llama.h"

namespace ember::cpu {

// n_threads <= 0: physical cores. n_layers < 0: the whole model; else only its first n_layers
// layers (partial offload: its runners' forward_hidden hands the residual stream on, and the
// output layer and the other layers' weights are neither repacked nor read).
Result<std::unique_ptr<BackendModel>> create_backend_model(const LlamaModel& model, int n_threads,
                                                           int n_layers = -1);

// The CPU's model name from /proc/cpuinfo, e.g. "Intel(R) Xeon(R) ...".
std::string cpu_name();

}  // namespace ember::cpu
