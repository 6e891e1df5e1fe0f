// The decode mat-vecs with fused neighbours (matvec_fused.comp, matvec_fused_h.comp): plans
// and dispatches; split from ops.cpp by op family.
#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <string>

#include "vulkan/ops.h"
#include "vulkan/ops_family.h"

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
// Whether matvec_fused_h.comp can run type t here at all (not with FusedKernel::Plain), with x
// in `parts` column parts.
bool fused_h_available(const Adapter& a, const Plan& plan, GgmlType t, int64_t cols,
                       uint32_t parts = 1) {
    return a.float16 && fused_matvec_f16_type(t) && plan.fused_kernel != FusedKernel::Plain &&
           fused_h_fits(a, fused_h_xs_blocks(cols, parts), 2);
}
// The fewest column parts of a residual add (no norm) whose share of x fits shared memory: 1
// where all of x does; more for rows wider than about 22,500 columns on NVIDIA's 48 KB (the
// downs of Qwen2.5-32B, Gemma-2-27B), each part at least 2 blocks a lane as add_column_parts
// keeps them; 0 where no split fits or the device cannot add the parts' sums (float atomics).
uint32_t fused_h_add_parts(const Adapter& a, int64_t cols) {
    if (fused_h_fits(a, fused_h_xs_blocks(cols, 1), 2)) return 1;
    if (!a.atomic_float_add) return 0;
    const uint64_t sgs = std::max<uint32_t>(a.subgroup_size, 1);
    const uint64_t most = std::max<uint64_t>(uint64_t(cols / 32) / (2 * sgs), 1);
    for (uint64_t k = 2; k <= most; ++k)
        if (fused_h_fits(a, fused_h_xs_blocks(cols, uint32_t(k)), 2)) return uint32_t(k);
    return 0;
}

// ksplit: column parts per group of rows (each part's blocks set the steps); one_row: groups of
// one row in the subgroup mode (FusedMode::GateUp).
FusedH fused_h_plan(const Recorder& rec, const DeviceTensor& w, int64_t kv_rows,
                    uint32_t ksplit = 1, bool one_row = false) {
    const Adapter& a = rec.adapter();
    const Plan& plan = rec.plan();
    if (!fused_h_available(a, plan, w.type, w.cols, std::max<uint32_t>(ksplit, 1))) return {};
    // Plan::matvec_max_unroll caps the blocks per lane a step, 0 selecting the per-workgroup
    // mode (used only for Q4_0 rows of 4096 columns unless FusedKernel::Staged; types other
    // than Q4_0 and Q8_0 keep the subgroup mode).
    const bool force = plan.fused_kernel == FusedKernel::Staged;
    const bool sub_only = fused_matvec_f16_only(w.type);
    // Subgroups owning their rows: each lane loads at most 3 Q4_0, Q4_1 or Q4_K, or 2 blocks
    // of the others, of each of 2 rows a step (96-128 bytes in flight; the best of 1-6
    // measured on the H200 for Q4_0 and Q8_0), and the steps of a row are balanced (a
    // 176-block row takes 2 steps of 3 blocks a lane, not 3 steps of 2).
    const uint32_t unroll_default =
        w.type == GgmlType::Q4_0 || w.type == GgmlType::Q4_1 || w.type == GgmlType::Q4_K ? 3 : 2;
    // Q4_K and Q6_K rows in groups of 2: one block a lane a step, where their kernels held 63
    // and 48 registers at the default (Llama-2-7B Q4_K_M decoded 4% faster on the H200: QKV
    // 17.9 -> 15.9 us, down 20.0 -> 18.6). Groups of one row (gate/up) keep the default: one
    // step of 4 blocks took 22.6-23.3 us there, 2 steps of 2 24.1.
    const bool k_one = !one_row && (w.type == GgmlType::Q4_K || w.type == GgmlType::Q6_K);
    uint32_t max_unroll =
        std::min<uint32_t>(plan.matvec_max_unroll != Plan::kAuto ? plan.matvec_max_unroll
                           : k_one                               ? 1
                                                                 : unroll_default,
                           8);
    if (sub_only && !max_unroll) max_unroll = unroll_default;
    // One row a group: as many bytes in flight a lane as two rows at the default.
    if (one_row && max_unroll) max_unroll = std::min<uint32_t>(2 * max_unroll, 8);
    uint32_t warp_unroll = 0;
    if (max_unroll) {
        const uint64_t nblk = (uint64_t(w.cols) / 32 + ksplit - 1) / ksplit;
        const uint64_t sgs = std::max<uint32_t>(a.subgroup_size, 1);
        // A row of the 2-block types that one more block a lane reads in one step takes it
        // in one (Phi-3's Q6_K head, 96 blocks: 35.0 us a call on the H200, not 39.8): a
        // step is a memory round trip, and rows this short have few.
        if (plan.matvec_max_unroll == Plan::kAuto && unroll_default == 2 && !one_row &&
            nblk > 2 * sgs && nblk <= 3 * sgs)
            max_unroll = 3;
        const uint64_t steps =
            std::max<uint64_t>(1, (nblk + sgs * max_unroll - 1) / (sgs * max_unroll));
        warp_unroll = uint32_t(std::max<uint64_t>(1, (nblk + sgs * steps - 1) / (sgs * steps)));
    } else if (!force && (w.type != GgmlType::Q4_0 || w.cols != 4096)) {
        return {};
    }
    // Q8_0 holds twice the registers per row (two blocks' loads in flight per row).
    uint32_t rows = warp_unroll ? 2 : w.type == GgmlType::Q4_0 ? 8 : 4;
    if (plan.matvec_rows) rows = plan.matvec_rows;
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
    return {rows, xs_blocks, warp_unroll};
}

}  // namespace

