// NaN or Inf logits from finite weights: the error, with the most likely cause found in the file.
#include "session/nonfinite.h"

#include <cmath>
#include <cstdio>
#include <cstring>

#include "quant/quant.h"

namespace ember {
namespace {

std::string num(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

float element(const uint8_t* p, GgmlType type, uint64_t i) {
    if (type == GgmlType::F32) {
        float f;
        std::memcpy(&f, p + 4 * i, 4);
        return f;
    }
    uint16_t h;
    std::memcpy(&h, p + 2 * i, 2);
    return type == GgmlType::F16 ? fp16_to_fp32(h) : bf16_to_fp32(h);
}

// Values beyond this make a dot product over a few thousand elements overflow float32 after
// a few layers; no trained model comes anywhere near.
constexpr double kHugeWeight = 1e15;

std::string cause_in_file(const gguf::File& f) {
    if (const gguf::TensorInfo* t = f.find_tensor("rope_freqs.weight");
        t && t->type == GgmlType::F32) {
        const uint8_t* p = f.tensor_data(*t);
        for (uint64_t i = 0; i < t->n_elements(); ++i) {
            const float v = element(p, t->type, i);
            if (!(v > 0.0f) || !std::isfinite(v))
                return "rope_freqs.weight element " + std::to_string(i) + " is " + num(v) +
                       " (rope frequency divisors must be finite and above 0)";
        }
    }
    double largest = 0;
    const gguf::TensorInfo* where = nullptr;
    for (const gguf::TensorInfo& t : f.tensors()) {
        if (t.type != GgmlType::F32 && t.type != GgmlType::F16 && t.type != GgmlType::BF16)
            continue;
        const uint8_t* p = f.tensor_data(t);
        for (uint64_t i = 0; i < t.n_elements(); ++i) {
            const double v = std::fabs(double(element(p, t.type, i)));
            if (v > largest) largest = v, where = &t;
        }
    }
    if (where && largest >= kHugeWeight)
        return "tensor '" + where->name + "' holds values up to " + num(largest) +
               ", which overflow float32 once multiplied and summed";
    return "";
}

}  // namespace

Status check_finite_logits(std::span<const float> logits, const Model::Impl& m) {
    size_t nan = 0, inf = 0;
    for (float v : logits) {
        nan += std::isnan(v);
        inf += std::isinf(v);
    }
    if (nan + inf == 0) return {};
    std::string cause;
    const float base = m.llama.hp.rope_freq_base;
    if (!std::isfinite(base) || !(base > 0.0f))
        cause = "rope.freq_base is " + num(base) + " (it must be finite and above 0)";
    if (cause.empty()) {
        // After a GPU upload the file's data is no longer mapped: map it again (errors only).
        std::unique_ptr<gguf::File> reopened;
        const gguf::File* f = m.file.get();
        if (!f->base()) {
            auto r = gguf::File::open(m.info.path);
            if (r) reopened = std::move(r).value();
            f = reopened.get();
        }
        if (f) cause = cause_in_file(*f);
    }
    if (cause.empty())
        cause =
            "values overflow float32 in the forward pass (very large weights, scales or "
            "norm weights, or rope parameters out of range)";
    return make_error("session.nonfinite_logits",
                      m.info.path + ": the model's first evaluation gave non-finite logits (" +
                          std::to_string(nan) + " NaN and " + std::to_string(inf) +
                          " infinite of " + std::to_string(logits.size()) +
                          "); the weights are all finite, so the computation overflows. Likely "
                          "cause: " +
                          cause);
}

}  // namespace ember
