// The decode mat-vecs with fused neighbours (matvec_fused.comp, matvec_fused_h.comp): plans
// and dispatches; split from ops.cpp by op family.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/env.h"
#include "vulkan/ops.h"

namespace ember::vulkan {
namespace {

constexpr uint32_t kFusedRows = 4;  // SLOTS in matvec_fused.comp

// matvec_fused_h.comp: rows per workgroup (0: not usable here) and shared x capacity in blocks.
struct FusedH {
    uint32_t rows = 0, xs_blocks = 0;
    uint32_t warp_unroll = 0;  // > 0: each subgroup owns its rows (WARP_UNROLL in the shader)
    uint32_t diag = 0;         // EMBER_VULKAN_MATVEC_DIAG, timing only
};

// ksplit: column parts per group of rows (each part's blocks set the steps).
FusedH fused_h_plan(const Recorder& rec, const DeviceTensor& w, int64_t kv_rows,
                    uint32_t ksplit = 1) {
    const Adapter& a = rec.context().adapter();
    if (!a.float16 || (w.type != GgmlType::Q4_0 && w.type != GgmlType::Q8_0)) return {};
    // EMBER_VULKAN_MATVEC_H=0 turns the kernel off (matvec_fused.comp); EMBER_VULKAN_MATVEC_WARP
    // caps the blocks per lane a step, 0 selecting the per-workgroup mode of item 31 (used there
    // only for Q4_0 rows of 4096 columns unless EMBER_VULKAN_MATVEC_H=1).
    const char* force = std::getenv("EMBER_VULKAN_MATVEC_H");
    if (force && std::strcmp(force, "1") != 0) return {};
    // Subgroups owning their rows (docs/performance.md, item 35): each lane loads at most 3
    // Q4_0 or 2 Q8_0 blocks of each of 2 rows a step (96-128 bytes in flight; the best of 1-6
    // measured on the H200), and the steps of a row are balanced (a 176-block row takes 2 steps
    // of 3 blocks a lane, not 3 steps of 2).
    const uint32_t max_unroll = std::min<uint32_t>(
        env_u32("EMBER_VULKAN_MATVEC_WARP", w.type == GgmlType::Q4_0 ? 3 : 2), 8);
    uint32_t warp_unroll = 0;
    if (max_unroll) {
        const uint64_t nblk = (uint64_t(w.cols) / 32 + ksplit - 1) / ksplit;
        const uint64_t sgs = std::max<uint32_t>(a.subgroup_size, 1);
        const uint64_t steps =
            std::max<uint64_t>(1, (nblk + sgs * max_unroll - 1) / (sgs * max_unroll));
        warp_unroll = uint32_t(std::max<uint64_t>(1, (nblk + sgs * steps - 1) / (sgs * steps)));
    } else if (!force && (w.type != GgmlType::Q4_0 || w.cols != 4096)) {
        return {};
    }
    // Q8_0 holds twice the registers per row (two blocks' loads in flight per row).
    uint32_t rows = warp_unroll ? 2 : w.type == GgmlType::Q4_0 ? 8 : 4;
    rows = env_u32("EMBER_VULKAN_MATVEC_ROWS", rows);
    if (rows != 2 && rows != 4 && rows != 8 && rows != 16) rows = 8;
    // QKV: a workgroup's rows must lie in one matrix.
    auto splits = [&] { return kv_rows == 0 || (w.rows % rows == 0 && kv_rows % rows == 0); };
    while (rows > 2 && !splits()) rows /= 2;
    if (!splits()) return {};
    // x as F16 (2 bytes per column, in steps of 8 blocks to share pipelines), the partial sums
    // and common.glsl's reduction arrays.
    // (Column parts only in the subgroup mode: the workgroup mode stages all of x.)
    if (!warp_unroll) ksplit = 1;
    const uint32_t xs_blocks = uint32_t((w.cols / 32 + ksplit - 1) / ksplit + 7) / 8 * 8;
    const uint64_t shared = uint64_t(xs_blocks) * 64 + rows * 32 * 4 + 2 * 128 * 4;
    if (shared > a.props.limits.maxComputeSharedMemorySize) return {};
    return {rows, xs_blocks, warp_unroll,
            std::min<uint32_t>(env_u32("EMBER_VULKAN_MATVEC_DIAG", 0), 7)};
}

}  // namespace

bool fused_matvec_supports(std::initializer_list<const DeviceTensor*> w) {
    const DeviceTensor* first = *w.begin();
    for (const DeviceTensor* t : w) {
        if (!t || t->pieces.size() != 1 || t->type != first->type || t->cols != first->cols)
            return false;
        switch (t->type) {
            case GgmlType::F32:
            case GgmlType::F16:
            case GgmlType::Q8_0:
            case GgmlType::Q4_0:
                break;
            default:
                return false;
        }
    }
    return true;
}

Status op_matvec_fused(Recorder& rec, const FusedMatvec& f) {
    const DeviceTensor& w0 = *f.w[0];
    const DeviceTensor& w1 = f.w[1] ? *f.w[1] : w0;
    const DeviceTensor& w2 = f.w[2] ? *f.w[2] : w1;
    if (!fused_matvec_supports({&w0, &w1, &w2}))
        return make_error("vulkan.unsupported_type",
                          "fused mat-vec needs single-piece F32, F16, Q8_0 or Q4_0 weights of one "
                          "type");
    if (f.mode == FusedMode::Qkv && (w0.rows % kFusedRows != 0 || w1.rows % kFusedRows != 0))
        return make_error(
            "vulkan.unsupported_shape",
            "fused QKV needs Q and K/V widths that are multiples of " + std::to_string(kFusedRows));
    if (w0.type != GgmlType::F32 && w0.type != GgmlType::F16 && f.x_off % 4 != 0)
        return make_error("vulkan.unsupported_shape",
                          "fused mat-vec reads x in 16-byte pieces; offset " +
                              std::to_string(f.x_off) + " is not a multiple of 4 floats");
    struct {
        uint32_t ncols, stride, mode, rows0, rows1, x_off, y_off, has_norm;
        float eps;
        uint32_t head_dim, n_rot;
        float freq_base;
        uint32_t has_ff, kv_dim, ksplit;
    } pc{uint32_t(w0.cols),
         w0.stride_units,
         uint32_t(f.mode),
         uint32_t(w0.rows),
         uint32_t(w1.rows),
         f.x_off,
         f.y_off,
         f.norm.buffer ? 1u : 0u,
         f.eps,
         f.head_dim,
         f.n_rot,
         f.freq_base,
         f.ff.buffer ? 1u : 0u,
         uint32_t(w1.rows),
         1u};
    auto groups_of = [&](uint32_t rows) -> uint64_t {
        switch (f.mode) {
            case FusedMode::Qkv:
                return (w0.rows + 2 * w1.rows + rows - 1) / rows;
            case FusedMode::Silu:
                return (w0.rows + rows / 2 - 1) / (rows / 2);
            default:
                return (w0.rows + rows - 1) / rows;
        }
    };
    // Unused bindings still need a valid buffer.
    auto or_x = [&](BufferRange r) { return r.buffer ? r : f.x; };
    auto or_y = [&](BufferRange r) { return r.buffer ? r : f.y; };
    auto bindings = {
        w0.pieces[0].range, w1.pieces[0].range, w2.pieces[0].range, f.x,       or_x(f.norm), f.y,
        or_y(f.k_cache),    or_y(f.v_cache),    or_x(f.step),       or_x(f.ff)};
    const Adapter& a = rec.context().adapter();
    // At most 512 threads: common.glsl's reductions hold 128 subgroups of 4 or more.
    const uint32_t h_wg =
        std::clamp<uint32_t>(env_u32("EMBER_VULKAN_MATVEC_WG", 256), 32,
                             std::min({512u, a.props.limits.maxComputeWorkGroupSize[0],
                                       a.props.limits.maxComputeWorkGroupInvocations}));
    const uint32_t sgs = std::max<uint32_t>(a.subgroup_size, 1);
    const uint64_t per_wg = std::max<uint32_t>(h_wg / sgs, 1);
    uint64_t n_wg = env_u32("EMBER_VULKAN_MATVEC_WGS",
                            a.sm_count ? a.sm_count * std::max<uint32_t>(1024 / h_wg, 1) : 256);
    n_wg =
        env_u32(("EMBER_VULKAN_MATVEC_WGS" + std::to_string(int(f.mode))).c_str(), uint32_t(n_wg));
    // Residual adds whose groups of 2 rows would leave subgroups idle (7B's down and output
    // projections: 2,048 groups for 4,224 subgroups) split the columns into parts of at most
    // 96 Q4_0 or 128 Q8_0 blocks (one or two steps a lane, the best measured on the H200), each
    // workgroup staging only its part of x and adding its sums with float atomics
    // (docs/performance.md, item 64).
    if (f.mode == FusedMode::Add && !f.norm.buffer && a.atomic_float_add) {
        const uint64_t nblk = w0.cols / 32, part = sgs * (w0.type == GgmlType::Q4_0 ? 3 : 4);
        uint64_t ks = env_u32("EMBER_VULKAN_MATVEC_KSPLIT", 0);
        if (ks == 0) ks = groups_of(2) < n_wg * per_wg ? (nblk + part - 1) / part : 1;
        pc.ksplit = uint32_t(std::clamp<uint64_t>(ks, 1, std::max<uint64_t>(nblk / (2 * sgs), 1)));
    }
    const FusedH h = fused_h_plan(rec, w0, f.mode == FusedMode::Qkv ? w1.rows : 0, pc.ksplit);
    // Only the subgroup mode splits rows; the other kernels read whole rows and sum them.
    const bool subgroups = h.rows && h.warp_unroll;
    if (!subgroups) pc.ksplit = 1;
    if (subgroups) {
        // Subgroups own their rows: enough workgroups to fill the GPU once, each staging x.
        // With column parts, workgroup w takes part w % ksplit (the shader's split).
        const uint64_t per_part = (groups_of(h.rows) + per_wg - 1) / per_wg;
        n_wg = std::max<uint64_t>(1, std::min(n_wg / pc.ksplit, per_part)) * pc.ksplit;
        return rec.dispatch_linear(
            std::string(pc.ksplit > 1 ? "matvec_fused_h_atomic_" : "matvec_fused_h_") +
                weight_type_suffix(w0.type),
            bindings, &pc, push_size<decltype(pc)>(), h_wg, n_wg, 1,
            {h.xs_blocks, h.rows, h.warp_unroll, h.diag});
    } else if (h.rows) {
        // Threads take whole blocks: as few steps per thread as 128 threads allow.
        const uint64_t nblk = uint64_t(w0.cols) / 32;
        const uint64_t steps = (nblk + 127) / 128;
        const uint32_t wg =
            uint32_t(std::max<uint64_t>(32, ((nblk + steps - 1) / steps + 31) / 32 * 32));
        // Few workgroups, each looping over groups of rows: every workgroup stages x once
        // (EMBER_VULKAN_MATVEC_WGS sets how many, for comparison).
        const uint64_t loop_wgs = std::max<uint64_t>(
            1, env_u32("EMBER_VULKAN_MATVEC_WGS", a.sm_count ? 4 * a.sm_count : 512));
        return rec.dispatch_linear(std::string("matvec_fused_h_") + weight_type_suffix(w0.type),
                                   bindings, &pc, push_size<decltype(pc)>(), wg,
                                   std::min(groups_of(h.rows), loop_wgs), 1,
                                   {h.xs_blocks, h.rows, 0, h.diag});
    }
    // Quantized types: 4 threads per 32-column block, up to 128 (2048 columns took 4 steps per
    // thread with 64 threads; 128 threads and 2 steps decode TinyLlama 2-4% faster on the
    // H200); float types: one thread per block, at most 128.
    const uint64_t chunks = (w0.cols + 31) / 32;
    const bool quantized = w0.type == GgmlType::Q4_0 || w0.type == GgmlType::Q8_0;
    const uint64_t slots = quantized ? 4 * chunks : chunks;
    const uint32_t wg = slots <= 32 ? 32 : slots <= 64 ? 64 : 128;
    return rec.dispatch_linear(std::string("matvec_fused_") + weight_type_suffix(w0.type), bindings,
                               &pc, push_size<decltype(pc)>(), wg, groups_of(kFusedRows));
}

}  // namespace ember::vulkan