bool fused_matvec_supports(const Adapter& a, const Plan& plan,
                           std::initializer_list<const DeviceTensor*> w) {
    const DeviceTensor* first = *w.begin();
    bool one_type = true, all_h = true;
    for (const DeviceTensor* t : w) {
        if (!t || t->pieces.size() != 1 || t->cols != first->cols) return false;
        one_type = one_type && t->type == first->type;
        all_h = all_h && fused_h_available(a, plan, t->type, t->cols);
    }
    // matvec_fused.comp reads these, matvec_fused_h.comp its types (a dispatch per type).
    const GgmlType t = first->type;
    return all_h || (one_type && (t == GgmlType::F32 || t == GgmlType::F16 || t == GgmlType::Q8_0 ||
                                  t == GgmlType::Q4_0));
}

namespace {

// matvec_fused*.comp's push constants.
struct FusedPush {
    uint32_t ncols, stride, mode, rows0, rows1, x_off, y_off, has_norm;
    float eps;
    uint32_t head_dim, n_rot;
    float freq_base;
    uint32_t has_ff, kv_dim, ksplit, row_first, row_end, tl_slot;
};

// matvec_fused_h.comp's specialization constants, in constant_id order (1-26). The shape
// constants repeat push constants so that the compiler sees them (those marked _1 hold the
// value + 1: 0 leaves the value to the push constants).
struct FusedHSpec {
    uint32_t xs_blocks, rows, warp_unroll, diag, xreg_allowed, mode;
    uint32_t ncols, stride, ksplit, rows0, rows1;
    uint32_t n_wg;  // the workgroups, where dispatch_linear's grid holds exactly that many
    uint32_t has_norm_1, head_dim, kv_dim, silu_in, x_off_1, y_off_1, row_first_1, row_end_1;
    uint32_t eps_bits, n_rot, freq_base_bits, has_ff_1, embed;
    uint32_t resid_out;  // the resid variant only
    uint32_t heads;      // the heads variants: finished by a count (0), in pairs (1), deferred (2)
};

// matvec_fused.comp's one constant: the mode, a pipeline per mode.
struct FusedSpec {
    uint32_t mode;
};

// One dispatch of op_matvec_fused: rows [row_first, row_end) of its matrices (row_end 0: all),
// all of w0's type; w0-w2 are the bindings.
struct FusedDispatch {
    const FusedMatvec& f;
    const DeviceTensor &w0, &w1, &w2;
    uint32_t row_first, row_end;
    int64_t rows0, rows1;  // the rows of the matrices (a dispatch of some binds others too)
    FusedPush pc;

