// The plan of the Vulkan forward pass for one adapter: which kernel and which grid each stage
// takes, decided once when a model loads (make_plan), from a small per-vendor tuning table and
// the device's limits. The ops only execute it: none of them reads the environment or guesses
// at the device. Tests build plans directly (make_plan, then change a field).
//
// The documented grids (what `ember-cli devices --plan -m MODEL` prints, per stage):
// - Decode mat-vecs in matvec_fused_h.comp's subgroup mode: 256 threads a workgroup, 4 of them
//   per multiprocessor (5 for Q4_0 rows of 4,096 columns or more) where VK_NV_shader_sm_builtins
//   gives the SM count; gate/up of Q4_0 or Q8_0 rows of 4,096+ columns on NVIDIA: 448 threads,
//   3 an SM; with an SM count, a staging that does more than load x (Gemma: a folded
//   post-norm, GELU on down's input): 512 threads, 2 an SM. Without an SM count: 256
//   workgroups of 256 threads (matvec_workgroups). Then never more workgroups than row groups,
//   and the rounds evened out (Store, Add, Qkv). Column parts of an Add: parts of at most 96-128
//   blocks, and enough of them for 1.5 rounds of the subgroups.
// - matvec_fused_h.comp's per-workgroup mode (Q4_0 rows of 4,096 columns, no subgroup mode):
//   4 workgroups an SM, else 512 (matvec_loop_workgroups).
// - Prompt matmuls on tensor cores: 128 x 128 tiles where they fill 72% of the SMs (132 on
//   the H200; 128 assumed without a count), else 128 x 64 from 1,024 rows, else 64 x 64.
// - Prompt matmuls without tensor cores, where the adapter has int8 dot products
//   (VK_KHR_shader_integer_dot_product): 64 rows x 32 tokens a workgroup of 128 threads, from
//   8 tokens; else, and for the float types, one row and 8 tokens a workgroup (matmul.comp).
// - Prompt attention: tensor cores, 64 queries a workgroup (128 threads), Llama's and the
//   families' (soft-cap, sliding window, head sizes 16..256; from 144 on two workgroups a head,
//   each summing half of the output) where the adapter has them.
// - Decode attention: 256 threads, 8 positions a thread a pass, runs of at least 2 passes, at
//   most 1,024 workgroups, one query head a workgroup; with the output projection fused: 8
//   workgroups per head, more where that makes fewer than 128 in all (Gemma 3 4B's 8 heads:
//   16 a head).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/overrides.h"

namespace ember::vulkan {

struct Adapter;

enum class Vendor { Nvidia, Amd, Intel, Other };
const char* vendor_name(Vendor v);

// How a long prompt is cut into submissions.
enum class Batching {
    Whole,  // batches of up to kMaxBatch tokens
    Timed,  // sized so that a submission takes about batch_target_s (next_batch_size)
};

// Which decode mat-vec kernel the fused stages take (matvec_fused.comp or matvec_fused_h.comp).
enum class FusedKernel {
    Auto,    // matvec_fused_h.comp where the device has F16 arithmetic and the type allows
    Plain,   // matvec_fused.comp (F32 arithmetic) only
    Staged,  // matvec_fused_h.comp also in its per-workgroup mode for any shape
};

struct Plan {
    Vendor vendor = Vendor::Other;
    const char* vendor_reason = "";  // the tuning table's one-line reason for its row
    uint32_t sm_count = 0;           // multiprocessors where NVIDIA's extension says, else 0

    // User overrides (common/overrides.h).
    bool fused = true;  // the fused decode kernels where the weights allow them

