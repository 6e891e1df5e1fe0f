// The decode mat-vecs with fused neighbours (matvec_fused.comp, matvec_fused_h.comp): plans
// and dispatches; split from ops.cpp by op family.
#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/env.h"
#include "vulkan/ops.h"

namespace ember::vulkan {

namespace {

bool is_k_quant(GgmlType t) {
    return t == GgmlType::Q4_K || t == GgmlType::Q5_K || t == GgmlType::Q6_K;
}

}  // namespace

// matvec_fused_h.comp reads these only in its subgroup mode.
bool fused_matvec_f16_only(GgmlType t) {
    return is_k_quant(t) || t == GgmlType::Q4_1 || t == GgmlType::Q5_0 || t == GgmlType::Q5_1;
}
bool fused_matvec_f16_type(GgmlType t) {
    return t == GgmlType::Q4_0 || t == GgmlType::Q8_0 || fused_matvec_f16_only(t);
}

namespace {

constexpr uint32_t kFusedRows = 4;  // SLOTS in matvec_fused.comp

// matvec_fused_h.comp: rows per workgroup (0: not usable here) and shared x capacity in blocks.
struct FusedH {
    uint32_t rows = 0, xs_blocks = 0;
    uint32_t warp_unroll = 0;  // > 0: each subgroup owns its rows (WARP_UNROLL in the shader)
    uint32_t diag = 0;         // EMBER_VULKAN_MATVEC_DIAG, timing only
};

// Shared memory of matvec_fused_h.comp: x as F16 (2 bytes per column, in steps of 8 blocks to
// share pipelines), the blocks' sums of x (types with a min term), the partial sums and
// common.glsl's reduction arrays.
uint32_t fused_h_xs_blocks(int64_t cols, uint32_t ksplit) {
    return uint32_t((cols / 32 + ksplit - 1) / ksplit + 7) / 8 * 8;
}
bool fused_h_fits(const Adapter& a, uint32_t xs_blocks, uint32_t rows) {
    return uint64_t(xs_blocks) * (64 + 4) + rows * 32 * 4 + 2 * 128 * 4 <=
           a.props.limits.maxComputeSharedMemorySize;
}
// Whether matvec_fused_h.comp can run type t here at all (EMBER_VULKAN_MATVEC_H=0 turns it off).
bool fused_h_available(const Adapter& a, GgmlType t, int64_t cols) {
    const char* force = std::getenv("EMBER_VULKAN_MATVEC_H");
    return a.float16 && fused_matvec_f16_type(t) && (!force || std::strcmp(force, "1") == 0) &&
           fused_h_fits(a, fused_h_xs_blocks(cols, 1), 2);
}

// ksplit: column parts per group of rows (each part's blocks set the steps); one_row: groups of
// one row in the subgroup mode (FusedMode::GateUp).
FusedH fused_h_plan(const Recorder& rec, const DeviceTensor& w, int64_t kv_rows,
                    uint32_t ksplit = 1, bool one_row = false) {
    const Adapter& a = rec.context().adapter();
    if (!fused_h_available(a, w.type, w.cols)) return {};
    // EMBER_VULKAN_MATVEC_WARP caps the blocks per lane a step, 0 selecting the per-workgroup
    // mode of item 31 (used there only for Q4_0 rows of 4096 columns unless
    // EMBER_VULKAN_MATVEC_H=1; types other than Q4_0 and Q8_0 keep the subgroup mode).
    const bool force = std::getenv("EMBER_VULKAN_MATVEC_H") != nullptr;
    const bool sub_only = fused_matvec_f16_only(w.type);
    // Subgroups owning their rows (docs/performance.md, item 35): each lane loads at most 3
    // Q4_0, Q4_1 or Q4_K, or 2 blocks of the others, of each of 2 rows a step (96-128 bytes in
    // flight; the best of 1-6 measured on the H200 for Q4_0 and Q8_0), and the steps of a row
    // are balanced (a 176-block row takes 2 steps of 3 blocks a lane, not 3 steps of 2).
    const uint32_t unroll_default =
        w.type == GgmlType::Q4_0 || w.type == GgmlType::Q4_1 || w.type == GgmlType::Q4_K ? 3 : 2;
    uint32_t max_unroll =
        std::min<uint32_t>(env_u32("EMBER_VULKAN_MATVEC_WARP", unroll_default), 8);
    if (sub_only && !max_unroll) max_unroll = unroll_default;
    // One row a group: as many bytes in flight a lane as two rows at the default.
    if (one_row && max_unroll) max_unroll = std::min<uint32_t>(2 * max_unroll, 8);
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
    // In the subgroup mode lane r writes row r of a group.
    while (warp_unroll && rows > 2 && rows > a.subgroup_size) rows /= 2;
    if (one_row) {
        if (!warp_unroll) return {};
        rows = 1;
    }
    // QKV: a workgroup's rows must lie in one matrix.
    auto splits = [&] { return kv_rows == 0 || (w.rows % rows == 0 && kv_rows % rows == 0); };
    while (rows > 2 && !splits()) rows /= 2;
    if (!splits()) return {};
    // (Column parts only in the subgroup mode: the workgroup mode stages all of x.)
    if (!warp_unroll) ksplit = 1;
    const uint32_t xs_blocks = fused_h_xs_blocks(w.cols, ksplit);
    if (!fused_h_fits(a, xs_blocks, rows)) return {};
    return {rows, xs_blocks, warp_unroll,
            std::min<uint32_t>(env_u32("EMBER_VULKAN_MATVEC_DIAG", 0), 15)};
}

// XREG_ALLOWED in matvec_fused_h.comp: whether stage_x may hold a thread's part of x in
// registers (the shader does where that part is small); EMBER_VULKAN_MATVEC_XREG=0 keeps the
// loop.
uint32_t xreg_allowed() {
    static const bool allowed = !env_is("EMBER_VULKAN_MATVEC_XREG", "0");
    return allowed ? 1 : 0;
}

// MODE_CONST in both kernels: the mode as a specialization constant, a pipeline per mode
// (EMBER_VULKAN_MATVEC_MODES=0: one pipeline reading the mode from the push constants).
uint32_t mode_const(FusedMode m) {
    static const bool per_mode = !env_is("EMBER_VULKAN_MATVEC_MODES", "0");
    return per_mode ? uint32_t(m) : 8u;
}

// The staged-x kernel's shape constants (NCOLS_C ... KV_DIM_C, X_OFF_C ... HAS_FF_C), 0 where
// EMBER_VULKAN_MATVEC_SHAPES=0 leaves them to the push constants.
uint32_t shape_const(uint32_t v) {
    static const bool on = !env_is("EMBER_VULKAN_MATVEC_SHAPES", "0");
    return on ? v : 0u;
}

}  // namespace

bool fused_matvec_supports(const Adapter& a, std::initializer_list<const DeviceTensor*> w) {
    const DeviceTensor* first = *w.begin();
    bool one_type = true, all_h = true;
    for (const DeviceTensor* t : w) {
        if (!t || t->pieces.size() != 1 || t->cols != first->cols) return false;
        one_type = one_type && t->type == first->type;
        all_h = all_h && fused_h_available(a, t->type, t->cols);
    }
    // matvec_fused.comp reads these, matvec_fused_h.comp its types (a dispatch per type).
    const GgmlType t = first->type;
    return all_h || (one_type && (t == GgmlType::F32 || t == GgmlType::F16 || t == GgmlType::Q8_0 ||
                                  t == GgmlType::Q4_0));
}

namespace {

// One dispatch of op_matvec_fused: rows [row_first, row_end) of its matrices (row_end 0: all),
// all of w0's type; w0-w2 are the bindings.
Status record_fused(Recorder& rec, const FusedMatvec& f, const DeviceTensor& w0,
                    const DeviceTensor& w1, const DeviceTensor& w2, uint32_t row_first,
                    uint32_t row_end) {
    // The rows of the matrices (a dispatch of some of them binds others in their places).
    const int64_t rows0 = f.w[0]->rows, rows1 = f.w[1] ? f.w[1]->rows : rows0;
    struct {
        uint32_t ncols, stride, mode, rows0, rows1, x_off, y_off, has_norm;
        float eps;
        uint32_t head_dim, n_rot;
        float freq_base;
        uint32_t has_ff, kv_dim, ksplit, row_first, row_end, tl_slot;
    } pc{uint32_t(w0.cols),
         fused_row_stride(w0),
         uint32_t(f.mode),
         uint32_t(rows0),
         uint32_t(rows1),
         f.x_off,
         f.y_off,
         f.norm.buffer ? 1u : 0u,
         f.eps,
         f.head_dim,
         f.n_rot,
         f.freq_base,
         f.ff.buffer ? 1u : 0u,
         uint32_t(rows1),
         1u,
         row_first,
         row_end,
         f.timeline_slot};
    auto groups_of = [&](uint32_t rows) -> uint64_t {
        if (row_end) return (row_end - row_first + rows - 1) / rows;
        switch (f.mode) {
            case FusedMode::Qkv:
                return (rows0 + 2 * rows1 + rows - 1) / rows;
            case FusedMode::GateUp:
                return (2 * rows0 + rows - 1) / rows;
            case FusedMode::Silu:
                return (rows0 + rows / 2 - 1) / (rows / 2);
            default:
                return (rows0 + rows - 1) / rows;
        }
    };
    // Unused bindings still need a valid buffer.
    auto or_x = [&](BufferRange r) { return r.buffer ? r : f.x; };
    auto or_y = [&](BufferRange r) { return r.buffer ? r : f.y; };
    // Binding 10 is read only by the timeline variant (f.timeline), 11 written only where x is
    // looked up in the embedding table (f.embed, then at binding 3); the others ignore them.
    // (The validation layer counts 11 as written by every variant: bound to x, the dispatches
    // of one QKV, which no barrier separates, would read what another "writes".)
    auto bindings = {w0.pieces[0].range, w1.pieces[0].range,
                     w2.pieces[0].range, f.embed ? f.embed->pieces[0].range : f.x,
                     or_x(f.norm),       f.y,
                     or_y(f.k_cache),    or_y(f.v_cache),
                     or_x(f.step),       or_x(f.ff),
                     or_y(f.timeline),   f.embed ? f.x : f.y};
    const Adapter& a = rec.context().adapter();
    // common.glsl's reductions hold 128 subgroups: 512 threads, or 1,024 in subgroups of 8.
    const uint32_t sgs = std::max<uint32_t>(a.subgroup_size, 1);
    // Q4_0 and Q8_0 gate/up of 4,096 columns or more on NVIDIA: 3 workgroups of 14 subgroups an
    // SM. The kernel's 48 registers leave room for 42 subgroups (1,344 threads) an SM, and 7B's
    // 22,016 rows take 4 full rounds over 5,544 subgroups, where 40 an SM took a fifth round, a
    // sixth full (7B Q4_0 +0.6-0.8%, Q8_0 +0.3-0.5% on the H200; TinyLlama's 2,048 columns not:
    // docs/performance.md, item 109).
    const bool gu_wide = f.mode == FusedMode::GateUp && w0.cols >= 4096 && a.sm_count &&
                         sgs == 32 && (w0.type == GgmlType::Q4_0 || w0.type == GgmlType::Q8_0);
    const std::string mode_s = std::to_string(int(f.mode));
    const uint32_t h_wg = std::clamp<uint32_t>(
        env_u32(("EMBER_VULKAN_MATVEC_WG" + mode_s).c_str(),
                env_u32("EMBER_VULKAN_MATVEC_WG", gu_wide ? 448 : 256)),
        32,
        std::min({sgs >= 8 ? 1024u : 512u, a.props.limits.maxComputeWorkGroupSize[0],
                  a.props.limits.maxComputeWorkGroupInvocations}));
    const uint64_t per_wg = std::max<uint32_t>(h_wg / sgs, 1);
    // 1,024 threads an SM; Q4_0 rows of 4,096 columns or more 1,280 (5 workgroups of 256:
    // 7B Q4_0 decoded 0.6-2% faster on the H200, Q8_0 slower, TinyLlama's Q4_0 the same,
    // docs/performance.md item 82). EMBER_VULKAN_MATVEC_Q4_SM sets the Q4_0 count, in quarters.
    const bool q4_wide = w0.type == GgmlType::Q4_0 && w0.cols >= 4096;
    const uint32_t per_sm = gu_wide
                                ? std::max<uint32_t>(1344 / h_wg, 1)
                                : std::max<uint32_t>(1024 / h_wg, 1) *
                                      (q4_wide ? env_u32("EMBER_VULKAN_MATVEC_Q4_SM", 5) : 4) / 4;
    uint64_t n_wg = env_u32("EMBER_VULKAN_MATVEC_WGS", a.sm_count ? a.sm_count * per_sm : 256);
    n_wg = env_u32(("EMBER_VULKAN_MATVEC_WGS" + mode_s).c_str(), uint32_t(n_wg));
    // Residual adds whose groups of 2 rows would leave subgroups idle (7B's down and output
    // projections: 2,048 groups for 4,224 subgroups) split the columns into parts of at most
    // 96 Q4_0 or 128 Q8_0 blocks (one or two steps a lane, the best measured on the H200), each
    // workgroup staging only its part of x and adding its sums with float atomics
    // (docs/performance.md, item 64).
    if (f.mode == FusedMode::Add && !f.norm.buffer && a.atomic_float_add) {
        const bool q4 = w0.type == GgmlType::Q4_0 || w0.type == GgmlType::Q4_K;
        const uint64_t nblk = w0.cols / 32, part = sgs * (q4 ? 3 : 4);
        uint64_t ks = env_u32("EMBER_VULKAN_MATVEC_KSPLIT", 0);
        if (ks == 0) ks = groups_of(2) < n_wg * per_wg ? (nblk + part - 1) / part : 1;
        pc.ksplit = uint32_t(std::clamp<uint64_t>(ks, 1, std::max<uint64_t>(nblk / (2 * sgs), 1)));
    }
    const FusedH h = fused_h_plan(rec, w0, f.mode == FusedMode::Qkv ? rows1 : 0, pc.ksplit,
                                  f.mode == FusedMode::GateUp);
    // Only the subgroup mode splits rows; the other kernels read whole rows and sum them.
    const bool subgroups = h.rows && h.warp_unroll;
    if (!subgroups) pc.ksplit = 1;
    if (!subgroups && (f.mode == FusedMode::GateUp || f.silu_in))
        return make_error("vulkan.unsupported_type",
                          "fused mat-vec: gate and up apart (and SiLU on the input) need the "
                          "subgroup kernel (F16 arithmetic), which does not take these " +
                              std::string(type_name(w0.type)) + " rows here");
    if (f.embed && (!subgroups || !fused_embed_supported(rec, *f.embed, w0, w1, w2)))
        return make_error("vulkan.unsupported_type",
                          "fused mat-vec: the embedding lookup folds only into a QKV of its own "
                          "type (Q4_0 or Q8_0) and width in the subgroup kernel");
    if (!subgroups && (fused_matvec_f16_only(w0.type) || row_end))
        return make_error("vulkan.unsupported_type", std::string("fused mat-vec: no kernel for ") +
                                                         std::string(type_name(w0.type)) +
                                                         " rows here");
    if (subgroups) {
        // Subgroups own their rows: enough workgroups to fill the GPU once, each staging x.
        // With column parts, workgroup w takes part w % ksplit (the shader's split).
        // A dispatch of some of the rows (matrices of another type take the rest) gets its
        // share of the workgroups.
        if (row_end) {
            const uint64_t all = uint64_t(f.mode == FusedMode::Qkv ? rows0 + 2 * rows1 : rows0);
            n_wg = std::max<uint64_t>(1, (n_wg * (row_end - row_first) + all - 1) / all);
        }
        const uint64_t groups = groups_of(h.rows), per_part = (groups + per_wg - 1) / per_wg;
        n_wg = std::max<uint64_t>(1, std::min(n_wg / pc.ksplit, per_part)) * pc.ksplit;
        // The rounds of groups evened out: as many rounds, but no last round of a few groups
        // that the whole dispatch waits for (7B Q4_0's QKV: 6,144 groups over 5,280 subgroups
        // took two rounds, the second 16% full; 384 workgroups take two full ones). Not for
        // gate/up, whose fewer workgroups then ran slower on the H200 (docs/performance.md,
        // item 106). EMBER_VULKAN_MATVEC_BALANCE holds a bit per FusedMode, 7 (the default)
        // for Store, Add and Qkv; 0 keeps the GPU filled once.
        static const uint32_t balance = env_u32("EMBER_VULKAN_MATVEC_BALANCE", 7);
        if (balance >> uint32_t(f.mode) & 1u) {
            const uint64_t sg = n_wg / pc.ksplit * per_wg, rounds = (groups + sg - 1) / sg;
            n_wg = (groups + rounds * per_wg - 1) / (rounds * per_wg) * pc.ksplit;
        }
        // (EMBER_VULKAN_TIMELINE: the Q4_0 variant with timestamps.)
        const bool timed = f.timeline.buffer && w0.type == GgmlType::Q4_0;
        return rec.dispatch_linear(
            std::string(pc.ksplit > 1 ? "matvec_fused_h_atomic_" : "matvec_fused_h_") +
                (timed ? std::string("timeline_q4_0") : weight_type_suffix(w0.type)),
            bindings, &pc, push_size<decltype(pc)>(), h_wg, n_wg, 1,
            {h.xs_blocks, h.rows, h.warp_unroll, h.diag, xreg_allowed(), mode_const(f.mode),
             shape_const(pc.ncols), shape_const(pc.stride), shape_const(pc.ksplit),
             shape_const(pc.rows0), shape_const(pc.rows1),
             // (the workgroups only where dispatch_linear's grid holds exactly n_wg)
             n_wg <= 65535 ? shape_const(uint32_t(n_wg)) : 0u, shape_const(pc.has_norm + 1),
             shape_const(pc.head_dim), shape_const(pc.kv_dim), f.silu_in ? 1u : 0u,
             shape_const(pc.x_off + 1), shape_const(pc.y_off + 1), shape_const(row_first + 1),
             shape_const(row_end + 1), shape_const(std::bit_cast<uint32_t>(pc.eps)),
             shape_const(pc.n_rot), shape_const(std::bit_cast<uint32_t>(pc.freq_base)),
             shape_const(pc.has_ff + 1), f.embed ? 1u : 0u});
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
        return rec.dispatch_linear(
            std::string("matvec_fused_h_") + weight_type_suffix(w0.type), bindings, &pc,
            push_size<decltype(pc)>(), wg, std::min(groups_of(h.rows), loop_wgs), 1,
            {h.xs_blocks, h.rows, 0, h.diag, xreg_allowed(), mode_const(f.mode)});
    }
    // Quantized types: 4 threads per 32-column block, up to 128 (2048 columns took 4 steps per
    // thread with 64 threads; 128 threads and 2 steps decode TinyLlama 2-4% faster on the
    // H200); float types: one thread per block, at most 128.
    const uint64_t chunks = (w0.cols + 31) / 32;
    const bool quantized = w0.type == GgmlType::Q4_0 || w0.type == GgmlType::Q8_0;
    const uint64_t slots = quantized ? 4 * chunks : chunks;
    const uint32_t wg = slots <= 32 ? 32 : slots <= 64 ? 64 : 128;
    return rec.dispatch_linear(std::string("matvec_fused_") + weight_type_suffix(w0.type), bindings,
                               &pc, push_size<decltype(pc)>(), wg, groups_of(kFusedRows), 1,
                               {mode_const(f.mode)});
}

}  // namespace

bool fused_gate_up_apart(const Recorder& rec, const DeviceTensor& gate, const DeviceTensor& up,
                         const DeviceTensor& down) {
    static const bool on = !env_is("EMBER_VULKAN_GU_APART", "0");
    if (!on || gate.type != up.type) return false;
    // (Down's plan as record_fused makes it for a residual add without a norm: column parts
    // only change how much of x a workgroup stages.)
    const FusedH g = fused_h_plan(rec, gate, 0, 1, true), d = fused_h_plan(rec, down, 0);
    return g.rows && g.warp_unroll && d.rows && d.warp_unroll;
}

bool fused_embed_supported(const Recorder& rec, const DeviceTensor& table, const DeviceTensor& wq,
                           const DeviceTensor& wk, const DeviceTensor& wv) {
    static const bool on = !env_is("EMBER_VULKAN_EMBED_FOLD", "0");
    const GgmlType t = table.type;
    if (!on || (t != GgmlType::Q4_0 && t != GgmlType::Q8_0) || table.pieces.size() != 1 ||
        wq.type != t || wk.type != t || wv.type != t || table.cols != wq.cols ||
        fused_row_stride(table) != fused_row_stride(wq) ||
        !fused_matvec_supports(rec.context().adapter(), {&wq, &wk, &wv}))
        return false;
    const FusedH h = fused_h_plan(rec, wq, wk.rows);
    return h.rows && h.warp_unroll;
}

uint32_t fused_row_stride(const DeviceTensor& w) {
    return w.stride_units * (is_k_quant(w.type) ? 8u : 1u);
}

Status op_matvec_fused(Recorder& rec, const FusedMatvec& f) {
    const DeviceTensor& w0 = *f.w[0];
    const DeviceTensor& w1 = f.w[1] ? *f.w[1] : w0;
    const DeviceTensor& w2 = f.w[2] ? *f.w[2] : w1;
    const Adapter& a = rec.context().adapter();
    if (!fused_matvec_supports(a, {&w0, &w1, &w2}))
        return make_error("vulkan.unsupported_type",
                          "fused mat-vec needs single-piece weights of one width, all of types "
                          "this device's fused kernels read (F32, F16, Q8_0, Q4_0 of one type; "
                          "with F16 arithmetic, Q4_1, Q5_0, Q5_1 and the K-quants too)");
    if (f.mode == FusedMode::Qkv && (w0.rows % kFusedRows != 0 || w1.rows % kFusedRows != 0))
        return make_error(
            "vulkan.unsupported_shape",
            "fused QKV needs Q and K/V widths that are multiples of " + std::to_string(kFusedRows));
    if (w0.type != GgmlType::F32 && w0.type != GgmlType::F16 && f.x_off % 4 != 0)
        return make_error("vulkan.unsupported_shape",
                          "fused mat-vec reads x in 16-byte pieces; offset " +
                              std::to_string(f.x_off) + " is not a multiple of 4 floats");
    if (w0.type == w1.type && w1.type == w2.type) return record_fused(rec, f, w0, w1, w2, 0, 0);
    if (f.mode != FusedMode::Qkv)
        return make_error("vulkan.unsupported_type",
                          "fused mat-vec: gate and up of different types");
    // Q, K and V of different types (Q4_K_M files give some layers a Q6_K V): a dispatch per
    // run of one type, each over its rows of [Wq; Wk; Wv]. They write different rows, so no
    // barrier comes between them.
    const DeviceTensor* ws[3] = {&w0, &w1, &w2};
    const uint32_t ends[3] = {uint32_t(w0.rows), uint32_t(w0.rows + w1.rows),
                              uint32_t(w0.rows + 2 * w1.rows)};
    for (int i = 0; i < 3;) {
        int j = i;
        while (j + 1 < 3 && ws[j + 1]->type == ws[i]->type) ++j;
        auto pick = [&](int k) -> const DeviceTensor& {
            return k >= i && k <= j ? *ws[k] : *ws[i];
        };
        EMBER_TRY(record_fused(rec, f, pick(0), pick(1), pick(2), i ? ends[i - 1] : 0, ends[j]));
        i = j + 1;
    }
    return {};
}

}  // namespace ember::vulkan
