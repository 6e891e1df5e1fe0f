#include "vulkan/bench/bandwidth.h"

#include <algorithm>
#include <optional>

#include "vulkan/ops.h"
#include "vulkan/profiler.h"

namespace ember::vulkan {

Result<std::vector<ReadBandwidth>> measure_read_bandwidth(Context& ctx,
                                                          const std::vector<uint64_t>& sizes,
                                                          int reps, uint64_t pool_bytes,
                                                          FillKind fill) {
    const Device& dev = ctx.device();
    if (dev.adapter().timestamp_valid_bits == 0 || dev.limits().timestampPeriod <= 0)
        return make_error("vulkan.no_timestamps",
                          "the compute queue of '" + dev.adapter().info.name +
                              "' has no timestamps; bandwidth cannot be measured");
    if (sizes.empty() || reps < 1) return std::vector<ReadBandwidth>{};
    const uint64_t align = std::max<uint64_t>(16, ctx.range_alignment());
    std::vector<uint64_t> bytes;
    for (uint64_t s : sizes)
        bytes.push_back(std::max<uint64_t>(16, std::min<uint64_t>(s, ctx.max_range()) / 16 * 16));
    // At least 4 times the largest size, so that each repetition reads memory the previous
    // ones did not leave in the cache.
    const uint64_t largest = *std::max_element(bytes.begin(), bytes.end());
    const uint64_t pool =
        std::min<uint64_t>(std::max<uint64_t>(pool_bytes, 4 * largest), ctx.block_limit()) / align *
        align;
    if (pool < largest)
        return make_error("vulkan.bandwidth_buffer", "a read of " + std::to_string(largest) +
                                                         " bytes does not fit one allocation");
    EMBER_ASSIGN_OR_RETURN(Buffer src, Buffer::create(dev, pool, BufferKind::DeviceLocal));
    EMBER_ASSIGN_OR_RETURN(Buffer dst, Buffer::create(dev, 256, BufferKind::DeviceLocal));
    // Random bytes: a GPU that compresses memory would read a zeroed buffer faster than weights
    // (xorshift64 in a 16 MiB host-coherent upload, copied over the pool).
    std::optional<Buffer> noise;
    if (fill == FillKind::Random) {
        const uint64_t chunk = std::min<uint64_t>(pool, 16u << 20);
        EMBER_ASSIGN_OR_RETURN(Buffer up, Buffer::create(dev, chunk, BufferKind::Upload));
        auto* words = static_cast<uint64_t*>(up.mapped());
        uint64_t x = 0x9E3779B97F4A7C15ull;
        for (uint64_t i = 0; i < chunk / 8; ++i) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            words[i] = x;
        }
        noise = std::move(up);
    }
    const uint32_t n_queries = 2 * uint32_t(bytes.size());
    EMBER_ASSIGN_OR_RETURN(QueryPool queries, QueryPool::create(dev, n_queries));

    constexpr uint32_t kWg = 256, kReads = 4;  // READS in read_bandwidth.comp
    EMBER_ASSIGN_OR_RETURN(VkCommandBuffer cmd, ctx.begin_oneoff());
    vkCmdResetQueryPool(cmd, queries.handle(), 0, n_queries);
    Recorder rec(ctx, cmd);
    if (noise) {
        std::vector<VkBufferCopy> copies;
        for (uint64_t off = 0; off < pool; off += noise->size())
            copies.push_back({0, off, std::min<uint64_t>(noise->size(), pool - off)});
        vkCmdCopyBuffer(cmd, noise->handle(), src.handle(), uint32_t(copies.size()), copies.data());
        rec.transfer_to_compute();
    } else {
        rec.fill_zero(src.range());
    }
    uint64_t offset = 0;
    for (size_t i = 0; i < bytes.size(); ++i) {
        vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries.handle(),
                            uint32_t(2 * i));
        const uint32_t n = uint32_t(bytes[i] / 16);
        for (int r = 0; r < reps; ++r) {
            if (offset + bytes[i] > pool) offset = 0;
            BufferRange range{src.handle(), offset, bytes[i]};
            offset = (offset + bytes[i] + align - 1) / align * align;
            EMBER_TRY(rec.dispatch_linear("read_bandwidth_u32_u32", {range, dst.range()}, &n, 4,
                                          kWg, (uint64_t(n) + kWg * kReads - 1) / (kWg * kReads)));
            rec.barrier();
        }
        vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries.handle(),
                            uint32_t(2 * i + 1));
    }
    EMBER_TRY(ctx.end_oneoff_and_wait(cmd));
    std::vector<uint64_t> ts(n_queries);
    EMBER_VK_TRY(
        vkGetQueryPoolResults(dev.handle(), queries.handle(), 0, n_queries, ts.size() * 8,
                              ts.data(), 8, VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
        "vkGetQueryPoolResults (bandwidth)");
    const uint32_t bits = dev.adapter().timestamp_valid_bits;
    const uint64_t mask = bits >= 64 ? ~0ull : (1ull << bits) - 1;
    std::vector<ReadBandwidth> out;
    for (size_t i = 0; i < bytes.size(); ++i) {
        const double ns = double((ts[2 * i + 1] - ts[2 * i]) & mask) * dev.limits().timestampPeriod;
        ReadBandwidth b;
        b.bytes = bytes[i];
        b.us_per_dispatch = ns / 1000.0 / reps;
        b.gb_s = ns > 0 ? double(bytes[i]) * reps / ns : 0.0;
        out.push_back(b);
    }
    return out;
}

}  // namespace ember::vulkan
