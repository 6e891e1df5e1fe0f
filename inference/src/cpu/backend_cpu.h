// The CPU backend: runs the forward pass on the mapped weights with the worker pool.
#pragma once

#include <atomic>
#include <functional>
#include <memory>

#include "ember/result.h"
#include "model/backend.h"
#include "model/llama.h"

namespace ember::cpu {

// How a load reports, checks and stops (all optional).
struct LoadOptions {
    // The share of the load's work done, in [0,1], never going back: after each tensor the
    // backend reads (and each slice of a large one), weighted by the bytes checked and repacked;
    // 1 at the end. Called from the loading thread; false cancels.
    std::function<bool(float)> progress;
    // Set from any thread to cancel; a cancelled load returns "cpu.cancelled", nothing kept.
    const std::atomic<bool>* cancel = nullptr;
    // The NaN/Inf check of rows [row0, row0 + nrows) of a tensor the backend reads, run on the
    // pool's threads (several at once) slice by slice before the tensor is repacked, so that
    // the file is read once; its first error stops the load. Empty: no check here.
    std::function<Status(const Tensor&, int64_t row0, int64_t nrows)> check_rows;
};

// n_threads <= 0: physical cores. n_layers < 0: the whole model; else only its first n_layers
// layers (partial offload: its runners' forward_hidden hands the residual stream on, and the
// output layer and the other layers' weights are neither repacked nor read).
Result<std::unique_ptr<BackendModel>> create_backend_model(const LlamaModel& model, int n_threads,
                                                           int n_layers = -1,
                                                           const LoadOptions& opt = {});

// The CPU's model name from /proc/cpuinfo, e.g. "Intel(R) Xeon(R) ...".
std::string cpu_name();

}  // namespace ember::cpu