    // Groups of `rows` rows that the dispatch covers.
    uint64_t groups_of(uint32_t rows) const {
        if (row_end) return (row_end - row_first + rows - 1) / rows;
        switch (f.mode) {
            case FusedMode::Qkv:
            case FusedMode::Heads:
                return (rows0 + 2 * rows1 + rows - 1) / rows;
            case FusedMode::GateUp:
                return (2 * rows0 + rows - 1) / rows;
            case FusedMode::Silu:
                return (rows0 + rows / 2 - 1) / (rows / 2);
            default:
                return (rows0 + rows - 1) / rows;
        }
    }
};

FusedDispatch fused_dispatch(const FusedMatvec& f, const DeviceTensor& w0, const DeviceTensor& w1,
                             const DeviceTensor& w2, uint32_t row_first, uint32_t row_end) {
    const int64_t rows0 = f.w[0]->rows, rows1 = f.w[1] ? f.w[1]->rows : rows0;
    const FusedPush pc{uint32_t(w0.cols),
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
                       0u};
    return {f, w0, w1, w2, row_first, row_end, rows0, rows1, pc};
}

// The Heads variants' push constants: matvec_fused_h.comp's PC with its HEADS fields.
struct FusedHeadsPush {
    FusedPush base;
    float freq_scale, mscale, ext_factor, corr_low, corr_high;
    uint32_t flags, kv_ring, k_off;
};

Status dispatch_fused(Recorder& rec, const FusedDispatch& d, const std::string& shader,
                      uint32_t threads, uint64_t n_wg, const SpecConstants& spec) {
    const FusedMatvec& f = d.f;
    // Unused bindings still need a valid buffer.
    auto or_x = [&](BufferRange r) { return r.buffer ? r : f.x; };
    auto or_y = [&](BufferRange r) { return r.buffer ? r : f.y; };
    if (f.mode == FusedMode::Heads) {  // 12-14 as the fold's (x where unused), 15-21 the heads'
        const QkvRope& r = *f.heads;
        const RopeRamp ramp = qkv_rope_ramp(r);
        const FusedHeadsPush pc{
            d.pc,
            r.freq_scale,
            ramp.mscale,
            r.ext_factor,
            ramp.low,
            ramp.high,
            (r.bq.buffer ? 1u : 0u) | (r.q_norm.buffer ? 2u : 0u) | (r.neox ? 8u : 0u),
            r.kv_ring,
            r.k.off};
        return rec.dispatch_linear(shader,
                                   {d.w0.pieces[0].range,
                                    d.w1.pieces[0].range,
                                    d.w2.pieces[0].range,
                                    f.x,
                                    or_x(f.norm),
                                    f.y,
                                    f.k_cache,
                                    f.v_cache,
                                    f.step,
                                    or_x(f.ff),
                                    f.y,
                                    f.fold ? f.x_out : f.y,
                                    or_x(f.resid),
                                    or_x(f.resid_norm),
                                    or_y(f.zero),
                                    or_x(r.bq),
                                    or_x(r.bk),
                                    or_x(r.bv),
                                    or_x(r.q_norm),
                                    or_x(r.k_norm),
                                    f.defer_qk_norm ? f.qk_ss : f.head_count,
                                    r.k.buf},
                                   &pc, push_size<FusedHeadsPush>(), threads, n_wg, 1, spec);
    }
    // Binding 10 is read by no variant built; 11 is written only where x is looked up in the
    // embedding table (f.embed, then at binding 3); the others ignore it. (The validation
    // layer counts 11 as written by every variant: bound to x, the dispatches of one QKV,
    // which no barrier separates, would read what another "writes".)
    if (f.fold)  // 12-14: the residual's post-norm input and weight, the row to zero
        return rec.dispatch_linear(
            shader,
            {d.w0.pieces[0].range, d.w1.pieces[0].range, d.w2.pieces[0].range, f.x, or_x(f.norm),
             f.y, or_y(f.k_cache), or_y(f.v_cache), or_x(f.step), or_x(f.ff), f.y, f.x_out, f.resid,
             f.resid_norm, f.zero},
            &d.pc, push_size<FusedPush>(), threads, n_wg, 1, spec);
    return rec.dispatch_linear(
        shader,
        {d.w0.pieces[0].range, d.w1.pieces[0].range, d.w2.pieces[0].range,
         f.embed ? f.embed->pieces[0].range : f.x, or_x(f.norm), f.y, or_y(f.k_cache),
         or_y(f.v_cache), or_x(f.step), or_x(f.ff), f.y, f.embed ? f.x : f.y},
        &d.pc, push_size<FusedPush>(), threads, n_wg, 1, spec);
}

// The subgroup mode's threads a workgroup, subgroups a workgroup, and workgroups before the
// rows are counted (enough to fill the GPU once).
struct SubgroupGrid {
    uint32_t threads;
    uint64_t per_wg, n_wg;
};

SubgroupGrid subgroup_grid(const Recorder& rec, const FusedDispatch& d) {
    const Adapter& a = rec.adapter();
    const Plan& plan = rec.plan();
    const DeviceTensor& w0 = d.w0;
    // common.glsl's reductions hold 128 subgroups: 512 threads, or 1,024 in subgroups of 8.
    const uint32_t sgs = std::max<uint32_t>(a.subgroup_size, 1);
    // Q4_0 and Q8_0 gate/up of 4,096 columns or more on NVIDIA: 3 workgroups of 14 subgroups an
    // SM. The kernel's 48 registers leave room for 42 subgroups (1,344 threads) an SM, and 7B's
    // 22,016 rows take 4 full rounds over 5,544 subgroups, where 40 an SM took a fifth round, a
    // sixth full (7B Q4_0 +0.6-0.8%, Q8_0 +0.3-0.5% on the H200; TinyLlama's 2,048 columns not).
    const bool gu_wide = d.f.mode == FusedMode::GateUp && w0.cols >= 4096 && plan.gate_up_wide &&
                         (w0.type == GgmlType::Q4_0 || w0.type == GgmlType::Q8_0);
    // Workgroups whose staging does more than load x (a folded post-norm's pass over r, GELU's
    // tanh on down's input: Gemma) take 512 threads, 2 an SM, where the SM count sets the grid:
    // x is staged half as often (Gemma 3 4B decoded 7-8% faster on the H200; at 512 the 7B SiLU
    // shapes lost 3-4%, so they keep 256).
    const bool heavy_staging = plan.sm_count && (d.f.fold || (d.f.silu_in && d.f.gelu));
    const uint32_t threads = std::clamp<uint32_t>(
        plan.matvec_threads ? plan.matvec_threads
        : gu_wide           ? 448
        : heavy_staging     ? 512
                            : 256,
        32,
        std::min({sgs >= 8 ? 1024u : 512u, a.props.limits.maxComputeWorkGroupSize[0],
                  a.props.limits.maxComputeWorkGroupInvocations}));
    const uint64_t per_wg = std::max<uint32_t>(threads / sgs, 1);
    // 1,024 threads an SM; Q4_0 rows of 4,096 columns or more 1,280 (5 workgroups of 256:
    // 7B Q4_0 decoded 0.6-2% faster on the H200, Q8_0 slower, TinyLlama's Q4_0 the same).
    const bool q4_wide = w0.type == GgmlType::Q4_0 && w0.cols >= 4096;
    const uint32_t per_sm = gu_wide ? std::max<uint32_t>(1344 / threads, 1)
                                    : std::max<uint32_t>(1024 / threads, 1) *
                                          (q4_wide ? plan.matvec_q4_sm_quarters : 4) / 4;
    const uint64_t n_wg = plan.matvec_grid ? plan.matvec_grid
                          : plan.sm_count  ? uint64_t(plan.sm_count) * per_sm
                                           : plan.matvec_workgroups;
    return {threads, per_wg, n_wg};
}

// Column parts of a residual add whose groups of 2 rows would leave subgroups idle (7B's down
// and output projections: 2,048 groups for 4,224 subgroups): parts of at most 96 Q4_0 or 128
// Q8_0 blocks (one or two steps a lane, the best measured on the H200), each workgroup staging
// only its part of x and adding its sums with float atomics; and at least enough parts for
// 1.5 rounds of the subgroups (short rows of many columns: Gemma 3 4B's down, 1,280 groups of
// 320 blocks, took 5 parts, not 4 or 3, decoding 4% faster; 7B's shapes keep their parts).
uint32_t add_column_parts(const Recorder& rec, const FusedDispatch& d, const SubgroupGrid& g) {
    const Adapter& a = rec.adapter();
    if (d.f.mode != FusedMode::Add || d.f.norm.buffer || d.f.fold || !a.atomic_float_add) return 1;
    const uint32_t sgs = std::max<uint32_t>(a.subgroup_size, 1);
    const bool q4 = d.w0.type == GgmlType::Q4_0 || d.w0.type == GgmlType::Q4_K;
    const uint64_t nblk = d.w0.cols / 32, part = sgs * (q4 ? 3 : 4);
    const uint64_t groups = d.groups_of(2), subgroups = g.n_wg * g.per_wg;
    uint64_t ks = rec.plan().matvec_ksplit;
    if (ks == 0 && groups < subgroups)
        ks = std::max((nblk + part - 1) / part, (3 * subgroups + 2 * groups - 1) / (2 * groups));
    if (ks == 0) ks = 1;
    // At least as many parts as x's width needs (fused_h_add_parts: within the clamp below).
    ks = std::max<uint64_t>(ks, fused_h_add_parts(a, d.w0.cols));
    ks = std::clamp<uint64_t>(ks, 1, std::max<uint64_t>(nblk / (2 * sgs), 1));
    // No part left empty by the shader's split into parts of ceil(nblk / ks) blocks (504 blocks
    // in 31 parts of 17 leave the 31st none, and its staging then ran past x on lavapipe).
    while (ks > 1 && (nblk + ks - 1) / ks * (ks - 1) >= nblk) --ks;
    return uint32_t(ks);
}

// The GELU-tanh variants' infix, where the gate's activation is taken (Silu mode, silu_in).
const char* gelu_infix(const FusedMatvec& f) {
    return f.gelu && (f.mode == FusedMode::Silu || f.silu_in) ? "gelu_" : "";
}

// Whether matvec_fused_h.comp has a variant that reads V rows of v's type beside Q/K rows of w's
// (V_Q6_K) in the subgroup mode that both take alone here.
bool v_beside(const Recorder& rec, const DeviceTensor& w, const DeviceTensor& v) {
    if ((w.type != GgmlType::Q4_K && w.type != GgmlType::Q5_K) || v.type != GgmlType::Q6_K ||
        w.cols != v.cols)
        return false;
    const FusedH a = fused_h_plan(rec, w, v.rows), b = fused_h_plan(rec, v, v.rows);
    return a.rows && a.warp_unroll && b.rows && b.warp_unroll && a.rows == b.rows;
}

// How the Heads variants finish their heads (matvec_fused_h.comp HEADS_C): in RoPE pairs where
// groups are 2 rows and no q/k norm needs the whole head first (none, or deferred), else by a
// count per head.
uint32_t heads_finish(const FusedMatvec& f, const FusedH& h) {
    if (f.mode != FusedMode::Heads || h.rows != 2) return 0;
    if (f.defer_qk_norm) return 2;
    return f.heads->q_norm.size ? 0 : 1;
}

// Subgroups own their rows: enough workgroups to fill the GPU once, each staging x. With
// column parts, workgroup w takes part w % ksplit (the shader's split).
Status record_subgroups(Recorder& rec, FusedDispatch& d, const FusedH& h, SubgroupGrid g) {
    const uint32_t ksplit = d.pc.ksplit;
    // A dispatch of some of the rows (matrices of another type take the rest) gets its share
    // of the workgroups.
    uint64_t n_wg = g.n_wg;
    if (d.row_end) {
        const bool qkv = d.f.mode == FusedMode::Qkv || d.f.mode == FusedMode::Heads;
        const uint64_t all = uint64_t(qkv ? d.rows0 + 2 * d.rows1 : d.rows0);
        n_wg = std::max<uint64_t>(1, (n_wg * (d.row_end - d.row_first) + all - 1) / all);
    }
    const uint64_t groups = d.groups_of(h.rows), per_part = (groups + g.per_wg - 1) / g.per_wg;
    n_wg = std::max<uint64_t>(1, std::min(n_wg / ksplit, per_part)) * ksplit;
    // The rounds of groups evened out: as many rounds, but no last round of a few groups that
    // the whole dispatch waits for (7B Q4_0's QKV: 6,144 groups over 5,280 subgroups took two
    // rounds, the second 16% full; 384 workgroups take two full ones). Not for gate/up, whose
    // fewer workgroups then ran slower on the H200 (Plan::matvec_balance: a bit per mode).
    const FusedMode balance_as = d.f.mode == FusedMode::Heads ? FusedMode::Qkv : d.f.mode;
    if (rec.plan().matvec_balance >> uint32_t(balance_as) & 1u) {
        const uint64_t sg = n_wg / ksplit * g.per_wg, rounds = (groups + sg - 1) / sg;
        n_wg = (groups + rounds * g.per_wg - 1) / (rounds * g.per_wg) * ksplit;
    }
    const FusedPush& pc = d.pc;
    const FusedHSpec spec{h.xs_blocks,
                          h.rows,
                          h.warp_unroll,
                          0,
                          1,
                          uint32_t(d.f.mode),
                          pc.ncols,
                          pc.stride,
                          pc.ksplit,
                          pc.rows0,
                          pc.rows1,
                          n_wg <= 65535 ? uint32_t(n_wg) : 0u,
                          pc.has_norm + 1,
                          pc.head_dim,
                          pc.kv_dim,
                          d.f.silu_in ? 1u : 0u,
                          pc.x_off + 1,
                          pc.y_off + 1,
                          d.row_first + 1,
                          d.row_end + 1,
                          std::bit_cast<uint32_t>(pc.eps),
                          pc.n_rot,
                          std::bit_cast<uint32_t>(pc.freq_base),
                          pc.has_ff + 1,
                          d.f.embed ? 1u : 0u,
                          d.f.resid_out ? 1u : 0u,
                          heads_finish(d.f, h)};
    const bool heads = d.f.mode == FusedMode::Heads;
    const std::string variant = heads && d.f.fold ? "matvec_fused_h_heads_resid_"
                                : heads           ? "matvec_fused_h_heads_"
                                : d.f.fold        ? "matvec_fused_h_resid_"
                                : ksplit > 1      ? "matvec_fused_h_atomic_"
                                                  : "matvec_fused_h_";
    // Q/K/V whose V rows are of another type (v_beside): that type's suffix too.
    const std::string v =
        d.w2.type != d.w0.type ? std::string("_v_") + weight_type_suffix(d.w2.type) : std::string();
    return dispatch_fused(rec, d, variant + gelu_infix(d.f) + weight_type_suffix(d.w0.type) + v,
                          g.threads, n_wg, SpecConstants::of(spec));
}

// matvec_fused_h.comp's per-workgroup mode: few workgroups, each looping over groups of rows,
// each staging x once.
Status record_staged(Recorder& rec, const FusedDispatch& d, const FusedH& h) {
    const Plan& plan = rec.plan();
    // Threads take whole blocks: as few steps per thread as 128 threads allow.
    const uint64_t nblk = uint64_t(d.w0.cols) / 32;
    const uint64_t steps = (nblk + 127) / 128;
    const uint32_t wg =
        uint32_t(std::max<uint64_t>(32, ((nblk + steps - 1) / steps + 31) / 32 * 32));
    const uint64_t loop_wgs = std::max<uint64_t>(1, plan.matvec_grid ? plan.matvec_grid
                                                    : plan.sm_count  ? 4 * uint64_t(plan.sm_count)
                                                                     : plan.matvec_loop_workgroups);
    // FusedHSpec's first 6 constants (xs_blocks ... mode); the shape constants stay at 0 in
    // this mode.
    const SpecConstants spec = {h.xs_blocks, h.rows, 0u, 0u, 1u, uint32_t(d.f.mode)};
    return dispatch_fused(
        rec, d, std::string("matvec_fused_h_") + gelu_infix(d.f) + weight_type_suffix(d.w0.type),
        wg, std::min(d.groups_of(h.rows), loop_wgs), spec);
}

// matvec_fused.comp (F32 arithmetic): 4 rows a workgroup.
Status record_plain(Recorder& rec, const FusedDispatch& d) {
    // Quantized types: 4 threads per 32-column block, up to 128 (2048 columns took 4 steps per
    // thread with 64 threads; 128 threads and 2 steps decode TinyLlama 2-4% faster on the
    // H200); float types: one thread per block, at most 128.
    const uint64_t chunks = (d.w0.cols + 31) / 32;
    const bool quantized = d.w0.type == GgmlType::Q4_0 || d.w0.type == GgmlType::Q8_0;
    const uint64_t slots = quantized ? 4 * chunks : chunks;
    const uint32_t wg = slots <= 32 ? 32 : slots <= 64 ? 64 : 128;
    return dispatch_fused(rec, d, std::string("matvec_fused_") + weight_type_suffix(d.w0.type), wg,
                          d.groups_of(kFusedRows),
                          SpecConstants::of(FusedSpec{uint32_t(d.f.mode)}));
}

// Whether a Store or an Add without column parts takes groups of one row, not pairs: where the
// pairs would fill less than 1.5 rounds of the subgroups (with the SM count that sets the grid),
// twice the groups keep more of them busy. On the H200: Phi-3's 9,216-row QKV (4,608 pairs for
// 4,224 subgroups) 18.5 -> 13.8 us a call in Q5_K, 12.5 -> 10.8 in Q4_0; its output projection
// 8.5 -> 7.9, Gemma 3's 8.2 -> 7.0. (Phi-3's gate_up, 8,192 pairs, ran slower in single rows.)
bool one_row_groups(const Recorder& rec, const FusedDispatch& d, const SubgroupGrid& g) {
    const Plan& plan = rec.plan();
    if (!plan.sm_count || plan.matvec_rows || d.pc.ksplit > 1 || d.row_end ||
        (d.f.mode != FusedMode::Store && d.f.mode != FusedMode::Add))
        return false;
    return 2 * d.groups_of(2) < 3 * g.n_wg * g.per_wg;
}

Status record_fused(Recorder& rec, const FusedMatvec& f, const DeviceTensor& w0,
                    const DeviceTensor& w1, const DeviceTensor& w2, uint32_t row_first,
                    uint32_t row_end) {
    FusedDispatch d = fused_dispatch(f, w0, w1, w2, row_first, row_end);
    const SubgroupGrid g = subgroup_grid(rec, d);
    d.pc.ksplit = add_column_parts(rec, d, g);
    const bool qkv = f.mode == FusedMode::Qkv || f.mode == FusedMode::Heads;
    FusedH h = fused_h_plan(rec, w0, qkv ? d.rows1 : 0, d.pc.ksplit, f.mode == FusedMode::GateUp);
    if (h.warp_unroll && one_row_groups(rec, d, g)) {
        const FusedH one = fused_h_plan(rec, w0, 0, d.pc.ksplit, true);
        if (one.warp_unroll) h = one;
    }
    // Only the subgroup mode splits rows; the other kernels read whole rows and sum them.
    const bool subgroups = h.rows && h.warp_unroll;
    if (!subgroups) d.pc.ksplit = 1;
    if (f.mode == FusedMode::Heads && (!subgroups || f.heads->head_dim % h.rows != 0))
        return make_error("vulkan.unsupported_type",
                          "fused mat-vec: Q/K/V with their heads finished (FusedMode::Heads) need "
                          "the subgroup kernel (F16 arithmetic) for these " +
                              std::string(type_name(w0.type)) +
                              " rows and heads of whole row groups here");
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
    if (f.fold && (!subgroups || f.embed || *gelu_infix(f) ||
                   rec.adapter().props.limits.maxPerStageDescriptorStorageBuffers < 15))
        return make_error("vulkan.unsupported_type",
                          "fused mat-vec: a post-norm folded into the input needs the subgroup "
                          "kernel (F16 arithmetic) for these " +
                              std::string(type_name(w0.type)) +
                              " rows, 15 storage buffers a stage, and no GELU or embedding lookup "
                              "there");
    if (subgroups) return record_subgroups(rec, d, h, g);
    if (h.rows) return record_staged(rec, d, h);
    if (*gelu_infix(f))
        return make_error("vulkan.unsupported_type",
                          "fused mat-vec: a GELU gate needs the F16 kernel (matvec_fused_h.comp), "
                          "which does not take these " +
                              std::string(type_name(w0.type)) + " rows here");
    return record_plain(rec, d);
}

}  // namespace

