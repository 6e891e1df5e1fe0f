// What a compute backend (CPU, Vulkan) provides to the engine.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>

#include "ember/ember.h"
#include "ember/result.h"

namespace ember {

// Per-session state on a backend: the KV cache and scratch.
class Runner {
public:
    virtual ~Runner() = default;
    // Evaluates tokens at positions [pos, pos + tokens.size()) as one batch, appending their
    // K/V to the cache, and writes the logits of the last token (n_vocab floats) to logits.
    virtual Status forward(std::span<const int32_t> tokens, int pos, float* logits) = 0;
    // Same, but returns the logits where the backend keeps them on the host, valid until the
    // next call: no copy. Called only when has_logits_view().
    virtual bool has_logits_view() const { return false; }
    virtual Result<std::span<const float>> forward_view(std::span<const int32_t> tokens, int pos) {
        return make_error("internal", "forward_view: this backend keeps no logits on the host");
    }
    // Same, returning only the argmax of the last logits, computed on the device so that only
    // 4 bytes come back. Called only when has_device_argmax().
    virtual bool has_device_argmax() const { return false; }
    virtual Result<int32_t> forward_argmax(std::span<const int32_t> tokens, int pos) {
        return make_error("internal", "forward_argmax: this backend has no device argmax");
    }
    // Partial offload (session/offload.h), where a model's first layers run on one backend and
    // the rest on another. A runner of the first layers evaluates them and writes the residual
    // stream after its last one, hidden [tokens.size()][n_embd], instead of logits.
    virtual Status forward_hidden(std::span<const int32_t> tokens, int pos, float* hidden) {
        return make_error("internal", "forward_hidden: this runner runs the output layer");
    }
    // A runner of the last layers takes the next forward call's residual stream from hidden
    // [tokens.size()][n_embd] (valid during that call) instead of embedding the tokens.
    virtual void set_hidden_input(const float* hidden) { (void)hidden; }
    // A runner of the last layers that can also run every layer for a prompt (its device holds
    // the first layers' weights too): a forward call without a residual stream embeds the
    // tokens and runs them all, writing the first layers' K/V to its own copy, kv_f16.
    virtual bool runs_whole_prompts() const { return false; }
    // That copy: layer l's (< the first layers' count) K or V rows, F16 [n_ctx][n_kv_dim] in
    // host memory the device reads, once no submission runs; null where there is none.
    virtual uint16_t* kv_f16(uint32_t l, bool value) {
        (void)l, (void)value;
        return nullptr;
    }
    // A runner of the first layers: rows [from, to) of its K/V copied into `device`'s kv_f16
    // (to_device) or from it, so that both hold the same rows whichever ran them.
    virtual Status copy_kv(Runner& device, int from, int to, bool to_device) {
        (void)device, (void)from, (void)to, (void)to_device;
        return make_error("internal", "copy_kv: this runner keeps no K/V of first layers");
    }
    virtual int n_ctx() const = 0;
    // A flag that, once set, ends a wait for the device early: the call returns a
    // "*.cancelled" error (nullptr: none). Backends without such waits ignore it.
    virtual void set_cancel(const std::atomic<bool>* cancel) { (void)cancel; }
    // Session::set_profiling: whether the evaluations that follow count in the profile of a
    // backend that takes one (EMBER_VULKAN_PROFILE). Others ignore it.
    virtual void set_profiling(bool on) { (void)on; }
};

// Weights resident on a backend, shared by the sessions of one model.
class BackendModel {
public:
    virtual ~BackendModel() = default;
    virtual Result<std::unique_ptr<Runner>> create_runner(int n_ctx) = 0;
    virtual const BackendInfo& info() const = 0;
    virtual MemoryStats memory() const = 0;
};

}  // namespace ember
