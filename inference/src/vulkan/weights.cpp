#include "vulkan/weights.h"

#include <algorithm>
#include <cstring>
#include <set>

namespace ember::vulkan {
namespace {

struct PiecePlan {
    int64_t row0, nrows;
    uint64_t bytes;
};

// Q4_0 and Q8_0 are stored regrouped on the device: groups of 8 consecutive blocks (in row-major
// block order) hold the 8 blocks' quants first, 16-byte aligned, then their 8 F16 scales, so
// that a shader loads a block's quants with 16-byte loads (GGUF's 18- and 34-byte blocks are
// only 2-byte aligned). shaders/include/weights.glsl reads this layout.
constexpr uint64_t kGroupBlocks = 8;

uint64_t repacked_quant_bytes(GgmlType t) {
    return t == GgmlType::Q4_0 ? 16 : t == GgmlType::Q8_0 ? 32 : 0;
}

uint64_t piece_bytes(GgmlType t, uint64_t nrows, uint64_t stride) {
    const uint64_t qb = repacked_quant_bytes(t);
    if (!qb) return nrows * stride;
    const uint64_t blocks = nrows * (stride / (qb + 2));
    return (blocks + kGroupBlocks - 1) / kGroupBlocks * kGroupBlocks * (qb + 2);
}

// GGUF blocks (F16 scale, then qb bytes of quants) -> the grouped layout; padding is zeroed.
void repack_blocks(GgmlType t, const uint8_t* src, uint64_t n_blocks, std::vector<uint8_t>& out) {
    const uint64_t qb = repacked_quant_bytes(t), bb = qb + 2, gb = kGroupBlocks * bb;
    out.assign((n_blocks + kGroupBlocks - 1) / kGroupBlocks * gb, 0);
    for (uint64_t i = 0; i < n_blocks; ++i) {
        const uint8_t* b = src + i * bb;
        uint8_t* g = out.data() + (i / kGroupBlocks) * gb;
        const uint64_t j = i % kGroupBlocks;
        std::memcpy(g + j * qb, b + 2, qb);
        std::memcpy(g + kGroupBlocks * qb + j * 2, b, 2);
    }
}

uint64_t row_stride_of(const Tensor& t) {
    return t.row_stride ? t.row_stride : t.n_bytes / uint64_t(std::max<int64_t>(1, t.rows()));
}

Result<std::vector<PiecePlan>> plan_tensor(const Tensor& t, const PlacementLimits& lim) {
    auto tt = type_traits(t.type);
    if (!weight_type_suffix(t.type) || !tt)
        return make_error("vulkan.unsupported_type", "tensor '" + t.name + "' has type " +
                                                         std::string(type_name(t.type)) +
                                                         ", which the Vulkan backend cannot run");
    uint64_t stride = row_stride_of(t);
    if (stride == 0 || stride % tt->block_bytes != 0 || t.cols() % tt->block_elems != 0)
        return make_error("vulkan.bad_tensor",
                          "tensor '" + t.name + "': row stride " + std::to_string(stride) +
                              " is not a whole number of " + std::string(tt->name) + " blocks");
    // Grouping pads a piece by less than one group (8 blocks).
    const uint64_t pad = repacked_quant_bytes(t.type) ? kGroupBlocks * tt->block_bytes : 0;
    if (stride + pad > lim.max_range)
        return make_error("vulkan.tensor_too_large",
                          "tensor '" + t.name + "': one row (" + std::to_string(stride) +
                              " bytes) exceeds the device's maxStorageBufferRange (" +
                              std::to_string(lim.max_range) + ")");
    int64_t per_piece =
        int64_t(std::min<uint64_t>((lim.max_range - pad) / stride, uint64_t(t.rows())));
    std::vector<PiecePlan> out;
    for (int64_t r = 0; r < t.rows(); r += per_piece) {
        int64_t n = std::min(per_piece, t.rows() - r);
        out.push_back({r, n, piece_bytes(t.type, uint64_t(n), stride)});
    }
    return out;
}

}  // namespace

PlacementLimits placement_limits(const Adapter& adapter, uint64_t max_range_override) {
    PlacementLimits l;
    l.max_range = effective_max_range(adapter.props.limits, max_range_override);
    l.alignment = effective_alignment(adapter.props.limits);
    l.block_limit = effective_block_limit(adapter, l.max_range);
    return l;
}

PlacementLimits placement_limits(const Context& ctx) {
    return {ctx.max_range(), ctx.range_alignment(), ctx.block_limit()};
}

Result<uint64_t> WeightStore::estimate_bytes(const std::vector<const Tensor*>& tensors,
                                             const PlacementLimits& lim) {
    Arena plan(lim.block_limit, lim.alignment);
    std::set<const uint8_t*> seen;
    for (const Tensor* t : tensors) {
        if (!t->present() || !seen.insert(t->data).second) continue;
        EMBER_ASSIGN_OR_RETURN(auto pieces, plan_tensor(*t, lim));
        for (const auto& p : pieces) plan.reserve(p.bytes);
    }
    return uint64_t(plan.total_bytes());
}

Result<std::unique_ptr<WeightStore>> WeightStore::upload(Context& ctx,
                                                         const std::vector<const Tensor*>& tensors,
                                                         const std::function<bool(float)>& progress,
                                                         const std::atomic<bool>* cancel) {
    PlacementLimits lim = placement_limits(ctx);
    std::unique_ptr<WeightStore> ws(new WeightStore(lim.block_limit, lim.alignment));
    struct Job {
        const Tensor* t;
        std::vector<PiecePlan> pieces;
        std::vector<size_t> slots;
    };
    std::vector<Job> jobs;
    uint64_t total = 0;
    for (const Tensor* t : tensors) {
        if (!t->present() || ws->m_tensors.count(t->data)) continue;
        if (!t->data)
            return make_error("vulkan.bad_tensor",
                              "tensor '" + t->name + "' has no data (already released?)");
        EMBER_ASSIGN_OR_RETURN(auto pieces, plan_tensor(*t, lim));
        Job j{t, std::move(pieces), {}};
        for (const auto& p : j.pieces) {
            j.slots.push_back(ws->m_arena.reserve(p.bytes));
            total += p.bytes;
        }
        ws->m_tensors[t->data] = DeviceTensor{};
        jobs.push_back(std::move(j));
    }
    EMBER_TRY(ws->m_arena.allocate(ctx.device(), BufferKind::DeviceLocal));
    ws->m_bytes = ws->m_arena.total_bytes();

    VkDeviceSize staging = std::clamp<VkDeviceSize>(total, 4096, VkDeviceSize(64) << 20);
    EMBER_ASSIGN_OR_RETURN(Uploader up, Uploader::create(ctx.device(), staging));
    uint64_t done = 0;
    std::vector<uint8_t> repacked;
    for (const Job& j : jobs) {
        if (cancel && cancel->load())
            return make_error("vulkan.cancelled", "loading was cancelled");
        const Tensor& t = *j.t;
        uint64_t stride = row_stride_of(t);
        DeviceTensor& dt = ws->m_tensors[t.data];
        dt.type = t.type;
        dt.rows = t.rows();
        dt.cols = t.cols();
        dt.stride_units = uint32_t(stride / type_traits(t.type)->block_bytes);
        for (size_t i = 0; i < j.pieces.size(); ++i) {
            const PiecePlan& p = j.pieces[i];
            BufferRange r = ws->m_arena.get(j.slots[i]);
            const uint8_t* src = t.data + uint64_t(p.row0) * stride;
            if (repacked_quant_bytes(t.type)) {
                repack_blocks(t.type, src, uint64_t(p.nrows) * dt.stride_units, repacked);
                src = repacked.data();
            }
            EMBER_TRY(up.upload(r, src, p.bytes));
            dt.pieces.push_back({r, p.row0, p.nrows});
            done += p.bytes;
        }
        if (progress && !progress(total ? float(double(done) / double(total)) : 1.0f))
            return make_error("vulkan.cancelled", "loading was cancelled");
    }
    EMBER_TRY(up.flush());
    return ws;
}

const DeviceTensor* WeightStore::find(const Tensor& t) const {
    auto it = m_tensors.find(t.data);
    return it == m_tensors.end() ? nullptr : &it->second;
}

}  // namespace ember::vulkan