bool fused_gate_up_apart(const Recorder& rec, const DeviceTensor& gate, const DeviceTensor& up,
                         const DeviceTensor& down) {
    if (gate.type != up.type) return false;
    // (Down's plan as record_fused makes it for a residual add without a norm: column parts
    // only change how much of x a workgroup stages, and x too wide to stage whole takes them.)
    const uint32_t parts = fused_h_add_parts(rec.adapter(), down.cols);
    if (parts == 0) return false;
    const FusedH g = fused_h_plan(rec, gate, 0, 1, true), d = fused_h_plan(rec, down, 0, parts);
    return g.rows && g.warp_unroll && d.rows && d.warp_unroll;
}

bool fused_heads_supported(const Recorder& rec, const DeviceTensor& wq, const DeviceTensor& wk,
                           const DeviceTensor& wv, uint32_t head_dim) {
    if (rec.adapter().props.limits.maxPerStageDescriptorStorageBuffers < 22 || head_dim == 0 ||
        wq.rows % head_dim != 0 || wk.rows % head_dim != 0 || wv.rows != wk.rows ||
        !fused_matvec_supports(rec.adapter(), rec.plan(), {&wq, &wk, &wv}))
        return false;
    for (const DeviceTensor* w : {&wq, &wk, &wv}) {
        const FusedH h = fused_h_plan(rec, *w, wk.rows);
        if (!h.rows || !h.warp_unroll || head_dim % h.rows != 0) return false;
    }
    return true;
}

