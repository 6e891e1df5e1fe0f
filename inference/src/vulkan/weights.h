// Model weights on the device: planned into pieces, sub-allocated from a few big buffers and
// uploaded through a few staging slots, rearranged into the device layouts on all cores on the
// way. No host copy is kept: each tensor's file pages are given back once it is staged.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "model/llama.h"
#include "vulkan/ops.h"

namespace ember::vulkan {

struct PlacementLimits {
    VkDeviceSize max_range = 0;    // per descriptor
    VkDeviceSize alignment = 256;  // of bound offsets
    VkDeviceSize block_limit = 0;  // per allocation
};
PlacementLimits placement_limits(const Context& ctx);
PlacementLimits placement_limits(const Adapter& adapter, uint64_t max_range_override);

// Device layouts (weights.cpp): bytes of nrows rows of a tensor of type t (row_stride bytes a
// row in GGUF) on the device, and the rearrangement itself, from rows of GGUF blocks (nb a row)
// to dst. Regrouped types (Q4_1, Q5_0, Q5_1, Q6_K) keep 8 blocks together, so a part of a
// tensor must start at a multiple of rearrange_granule_rows() rows.
bool device_layout_differs(GgmlType t);
uint64_t device_piece_bytes(GgmlType t, uint64_t nrows, uint64_t row_stride);
uint64_t rearrange_granule_rows(GgmlType t, uint64_t nb);
void rearrange_rows(GgmlType t, const uint8_t* src, uint64_t nrows, uint64_t nb, uint8_t* dst);

// A check of rows [row0, row0 + nrows) of a tensor's file data, run on the rows of each staging
// step while they are read for the upload (model/validate.h's check_finite_rows), so that the
// file is read once; its first error, in tensor and row order, ends the upload.
using RowCheck = std::function<Status(const Tensor&, int64_t row0, int64_t nrows)>;
// Tensors placed in host-visible memory, which the device reads over the bus (partial offload:
// the CPU's layers, for prompts run whole on the device).
using InHost = std::function<bool(const Tensor&)>;

class WeightStore {
public:
    // Device bytes the tensors take (pieces padded to the alignment); tensors sharing data count
    // once.
    static Result<uint64_t> estimate_bytes(const std::vector<const Tensor*>& tensors,
                                           const PlacementLimits& lim);
    static Result<std::unique_ptr<WeightStore>> upload(Context& ctx,
                                                       const std::vector<const Tensor*>& tensors,
                                                       const std::function<bool(float)>& progress,
                                                       const std::atomic<bool>* cancel,
                                                       const RowCheck& check = {},
                                                       const InHost& in_host = {});
    // The device copy of a tensor given at upload (matched by its data pointer).
    const DeviceTensor* find(const Tensor& t) const;
    uint64_t bytes() const { return m_bytes; }            // device-local
    uint64_t host_bytes() const { return m_host_bytes; }  // host-visible (in_host's)

private:
    WeightStore(VkDeviceSize block_limit, VkDeviceSize alignment)
        : m_arena(block_limit, alignment), m_host_arena(block_limit, alignment) {}
    Arena m_arena, m_host_arena;
    uint64_t m_host_bytes = 0;
    std::map<const uint8_t*, DeviceTensor> m_tensors;
    uint64_t m_bytes = 0;
};

}  // namespace ember::vulkan