    // Decode mat-vecs (matvec_fused*.comp).
    FusedKernel fused_kernel = FusedKernel::Auto;
    uint32_t matvec_workgroups = 256;       // subgroup mode, without an SM count
    uint32_t matvec_loop_workgroups = 512;  // per-workgroup mode, without an SM count
    uint32_t matvec_q4_sm_quarters = 5;     // Q4_0 rows of 4,096+ columns: workgroups an SM x4
    uint32_t matvec_balance = 7;  // a bit per FusedMode whose rounds of row groups are evened
    bool gate_up_wide = false;    // 448-thread gate/up workgroups (NVIDIA, subgroups of 32)
    // Fixed by tests to reach every variant (0, or kAuto for max_unroll: the rule decides).
    static constexpr uint32_t kAuto = UINT32_MAX;
    uint32_t matvec_threads = 0;         // threads a workgroup (subgroup mode)
    uint32_t matvec_grid = 0;            // workgroups (both modes)
    uint32_t matvec_rows = 0;            // rows a group: 2, 4, 8 or 16
    uint32_t matvec_max_unroll = kAuto;  // blocks per lane a step; 0: per-workgroup mode
    uint32_t matvec_ksplit = 0;          // column parts of an Add dispatch

    // Prompt matmuls on tensor cores (matmul_coopmat.comp).
    uint32_t coopmat_sms = 128;                    // SMs assumed for the tile choice
    uint64_t coopmat_token_order_bytes = 4 << 20;  // weights from this size: token tiles first

    // Prompt matmuls of the quantized types on int8 dot products (matmul_idot.comp), for batches
    // of idot_min_tokens or more: where the adapter has them, no tensor cores and the shared
    // memory. Smaller batches keep matmul.comp, whose 8-token tiles idle fewer lanes.
    bool matmul_idot = false;
    uint32_t idot_min_tokens = 8;

    // Prompt attention of the decoder families (n > 1): on the tensor cores
    // (attention_coopmat.comp's FAMILY variant) where the adapter has them and the head size is a
    // multiple of 16 up to 256 (family_attention_on_tensor_cores), else attention_family.comp.
    bool family_attn_coopmat = false;

    // Decode attention (attention.comp), split over positions: workgroups of attn_threads
    // threads, head_dim / 8 of them a position, each taking attn_positions positions a pass
    // (4 for groups of 3 or more, halved until a pass has at most 2 attn_threads scores), runs
    // of at least attn_min_passes passes, at most attn_workgroups workgroups in all, and up to
    // attn_max_group (at most 4) query heads of one KV head a workgroup, each K/V row then
    // loaded once for them. The best of sweeps on the H200, the same on every device (the
    // host's grid and the shader's runs must agree). One head a workgroup: Llama-3.1-8B's
    // attention at depth 16,384 took 68.6 us a layer with groups of 4 (8 groups x 128 runs of
    // 2 passes) against 58.2 us (the 4 heads of a KV head read the same rows at once, from L2).
    uint32_t attn_threads = 256;
    uint32_t attn_positions = 8;
    uint32_t attn_min_passes = 2;
    uint32_t attn_workgroups = 1024;
    uint32_t attn_max_group = 1;
    uint32_t attn_wo_slices = 8;  // workgroups per head with the output projection fused
    bool attn_wo = true;          // fuse the output projection where the device allows
    // With few heads, more workgroups a head: at least this many in all (Gemma 3 4B's 8 heads;
    // tg128 on the H200 with 64 / 128 / 256 / 512 in all: 384 / 410 / 409 / 396 tok/s).
    uint32_t attn_wo_min_groups = 128;

    // Prompt batches.
    Batching batching = Batching::Whole;
    double batch_target_s = 0.25;
    const char* batching_reason = "";

    // GPU time per stage (EMBER_VULKAN_PROFILE).
    Overrides::Profile profile = Overrides::Profile::Off;
};

// The plan for this adapter: its vendor's row of the tuning table, its limits, and the user's
// overrides.
Plan make_plan(const Adapter& a, const Overrides& o = {});

// One dispatch of a forward pass as a plan makes it (Recorder's listing mode).
struct PlannedDispatch {
    std::string stage;   // the forward pass's tag ("norm + qkv + rope + kv store")
    std::string kernel;  // the pipeline's shader variant
    uint32_t threads = 0, gx = 0, gy = 0, gz = 0;
    bool indirect = false;  // workgroup counts written by the host before each step
};

}  // namespace ember::vulkan