bool fused_heads_in_pairs(const Recorder& rec, const DeviceTensor& wq, const DeviceTensor& wk,
                          const DeviceTensor& wv, uint32_t head_dim) {
    if (!fused_heads_supported(rec, wq, wk, wv, head_dim)) return false;
    for (const DeviceTensor* w : {&wq, &wk, &wv})
        if (fused_h_plan(rec, *w, wk.rows).rows != 2) return false;
    return true;
}

bool fused_matvec_add_supported(const Adapter& a, const Plan& plan, const DeviceTensor& w) {
    if (fused_matvec_supports(a, plan, {&w})) return true;
    const uint32_t parts = fused_h_add_parts(a, w.cols);
    return w.pieces.size() == 1 && parts > 1 && fused_h_available(a, plan, w.type, w.cols, parts);
}

bool fused_resid_supported(const Recorder& rec, const DeviceTensor& w) {
    // The variant binds 15 storage buffers, and its staging's sums take 2 KB of shared memory
    // more (resid_red: 32 blocks' worth).
    if (rec.adapter().props.limits.maxPerStageDescriptorStorageBuffers < 15) return false;
    const FusedH h = fused_h_plan(rec, w, 0);
    return h.rows && h.warp_unroll && fused_h_fits(rec.adapter(), h.xs_blocks + 32, h.rows);
}

