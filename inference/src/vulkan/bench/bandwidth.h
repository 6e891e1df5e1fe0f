// The device's memory read bandwidth as a decode step sees it: one dispatch streams a weight-
// sized buffer once, followed by a barrier, repeated over fresh memory so that no size is
// served from the L2 cache. `ember-cli bench --membw` reports it for GPUs.
#pragma once

#include <cstdint>
#include <vector>

#include "vulkan/context.h"

namespace ember::vulkan {

struct ReadBandwidth {
    uint64_t bytes = 0;          // read by one dispatch
    double us_per_dispatch = 0;  // GPU time of the dispatch and its barrier
    double gb_s = 0;             // bytes / that time
};

// What the read buffer holds: zeros, or bytes no memory compression can shrink.
enum class FillKind { Zero, Random };

// One entry per size (sizes are rounded down to 16 bytes and capped at what one descriptor
// may bind); each size is dispatched `reps` times, each time at the next place of a buffer of
// at least `pool_bytes` (several times the GPU's last-level cache).
Result<std::vector<ReadBandwidth>> measure_read_bandwidth(Context& ctx,
                                                          const std::vector<uint64_t>& sizes,
                                                          int reps,
                                                          uint64_t pool_bytes = uint64_t(1) << 30,
                                                          FillKind fill = FillKind::Random);

}  // namespace ember::vulkan
