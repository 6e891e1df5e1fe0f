#include "vulkan/weights.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <numeric>
#include <set>
#include <string>
#include <string_view>

#include "cpu/threadpool.h"
#include "quant/quant.h"

namespace ember::vulkan {
namespace {

struct PiecePlan {
    int64_t row0, nrows;
    uint64_t bytes;
};

// Device layouts that differ from GGUF's, so that shaders load quants with 16-byte loads (GGUF's
// Q4_0, Q8_0 and Q6_K blocks are only 2-byte aligned) and unpack them the same way for every
// type. shaders/include/weights.glsl reads them.
//  - Q4_0 and Q8_0: each row holds its blocks' quants, then their F16 scales, padded to 16 bytes
//    (shaders/include/q_rows.glsl); the row stride is passed in uvec4.
//  - Q4_1, Q5_0, Q5_1 and Q6_K: groups of 8 consecutive blocks (in row-major block
//    order) hold each part of a block for the 8 blocks in turn (group_parts): Q4_1 the nibbles (16
//    bytes, Q4_0's order), then 8 F16 pairs (d, m); Q5_0 and Q5_1 the nibbles, then a uint of high
//    bits per block (element e's at q5_high_bit(e), as in Q5_K), then the d's (Q5_0) or (d, m)
//    pairs (Q5_1); Q6_K each superblock's 208 bytes without d (below), then the 8 F16 d's.
//  - Q4_K: each superblock in place: its 8 sub-blocks' nibbles (below), then d, dmin and 12
//    bytes of the same 6-bit scales and mins, repacked so that sub-block j's are two shifts and
//    masks away: byte j of the first 8 holds scale j in bits 0-5 and min j's high 2 bits in 6-7,
//    and nibble j of the last 4 (little-endian) min j's low 4 bits (144 bytes, as in GGUF).
//  - Q5_K: Q4_K's 144 bytes, then a uint of high bits per sub-block (176 bytes, as in GGUF),
//    placed so that the F16 dot product puts them above the nibbles with a shift and a mask
//    (q5_high_bit).
// A K-quant sub-block of 32 elements keeps Q4_0's order: byte b holds element b in its low
// nibble and element b + 16 in its high one. Q6_K's high bit pairs follow as 8 bytes a sub-block:
// for nibble byte b (word k = b / 4, byte i = b % 4), byte i of uint k / 2 holds them at bits
// 4-7 (k even) or 0-3 (k odd), element b's pair below element b + 16's; then the 16 int8 scales.
constexpr uint64_t kGroupBlocks = 8;
// The upload's staging: a few slots (one filled while the others are copied), and the share
// of a slot one task of the thread pool rearranges.
constexpr VkDeviceSize kStagingSlotBytes = VkDeviceSize(16) << 20;
constexpr int kStagingSlots = 3;
constexpr uint64_t kTaskBytes = uint64_t(256) << 10;

// The parts of a regrouped type's block, in the order a group holds them (n = 0: not
// regrouped); they add up to the GGUF block's bytes.
struct GroupParts {
    int n = 0;
    uint64_t bytes[3] = {};
};
GroupParts group_parts(GgmlType t) {
    switch (t) {
        case GgmlType::Q6_K:
            return {2, {208, 2}};
        case GgmlType::Q4_1:
            return {2, {16, 4}};
        case GgmlType::Q5_0:
            return {3, {16, 4, 2}};
        case GgmlType::Q5_1:
            return {3, {16, 4, 4}};
        default:
            return {};
    }
}
bool grouped(GgmlType t) {
    return group_parts(t).n > 0;
}

// Q4_0 and Q8_0 rows: quants, then scales (padded to 16 bytes).
bool quants_then_scales(GgmlType t) {
    return t == GgmlType::Q4_0 || t == GgmlType::Q8_0;
}
uint64_t device_row_bytes(GgmlType t, uint64_t stride) {
    if (!quants_then_scales(t)) return stride;
    const uint64_t nb = stride / type_traits(t)->block_bytes;
    return nb * (type_traits(t)->block_bytes - 2) + (2 * nb + 15) / 16 * 16;
}

uint64_t piece_bytes(GgmlType t, uint64_t nrows, uint64_t stride) {
    if (!grouped(t)) return nrows * device_row_bytes(t, stride);
    const uint64_t bb = type_traits(t)->block_bytes, blocks = nrows * (stride / bb);
    return (blocks + kGroupBlocks - 1) / kGroupBlocks * kGroupBlocks * bb;
}

// Sub-block element e's bit in its uint of high bits (Q5_K). Nibble word k = (e % 16) / 4 is
// unpacked in four masks of two elements each; the shader shifts that uint left by 4 or 2 (k =
// 0, 1) or right by 4 or 6 (k = 2, 3), after which the high bits of elements (4k, 4k + 2) sit at
// bits 4 and 20, of (4k + 16, 4k + 18) at 8 and 24, and of the odd ones one bit above.
constexpr int q5_high_bit(int e) {
    const int k = (e % 16) / 4, i = e % 4;
    const int at = 4 + (i & 1) + 16 * (i >> 1) + 4 * (e / 16);
    constexpr int shift[4] = {-4, -2, 4, 6};
    return at + shift[k];
}
struct Q5Bits {
    int bit[32];
    constexpr Q5Bits() : bit() {
        for (int e = 0; e < 32; ++e) bit[e] = q5_high_bit(e);
    }
};
constexpr Q5Bits kQ5Bits;

void put_u32(uint8_t* dst, uint32_t v) {
    for (int i = 0; i < 4; ++i) dst[i] = uint8_t(v >> (8 * i));
}

// The rearrangements below write every byte of their output once and never read it back (it
// may be write-combined staging memory), and run on all cores during the upload.

// Q4_K's and Q5_K's superblock head: d, dmin and the repacked scales (above).
void repack_k4_head(const uint8_t* d_dmin, const uint8_t* scales, uint8_t* dst) {
    uint8_t s[4 + K_SCALE_SIZE] = {};
    std::memcpy(s, d_dmin, 4);
    for (int j = 0; j < 8; ++j) {
        uint8_t sc, mn;
        scale_min_k4(j, scales, sc, mn);
        s[4 + j] = uint8_t(sc | (mn >> 4) << 6);
        s[4 + 8 + j / 2] |= uint8_t((mn & 15) << (4 * (j % 2)));
    }
    std::memcpy(dst, s, sizeof s);
}

// A Q4_K or Q5_K superblock's nibbles (qs: sub-blocks 2i and 2i + 1 share 32 bytes, low and
// high) as 8 sub-blocks of 16 bytes in Q4_0's order: byte b of sub-block j holds its element b
// in the low nibble and b + 16 in the high one. (dst: a local buffer, so that this vectorizes.)
void repack_k4_nibbles(const uint8_t* __restrict qs, uint8_t* __restrict dst) {
    for (int i = 0; i < 4; ++i) {
        const uint8_t* q = qs + 32 * i;
        uint8_t* lo = dst + 32 * i;  // sub-block 2i: the low nibbles
        uint8_t* hi = lo + 16;       // sub-block 2i + 1: the high ones
        for (int b = 0; b < 16; ++b) {
            lo[b] = uint8_t((q[b] & 15) | (q[b + 16] & 15) << 4);
            hi[b] = uint8_t((q[b] >> 4) | (q[b + 16] & 0xf0));
        }
    }
}

// Each block is put together in a local buffer and written out whole: dst may be
// write-combined staging memory, where scattered byte stores are slow.
void rearrange_q4_k(const uint8_t* src, uint8_t* dst) {
    const BlockQ4_K& b = *reinterpret_cast<const BlockQ4_K*>(src);
    uint8_t out[sizeof(BlockQ4_K)];
    repack_k4_nibbles(b.qs, out);
    repack_k4_head(src, b.scales, out + QK_K / 2);
    std::memcpy(dst, out, sizeof out);
}

// A block's 32 high bits (bit e: element e's, GGUF's Q5_0 and Q5_1) at q5_high_bit(e).
uint32_t q5_high_bits(uint32_t qh) {
    uint32_t out = 0;
    for (int e = 0; e < 32; ++e) out |= ((qh >> e) & 1u) << kQ5Bits.bit[e];
    return out;
}

void rearrange_q5_k(const uint8_t* src, uint8_t* dst) {
    const BlockQ5_K& b = *reinterpret_cast<const BlockQ5_K*>(src);
    uint8_t out[sizeof(BlockQ5_K)];
    repack_k4_nibbles(b.qs, out);
    repack_k4_head(src, b.scales, out + QK_K / 2);
    // Sub-block j's high bits: bit j of qh[e] for its element e.
    uint32_t w[8] = {};
    for (int e = 0; e < 32; ++e) {
        const uint32_t v = b.qh[e];
        for (int j = 0; j < 8; ++j) w[j] |= ((v >> j) & 1u) << kQ5Bits.bit[e];
    }
    for (int j = 0; j < 8; ++j) put_u32(out + sizeof(BlockQ4_K) + 4 * j, w[j]);
    std::memcpy(dst, out, sizeof out);
}

// Q6_K: the low nibbles as Q4_K's, then each sub-block's high bit pairs in 8 bytes (above),
// then the 16 int8 scales (208 bytes; d goes to the group's last part).
void rearrange_q6_k(const uint8_t* src, uint8_t* dst) {
    const BlockQ6_K& b = *reinterpret_cast<const BlockQ6_K*>(src);
    // Bytes in words: a shift then a mask per byte lane takes each byte's own bits.
    auto word = [](const uint8_t* p) {
        uint64_t v;
        std::memcpy(&v, p, 8);
        return v;
    };
    auto word32 = [](const uint8_t* p) {
        uint32_t v;
        std::memcpy(&v, p, 4);
        return v;
    };
    uint8_t out[208];
    for (int j = 0; j < 8; ++j) {
        // Sub-block j = elements 32j..32j+31: half h of the superblock, part p of that half.
        const int h = j / 4, p = j % 4;
        const uint8_t* ql = b.ql + 64 * h + 32 * (p & 1);
        const uint8_t* qh = b.qh + 32 * h;
        const int lsh = 4 * (p >> 1), hsh = 2 * p;
        constexpr uint64_t k4 = 0x0f0f0f0f0f0f0f0full;
        for (int e = 0; e < 16; e += 8) {
            const uint64_t v = ((word(ql + e) >> lsh) & k4) | ((word(ql + e + 16) >> lsh) & k4)
                                                                  << 4;
            std::memcpy(out + 16 * j + e, &v, 8);
        }
        // Byte 4 * half + i: nibble bytes b = 8 * half + i (word k even: bits 4-7) and b + 4
        // (k odd: bits 0-3), element b's pair below element b + 16's; i = 0..3 at once.
        constexpr uint32_t k2 = 0x03030303u;
        for (int half = 0; half < 2; ++half) {
            const uint8_t* be = qh + 8 * half;
            const uint32_t v =
                ((word32(be) >> hsh) & k2) << 4 | ((word32(be + 16) >> hsh) & k2) << 6 |
                ((word32(be + 4) >> hsh) & k2) | ((word32(be + 20) >> hsh) & k2) << 2;
            std::memcpy(out + 128 + 8 * j + 4 * half, &v, 4);
        }
    }
    std::memcpy(out + 192, b.scales, 16);
    std::memcpy(dst, out, sizeof out);
}

}  // namespace

uint64_t device_piece_bytes(GgmlType t, uint64_t nrows, uint64_t row_stride) {
    return piece_bytes(t, nrows, row_stride);
}

bool device_layout_differs(GgmlType t) {
    return grouped(t) || quants_then_scales(t) || t == GgmlType::Q4_K || t == GgmlType::Q5_K;
}

uint64_t rearrange_granule_rows(GgmlType t, uint64_t nb) {
    if (!grouped(t)) return 1;
    return kGroupBlocks / std::gcd(nb, kGroupBlocks);
}

void rearrange_rows(GgmlType t, const uint8_t* src, uint64_t nrows, uint64_t nb, uint8_t* dst) {
    const uint64_t bb = type_traits(t)->block_bytes, n_blocks = nrows * nb;
    if (!device_layout_differs(t)) {
        std::memcpy(dst, src, n_blocks * bb);
        return;
    }
    if (quants_then_scales(t)) {
        const uint64_t qb = bb - 2, row = device_row_bytes(t, nb * bb);
        for (uint64_t r = 0; r < nrows; ++r) {
            const uint8_t* b = src + r * nb * bb;  // each block: d, then the quants
            uint8_t* q = dst + r * row;
            uint8_t* d = q + nb * qb;
            for (uint64_t i = 0; i < nb; ++i, b += bb) {
                std::memcpy(q + i * qb, b + 2, qb);
                std::memcpy(d + i * 2, b, 2);
            }
            std::memset(d + nb * 2, 0, row - nb * qb - nb * 2);
        }
        return;
    }
    if (t == GgmlType::Q4_K || t == GgmlType::Q5_K) {
        for (uint64_t i = 0; i < n_blocks; ++i) {
            if (t == GgmlType::Q4_K)
                rearrange_q4_k(src + i * bb, dst + i * bb);
            else
                rearrange_q5_k(src + i * bb, dst + i * bb);
        }
        return;
    }
    const GroupParts gp = group_parts(t);
    const uint64_t gb = kGroupBlocks * bb;
    // A last group of fewer than 8 blocks is padded with zeros.
    if (n_blocks % kGroupBlocks) std::memset(dst + n_blocks / kGroupBlocks * gb, 0, gb);
    for (uint64_t i = 0; i < n_blocks; ++i) {
        const uint8_t* b = src + i * bb;
        // Part k of block j of the group.
        uint8_t* part[3] = {};
        uint8_t* at = dst + (i / kGroupBlocks) * gb;
        for (int k = 0; k < gp.n; ++k) {
            part[k] = at + (i % kGroupBlocks) * gp.bytes[k];
            at += kGroupBlocks * gp.bytes[k];
        }
        // GGUF's blocks: Q6_K 208 bytes, d; Q4_1 d, m, nibbles; Q5_0 d, high bits, nibbles;
        // Q5_1 d, m, high bits, nibbles.
        switch (t) {
            case GgmlType::Q6_K:
                rearrange_q6_k(b, part[0]);
                std::memcpy(part[1], b + 208, 2);
                break;
            case GgmlType::Q4_1:
                std::memcpy(part[0], b + 4, 16);
                std::memcpy(part[1], b, 4);
                break;
            case GgmlType::Q5_0:
            case GgmlType::Q5_1: {
                const uint64_t dm = t == GgmlType::Q5_0 ? 2 : 4;
                std::memcpy(part[0], b + dm + 4, 16);
                uint32_t qh;
                std::memcpy(&qh, b + dm, 4);
                put_u32(part[1], q5_high_bits(qh));
                std::memcpy(part[2], b, dm);
                break;
            }
            default:
                assert(false && "group_parts and this switch name the same types");
        }
    }
}

namespace {

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
    // Grouping pads a piece by less than one group (8 blocks); Q4_0's and Q8_0's rows are padded
    // to 16 bytes.
    const uint64_t pad = grouped(t.type) ? kGroupBlocks * tt->block_bytes : 0;
    const uint64_t row_bytes = device_row_bytes(t.type, stride);
    if (row_bytes + pad > lim.max_range)
        return make_error("vulkan.tensor_too_large",
                          "tensor '" + t.name + "': one row (" + std::to_string(row_bytes) +
                              " bytes) exceeds the device's maxStorageBufferRange (" +
                              std::to_string(lim.max_range) + ")");
    int64_t per_piece =
        int64_t(std::min<uint64_t>((lim.max_range - pad) / row_bytes, uint64_t(t.rows())));
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

namespace {

// The read-only private file mappings of the process (a GGUF file's). Tensor pages that lie in
// one are given back once uploaded (madvise(MADV_DONTNEED) there only drops the pages: a later
// read faults them in from the file again); data elsewhere (a test's model in heap memory)
// would be zeroed, so it is left alone. Linux only (/proc/self/maps); elsewhere nothing.
class FileMappings {
public:
    FileMappings() {
        std::ifstream maps("/proc/self/maps");
        std::string line;
        while (std::getline(maps, line)) {
            unsigned long lo = 0, hi = 0, inode = 0;
            char perms[5] = {};
            if (std::sscanf(line.c_str(), "%lx-%lx %4s %*s %*s %lu", &lo, &hi, perms, &inode) ==
                    4 &&
                inode != 0 && std::string_view(perms) == "r--p")
                m_ranges.emplace_back(uintptr_t(lo), uintptr_t(hi));
        }
    }
    // Drops the whole pages of [p, p + n) that lie in a file mapping.
    void release(const uint8_t* p, uint64_t n) const {
        static const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
        const uintptr_t a = uintptr_t(p), b = a + n;
        for (const auto& [lo, hi] : m_ranges) {
            const uintptr_t from = (std::max(a, lo) + page - 1) / page * page;
            const uintptr_t to = std::min(b, hi) / page * page;
            if (from < to) madvise(reinterpret_cast<void*>(from), to - from, MADV_DONTNEED);
        }
    }

private:
    std::vector<std::pair<uintptr_t, uintptr_t>> m_ranges;
};

// Rows of a piece that the host rearranges in one go (a part of a staging slot), in whole
// granules, at least one.
uint64_t rows_per_step(const Tensor& t, uint64_t stride, uint64_t granule, uint64_t bytes) {
    const uint64_t per_granule = device_piece_bytes(t.type, granule, stride);
    return std::max<uint64_t>(1, bytes / per_granule) * granule;
}

}  // namespace

Result<std::unique_ptr<WeightStore>> WeightStore::upload(Context& ctx,
                                                         const std::vector<const Tensor*>& tensors,
                                                         const std::function<bool(float)>& progress,
                                                         const std::atomic<bool>* cancel,
                                                         const RowCheck& check,
                                                         const InHost& in_host) {
    PlacementLimits lim = placement_limits(ctx);
    std::unique_ptr<WeightStore> ws(new WeightStore(lim.block_limit, lim.alignment));
    struct Job {
        const Tensor* t;
        std::vector<PiecePlan> pieces;
        std::vector<size_t> slots;
        Arena* arena;
    };
    std::vector<Job> jobs;
    uint64_t total = 0, largest_granule = 0;
    for (const Tensor* t : tensors) {
        if (!t->present() || ws->m_tensors.count(t->data)) continue;
        if (!t->data)
            return make_error("vulkan.bad_tensor",
                              "tensor '" + t->name + "' has no data (already released?)");
        EMBER_ASSIGN_OR_RETURN(auto pieces, plan_tensor(*t, lim));
        Job j{t, std::move(pieces), {}, in_host && in_host(*t) ? &ws->m_host_arena : &ws->m_arena};
        for (const auto& p : j.pieces) {
            j.slots.push_back(j.arena->reserve(p.bytes));
            total += p.bytes;
        }
        const uint64_t stride = row_stride_of(*t);
        const uint64_t g =
            rearrange_granule_rows(t->type, stride / type_traits(t->type)->block_bytes);
        largest_granule = std::max(largest_granule, device_piece_bytes(t->type, g, stride));
        ws->m_tensors[t->data] = DeviceTensor{};
        jobs.push_back(std::move(j));
    }
    EMBER_TRY(ws->m_arena.allocate(ctx.device(), BufferKind::DeviceLocal));
    ws->m_bytes = ws->m_arena.total_bytes();
    // (Host-visible and a transfer destination: the same staged copies fill it.)
    EMBER_TRY(ws->m_host_arena.allocate(ctx.device(), BufferKind::HostStorage));
    ws->m_host_bytes = ws->m_host_arena.total_bytes();

    // A few staging slots: the host rearranges into one (on all cores) while the device copies
    // the others out.
    const VkDeviceSize slot = std::max<VkDeviceSize>(
        std::clamp<VkDeviceSize>(total, 4096, kStagingSlotBytes), largest_granule);
    // (Declared after ws: on any error it goes first, waiting for its copies into ws's blocks.)
    EMBER_ASSIGN_OR_RETURN(Uploader up,
                           Uploader::create(ctx.device(), slot, kStagingSlots, cancel));
    cpu::ThreadPool pool(cpu::physical_cores());
    const FileMappings files;
    uint64_t done = 0;
    for (const Job& j : jobs) {
        const Tensor& t = *j.t;
        uint64_t stride = row_stride_of(t);
        DeviceTensor& dt = ws->m_tensors[t.data];
        dt.type = t.type;
        dt.rows = t.rows();
        dt.cols = t.cols();
        const uint64_t nb = stride / type_traits(t.type)->block_bytes;
        // Q4_0 and Q8_0: in uvec4 (their rows hold their scales after the quants).
        dt.stride_units =
            uint32_t(quants_then_scales(t.type) ? device_row_bytes(t.type, stride) / 16 : nb);
        const uint64_t granule = rearrange_granule_rows(t.type, nb);
        const uint64_t step_rows = rows_per_step(t, stride, granule, slot);
        const uint64_t task_rows = rows_per_step(t, stride, granule, kTaskBytes);
        for (size_t i = 0; i < j.pieces.size(); ++i) {
            const PiecePlan& p = j.pieces[i];
            BufferRange r = j.arena->get(j.slots[i]);
            // Rows [r0, r1) of the piece into one staging slot, cut into tasks for the pool.
            for (uint64_t r0 = 0; r0 < uint64_t(p.nrows); r0 += step_rows) {
                if (cancel && cancel->load())
                    return make_error("vulkan.cancelled", "loading was cancelled");
                const uint64_t r1 = std::min<uint64_t>(uint64_t(p.nrows), r0 + step_rows);
                const uint64_t at = device_piece_bytes(t.type, r0, stride);
                const uint64_t bytes = device_piece_bytes(t.type, r1 - r0, stride);
                EMBER_ASSIGN_OR_RETURN(uint8_t * host, up.stage(r.sub(at, bytes), bytes));
                const uint8_t* src = t.data + (uint64_t(p.row0) + r0) * stride;
                const int n_tasks = int((r1 - r0 + task_rows - 1) / task_rows);
                std::vector<Status> checked(check ? size_t(n_tasks) : 0);
                pool.parallel_for(n_tasks, [&](int k, int) {
                    const uint64_t a = uint64_t(k) * task_rows;
                    const uint64_t b = std::min(r1 - r0, a + task_rows);
                    // Checked while the rows are read for the rearrangement: one pass.
                    if (check)
                        checked[size_t(k)] = check(t, p.row0 + int64_t(r0 + a), int64_t(b - a));
                    rearrange_rows(t.type, src + a * stride, b - a, nb,
                                   host + device_piece_bytes(t.type, a, stride));
                });
                for (Status& st : checked)
                    if (!st.ok()) return st.take_error();
                // These rows are in staging memory now: their file pages are not needed.
                files.release(src, (r1 - r0) * stride);
                done += bytes;
                if (progress && !progress(total ? float(double(done) / double(total)) : 1.0f))
                    return make_error("vulkan.cancelled", "loading was cancelled");
            }
            dt.pieces.push_back({r, p.row0, p.nrows});
        }
        // And the pages the steps' page-aligned ranges left out.
        files.release(t.data, t.n_bytes);
    }
    EMBER_TRY(up.flush());
    return ws;
}

const DeviceTensor* WeightStore::find(const Tensor& t) const {
    auto it = m_tensors.find(t.data);
    return it == m_tensors.end() ? nullptr : &it->second;
}

}  // namespace ember::vulkan