bool fused_matvec_gelu_supported(const Recorder& rec, const DeviceTensor& w) {
    return fused_h_plan(rec, w, 0).rows != 0;
}

bool fused_embed_supported(const Recorder& rec, const DeviceTensor& table, const DeviceTensor& wq,
                           const DeviceTensor& wk, const DeviceTensor& wv) {
    const GgmlType t = table.type;
    if ((t != GgmlType::Q4_0 && t != GgmlType::Q8_0) || table.pieces.size() != 1 || wq.type != t ||
        wk.type != t || wv.type != t || table.cols != wq.cols ||
        fused_row_stride(table) != fused_row_stride(wq) ||
        !fused_matvec_supports(rec.adapter(), rec.plan(), {&wq, &wk, &wv}))
        return false;
    const FusedH h = fused_h_plan(rec, wq, wk.rows);
    return h.rows && h.warp_unroll;
}

uint32_t fused_row_stride(const DeviceTensor& w) {
    return w.stride_units * (is_k_quant(w.type) ? 8u : 1u);
}

namespace {

// FusedMode::Heads: the op_qkv_rope fields its dispatch reads, checked, into a copy of f.
Result<FusedMatvec> heads_matvec(const Recorder& rec, const FusedMatvec& f) {
    const QkvRope* r = f.heads;
    if (!r || !f.w[1] || !f.w[2])
        return make_error("vulkan.bad_argument",
                          "fused Q/K/V heads need Wq, Wk, Wv and the heads' fields");
    const DeviceTensor &wq = *f.w[0], &wk = *f.w[1], &wv = *f.w[2];
    if (r->n_head <= 0 || r->n_head_kv <= 0 || r->head_dim <= 0 || r->n_rot % 2 != 0 ||
        r->n_rot < 0 || r->n_rot > r->head_dim || wq.rows != int64_t(r->n_head) * r->head_dim ||
        wk.rows != int64_t(r->n_head_kv) * r->head_dim || wv.rows != wk.rows)
        return make_error("vulkan.unsupported_shape",
                          "fused Q/K/V heads: Wq needs n_head x head_dim rows, Wk and Wv n_head_kv "
                          "x head_dim, and n_rot an even count up to head_dim");
    if (bool(r->bq.buffer) != bool(r->bk.buffer && r->bv.buffer) ||
        bool(r->q_norm.buffer) != bool(r->k_norm.buffer) || r->eps != f.eps ||
        (r->ext_factor != 0.0f && (r->n_ctx_orig <= 0 || !(r->beta_fast > 0.0f) ||
                                   !(r->beta_slow > 0.0f) || !(r->freq_base > 1.0f))))
        return make_error("vulkan.bad_argument",
                          "fused Q/K/V heads take all biases or none, both q/k norms or none, "
                          "the input norm's epsilon, and YaRN with an original context");
    if (!fused_heads_supported(rec, wq, wk, wv, uint32_t(r->head_dim)))
        return make_error("vulkan.unsupported_type",
                          "fused Q/K/V heads need the subgroup kernel for " +
                              std::string(type_name(wq.type)) + ", " +
                              std::string(type_name(wk.type)) + " and " +
                              std::string(type_name(wv.type)) + " rows here");
    const uint64_t ss_bytes = uint64_t(r->n_head + r->n_head_kv) * uint64_t(r->head_dim / 2) * 4;
    if (f.defer_qk_norm && (!r->q_norm.size || f.qk_ss.size < ss_bytes || r->k.off != 0 ||
                            !fused_heads_in_pairs(rec, wq, wk, wv, uint32_t(r->head_dim))))
        return make_error("vulkan.bad_argument",
                          "fused Q/K/V heads leave their q/k norms to the attention only with "
                          "q/k norms, heads in RoPE pairs, k at the start of its buffer and " +
                              std::to_string(ss_bytes) + " bytes for the sums of squares");
    FusedMatvec g = f;
    g.k_cache = r->k_cache, g.v_cache = r->v_cache, g.step = r->step, g.ff = r->ff;
    g.head_dim = uint32_t(r->head_dim), g.n_rot = uint32_t(r->n_rot), g.freq_base = r->freq_base;
    g.y = r->q.buf, g.y_off = r->q.off;
    return g;
}

}  // namespace

