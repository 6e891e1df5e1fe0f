#include "model/validate.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstring>
#include <limits>
#include <system_error>
#include <thread>
#include <vector>

#include "model/llama.h"

namespace ember {
namespace {

// Where a type keeps its values to check: every element (floats) or fp16 scales in each block.
struct Layout {
    enum Kind { F32, F16, BF16, Blocks } kind;
    uint32_t unit_bytes;       // bytes per element or per block
    uint32_t scale_offset[2];  // byte offsets of the fp16 scales within a block
    int n_scales;
    const char* scale_name[2];
};

bool layout_of(GgmlType t, Layout& l) {
    switch (t) {
        case GgmlType::F32:
            l = {Layout::F32, 4, {}, 0, {}};
            return true;
        case GgmlType::F16:
            l = {Layout::F16, 2, {}, 0, {}};
            return true;
        case GgmlType::BF16:
            l = {Layout::BF16, 2, {}, 0, {}};
            return true;
        case GgmlType::Q4_0:
            l = {Layout::Blocks, sizeof(BlockQ4_0), {0}, 1, {"d"}};
            return true;
        case GgmlType::Q5_0:
            l = {Layout::Blocks, sizeof(BlockQ5_0), {0}, 1, {"d"}};
            return true;
        case GgmlType::Q8_0:
            l = {Layout::Blocks, sizeof(BlockQ8_0), {0}, 1, {"d"}};
            return true;
        case GgmlType::Q4_1:
            l = {Layout::Blocks, sizeof(BlockQ4_1), {0, offsetof(BlockQ4_1, m)}, 2, {"d", "m"}};
            return true;
        case GgmlType::Q5_1:
            l = {Layout::Blocks, sizeof(BlockQ5_1), {0, offsetof(BlockQ5_1, m)}, 2, {"d", "m"}};
            return true;
        case GgmlType::Q4_K:
            l = {Layout::Blocks,
                 sizeof(BlockQ4_K),
                 {0, offsetof(BlockQ4_K, dmin)},
                 2,
                 {"d", "dmin"}};
            return true;
        case GgmlType::Q5_K:
            l = {Layout::Blocks,
                 sizeof(BlockQ5_K),
                 {0, offsetof(BlockQ5_K, dmin)},
                 2,
                 {"d", "dmin"}};
            return true;
        case GgmlType::Q6_K:
            l = {Layout::Blocks, sizeof(BlockQ6_K), {offsetof(BlockQ6_K, d)}, 1, {"d"}};
            return true;
        default:
            return false;  // load_llama has already refused anything else
    }
}

// A value is non-finite when all its exponent bits are set.
constexpr uint32_t kF32Exp = 0x7f800000u;
constexpr uint16_t kF16Exp = 0x7c00u, kBF16Exp = 0x7f80u;

template <class Bits>
Bits load(const uint8_t* p) {
    Bits v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// Index of the first unit in [begin, end) with a non-finite value, or -1.
// Runs of units are OR-reduced first so the common all-finite case vectorizes.
int64_t scan(const Layout& l, const uint8_t* data, uint64_t begin, uint64_t end) {
    constexpr uint64_t kRun = 1024;
    for (uint64_t r = begin; r < end; r += kRun) {
        const uint64_t re = std::min(end, r + kRun);
        bool bad = false;
        switch (l.kind) {
            case Layout::F32:
                for (uint64_t i = r; i < re; i++)
                    bad |= (load<uint32_t>(data + 4 * i) & kF32Exp) == kF32Exp;
                break;
            case Layout::F16:
                for (uint64_t i = r; i < re; i++)
                    bad |= (load<uint16_t>(data + 2 * i) & kF16Exp) == kF16Exp;
                break;
            case Layout::BF16:
                for (uint64_t i = r; i < re; i++)
                    bad |= (load<uint16_t>(data + 2 * i) & kBF16Exp) == kBF16Exp;
                break;
            case Layout::Blocks:
                for (uint64_t i = r; i < re; i++)
                    for (int s = 0; s < l.n_scales; s++)
                        bad |= (load<uint16_t>(data + i * l.unit_bytes + l.scale_offset[s]) &
                                kF16Exp) == kF16Exp;
                break;
        }
        if (!bad) continue;
        for (uint64_t i = r; i < re; i++) {
            const uint8_t* p = data + i * l.unit_bytes;
            bool b = false;
            switch (l.kind) {
                case Layout::F32:
                    b = (load<uint32_t>(p) & kF32Exp) == kF32Exp;
                    break;
                case Layout::F16:
                    b = (load<uint16_t>(p) & kF16Exp) == kF16Exp;
                    break;
                case Layout::BF16:
                    b = (load<uint16_t>(p) & kBF16Exp) == kBF16Exp;
                    break;
                case Layout::Blocks:
                    for (int s = 0; s < l.n_scales; s++)
                        b |= (load<uint16_t>(p + l.scale_offset[s]) & kF16Exp) == kF16Exp;
                    break;
            }
            if (b) return int64_t(i);
        }
    }
    return -1;
}

struct Job {
    const Tensor* tensor;
    Layout layout;
    uint64_t begin, end;  // units
};

std::string describe(const Tensor& t, const Layout& l, uint64_t unit) {
    const uint8_t* p = t.data + unit * l.unit_bytes;
    const std::string name = "tensor '" + t.name + "' (" + std::string(type_name(t.type)) + ")";
    auto kind_of = [](bool nan) { return nan ? "NaN" : "Inf"; };
    if (l.kind == Layout::F32) {
        const uint32_t v = load<uint32_t>(p);
        return name + " has " + kind_of(v & 0x007fffffu) + " at element " + std::to_string(unit) +
               " (row " + std::to_string(unit / uint64_t(t.cols())) + ")";
    }
    if (l.kind != Layout::Blocks) {
        const uint16_t v = load<uint16_t>(p);
        const bool nan = l.kind == Layout::F16 ? (v & 0x03ffu) != 0 : (v & 0x007fu) != 0;
        return name + " has " + kind_of(nan) + " at element " + std::to_string(unit) + " (row " +
               std::to_string(unit / uint64_t(t.cols())) + ")";
    }
    for (int s = 0; s < l.n_scales; s++) {
        const uint16_t v = load<uint16_t>(p + l.scale_offset[s]);
        if ((v & kF16Exp) == kF16Exp)
            return name + " has " + kind_of(v & 0x03ffu) + " in the scale " + l.scale_name[s] +
                   " of block " + std::to_string(unit) + " (row " +
                   std::to_string(unit / std::max<uint64_t>(1, t.row_stride / l.unit_bytes)) + ")";
    }
    return name + " has a non-finite scale in block " + std::to_string(unit);
}

Error nonfinite_error(const std::string& path, const Tensor& t, const Layout& l, uint64_t unit) {
    return make_error(
        "model.nonfinite_weights",
        path + ": " + describe(t, l, unit) + "; the file is damaged or was converted badly");
}

}  // namespace

Status check_finite_rows(const Tensor& t, int64_t row0, int64_t nrows, const std::string& path) {
    Layout l;
    if (!t.data || nrows <= 0 || !layout_of(t.type, l)) return {};
    // Bytes a row: the GGUF row stride, or (floats) the columns' elements.
    const uint64_t stride = t.row_stride ? t.row_stride : uint64_t(t.cols()) * l.unit_bytes;
    const uint64_t units = t.n_bytes / l.unit_bytes;
    const uint64_t begin = std::min(units, uint64_t(row0) * stride / l.unit_bytes);
    const uint64_t end = std::min(units, uint64_t(row0 + nrows) * stride / l.unit_bytes);
    const int64_t bad = scan(l, t.data, begin, end);
    if (bad < 0) return {};
    return nonfinite_error(path, t, l, uint64_t(bad));
}

Status check_finite_weights(const LlamaModel& model, const std::string& path, int n_threads,
                            const std::function<bool(const Tensor&)>& skip) {
    // The distinct tensors, in file-binding order (a tied output shares tok_embd's data).
    std::vector<const Tensor*> tensors;
    auto add = [&](const Tensor& t) {
        if (!t.present() || !t.data || (skip && skip(t))) return;
        for (const Tensor* o : tensors)
            if (o->data == t.data) return;
        tensors.push_back(&t);
    };
    for (const Tensor* t : model.tensors()) add(*t);

    // Chunks of about 4 MiB, so that a few huge matrices still spread over every thread.
    constexpr uint64_t kChunkBytes = 4u << 20;
    std::vector<Job> jobs;
    for (const Tensor* t : tensors) {
        Layout l;
        if (!layout_of(t->type, l)) continue;
        const uint64_t units = t->n_bytes / l.unit_bytes;
        const uint64_t per_job = std::max<uint64_t>(1, kChunkBytes / l.unit_bytes);
        for (uint64_t b = 0; b < units; b += per_job)
            jobs.push_back({t, l, b, std::min(units, b + per_job)});
    }
    if (jobs.empty()) return {};

    // Jobs are taken in order, so once job k has found a bad value no job after k matters,
    // and every job before k still runs: the reported value is always the first in the file.
    std::vector<int64_t> found(jobs.size(), -1);
    std::atomic<size_t> next{0};
    std::atomic<size_t> first_bad{std::numeric_limits<size_t>::max()};
    auto work = [&] {
        for (;;) {
            const size_t k = next.fetch_add(1, std::memory_order_relaxed);
            if (k >= jobs.size() || k > first_bad.load(std::memory_order_relaxed)) return;
            const Job& j = jobs[k];
            found[k] = scan(j.layout, j.tensor->data, j.begin, j.end);
            if (found[k] < 0) continue;
            size_t cur = first_bad.load();
            while (k < cur && !first_bad.compare_exchange_weak(cur, k)) {
            }
        }
    };
    if (n_threads <= 0) n_threads = int(std::max(1u, std::thread::hardware_concurrency()));
    n_threads = int(std::min<size_t>(size_t(n_threads), jobs.size()));
    std::vector<std::thread> threads;
    for (int i = 1; i < n_threads; i++) {
        try {
            threads.emplace_back(work);
        } catch (const std::system_error&) {
            break;  // fewer threads only makes it slower
        }
    }
    work();
    for (auto& t : threads) t.join();

    const size_t k = first_bad.load();
    if (k == std::numeric_limits<size_t>::max()) return {};
    const Job& j = jobs[k];
    return nonfinite_error(path, *j.tensor, j.layout, uint64_t(found[k]));
}

}  // namespace ember