Status op_matvec_fused(Recorder& rec, const FusedMatvec& in) {
    FusedMatvec heads;
    if (in.mode == FusedMode::Heads) {
        EMBER_ASSIGN_OR_RETURN(heads, heads_matvec(rec, in));
    }
    const FusedMatvec& f = in.mode == FusedMode::Heads ? heads : in;
    const DeviceTensor& w0 = *f.w[0];
    const DeviceTensor& w1 = f.w[1] ? *f.w[1] : w0;
    const DeviceTensor& w2 = f.w[2] ? *f.w[2] : w1;
    const Adapter& a = rec.adapter();
    // (A residual add of one matrix also where x takes column parts: fused_matvec_add_supported.)
    const bool add = f.mode == FusedMode::Add && !f.norm.buffer && !f.fold && !f.w[1];
    if (add ? !fused_matvec_add_supported(a, rec.plan(), w0)
            : !fused_matvec_supports(a, rec.plan(), {&w0, &w1, &w2}))
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
    if (f.mode != FusedMode::Qkv && f.mode != FusedMode::Heads)
        return make_error("vulkan.unsupported_type",
                          "fused mat-vec: gate and up of different types");
    // Q and K of one type and V of another that a variant reads beside it (Q4_K_M's Q6_K V on
    // half the layers): one dispatch, x staged once (Gemma-3-4B Q4_K_M decoded 5% slower with V
    // in a dispatch of its own than with Q4_K V, on the H200).
    // (No variant folds a post-norm into Q/K/V outside the Heads mode.)
    if (w0.type == w1.type && v_beside(rec, w0, w2) && (f.mode == FusedMode::Heads || !f.fold))
        return record_fused(rec, f, w0, w1, w2, 0, 0);
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
