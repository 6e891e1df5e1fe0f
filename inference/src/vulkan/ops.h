// Recording of Ember's compute ops into a command buffer. Offsets are in elements of the bound
// buffer; ops never wait, barrier() separates producers from consumers.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "quant/types.h"
#include "vulkan/context.h"
#include "vulkan/plan.h"
#include "vulkan/profiler.h"

namespace ember::vulkan {

// A weight on the device, split by rows into pieces that each fit one descriptor range
// (maxStorageBufferRange is 128 MiB on some drivers).
struct DeviceTensor {
    GgmlType type = GgmlType::F32;
    int64_t rows = 0, cols = 0;
    // Row stride in elements (float types), blocks, or uvec4 (Q4_0 and Q8_0: q_rows.glsl).
    uint32_t stride_units = 0;
    struct Piece {
        BufferRange range;
        int64_t row0 = 0, nrows = 0;
    };
    std::vector<Piece> pieces;
};

// Push-constant size of a shader's struct T.
template <class T>
constexpr uint32_t push_size() {
    static_assert(sizeof(T) % 4 == 0);
    return sizeof(T);
}

// Shader name suffix of a weight type ("q4_0"), or nullptr if no shader handles it.
const char* weight_type_suffix(GgmlType type);

class Recorder {
public:
    // Records what `plan` says. With cmd == VK_NULL_HANDLE nothing is recorded: dispatches only
    // create their pipelines. With a profiler, every dispatch is followed by a timestamp
    // labelled with its shader's name or with the last tag().
    Recorder(Context& ctx, VkCommandBuffer cmd, const Plan& plan, Profiler* profiler = nullptr)
        : m_ctx(&ctx), m_adapter(ctx.adapter()), m_plan(plan), m_cmd(cmd), m_prof(profiler) {}
    // The plan make_plan() gives the context's adapter.
    Recorder(Context& ctx, VkCommandBuffer cmd) : Recorder(ctx, cmd, make_plan(ctx.adapter())) {}
    // Listing only: every dispatch is appended to `out` as the plan makes it; no device needed.
    Recorder(const Adapter& adapter, const Plan& plan, std::vector<PlannedDispatch>* out)
        : m_adapter(adapter), m_plan(plan), m_listing(out) {}
    VkCommandBuffer cmd() const { return m_cmd; }
    const Adapter& adapter() const { return m_adapter; }
    const Plan& plan() const { return m_plan; }
    Status dispatch(const std::string& shader, std::initializer_list<BufferRange> bindings,
                    const void* push, uint32_t push_bytes, uint32_t wg_size, uint32_t gx,
                    uint32_t gy = 1, uint32_t gz = 1, const SpecConstants& spec = {});
    // Dispatches n workgroups as a 2-D grid (x <= 65535); shaders use linear_workgroup().
    // `spec`: specialization constants 1, 2, ... (0 is the workgroup size).
    Status dispatch_linear(const std::string& shader, std::initializer_list<BufferRange> bindings,
                           const void* push, uint32_t push_bytes, uint32_t wg_size,
                           uint64_t n_groups, uint32_t gz = 1, const SpecConstants& spec = {});
    // Dispatches the workgroup counts (3 uints) that `grid` holds when the command runs.
    Status dispatch_indirect(const std::string& shader, std::initializer_list<BufferRange> bindings,
                             const void* push, uint32_t push_bytes, uint32_t wg_size,
                             BufferRange grid, const SpecConstants& spec = {});
    // Names the dispatches that follow in a profile (e.g. the stage of a layer).
    void tag(const char* label) { m_tag = label; }
    // Zeroes the range; compute reads and writes after it see the zeros.
    void fill_zero(BufferRange r);
    // Transfer writes (copies, fills) visible to compute reads and writes after it.
    void transfer_to_compute();
    // Compute writes before it are visible to compute reads and writes after it.
    void barrier();
    // Compute writes visible to transfers (before a readback copy).
    void barrier_to_transfer();
    // Transfer writes visible to the host (after a readback copy).
    void barrier_to_host();

private:
    void bind(const Kernel& k, std::initializer_list<BufferRange> bindings, const void* push,
              uint32_t push_bytes);

    // Listing mode: the dispatch as planned, nothing created.
    void list(const std::string& shader, uint32_t wg_size, uint32_t gx, uint32_t gy, uint32_t gz,
              bool indirect);

    Context* m_ctx = nullptr;  // null in listing mode
    const Adapter& m_adapter;
    Plan m_plan;
    VkCommandBuffer m_cmd = VK_NULL_HANDLE;
    VkPipeline m_bound = VK_NULL_HANDLE;
    Profiler* m_prof = nullptr;
    const char* m_tag = nullptr;
    std::vector<PlannedDispatch>* m_listing = nullptr;
};

// Y[t][y_off + r] (y rows n_out apart) = W X[t] (x rows w.cols apart), t < n_tokens. xh: X as
// F16 (op_convert_f16), read instead of x where matmul_reads_f16() says so. wh: scratch into
// which batches of weight types that the tensor cores do not read are dequantized as F16 (in
// row ranges that fit), to run there anyway (dequant_scratch_bytes() says how much it needs).
// xh and wh count as given where their size is not 0 (a recording without a command buffer,
// which binds nothing, gives sizes without buffers).
Status op_matmul(Recorder& rec, const DeviceTensor& w, BufferRange x, uint32_t x_off, BufferRange y,
                 uint32_t y_off, int n_tokens, BufferRange xh = {}, BufferRange wh = {});
// The F16 weight scratch that op_matmul's batches of a [rows, cols] matrix of this type want on
// this adapter, at most kDequantScratchMax (about 32k rows of 4096 columns): 0 where they run
// without one.
constexpr uint64_t kDequantScratchMax = uint64_t(256) << 20;
uint64_t dequant_scratch_bytes(const Adapter& a, GgmlType type, int64_t rows, int64_t cols);
// Rows [row0, row0 + nrows) of w.pieces[piece] as F16, nrows * w.cols halfs
// (shaders/dequant.comp).
Status op_dequant_f16(Recorder& rec, const DeviceTensor& w, size_t piece, int64_t row0,
                      int64_t nrows, BufferRange out);
// Whether op_matmul's batches of this weight type run on the tensor cores
// (matmul_coopmat.comp: F16 and the quantized types, where the device has
// VK_NV_cooperative_matrix); F32 and BF16 get there through an F16 copy.
bool matmul_on_tensor_cores(const Adapter& a, GgmlType type);
// Whether op_matmul of this weight type over n_tokens runs on int8 dot products
// (matmul_idot.comp: the quantized types, where Plan::matmul_idot says so).
bool matmul_on_int_dot(const Plan& plan, GgmlType type, int n_tokens);
// Whether op_matmul of w over n_tokens reads an F16 copy of X when given one (the tensor-core
// kernel's 128-column stages: quantized weights).
bool matmul_reads_f16(const Recorder& rec, const DeviceTensor& w, int n_tokens);
// dst (F16)[i] = src[i], i < n
Status op_convert_f16(Recorder& rec, BufferRange src, BufferRange dst, uint64_t n);
// One-token mat-vec with fused neighbours (shaders/matvec_fused.comp).
// GateUp: gate and up rows stored apart ([gate; up], 2 * rows in y), for a down projection
// with silu_in; only where fused_gate_up_apart says so. Heads: the families' Q/K/V with what
// qkv_rope.comp does folded in (FusedMatvec::heads; only where fused_heads_supported says so).
enum class FusedMode : uint32_t { Store = 0, Add = 1, Qkv = 2, Silu = 3, GateUp = 4, Heads = 5 };
struct QkvRope;
struct FusedMatvec {
    FusedMode mode = FusedMode::Store;
    const DeviceTensor* w[3] = {nullptr, nullptr, nullptr};  // Qkv: wq, wk, wv; Silu: gate, up
    BufferRange x, norm, y, k_cache, v_cache, step, ff;      // norm, caches, step, ff optional
    uint32_t x_off = 0, y_off = 0;
    // x is a GateUp dispatch's [gate; up] (2 * cols) and the product reads SiLU(gate) * up.
    bool silu_in = false;
    // The gate's activation (Silu mode, silu_in) is GELU's tanh approximation (Gemma), not SiLU:
    // matvec_fused_h.comp only (fused_matvec_gelu_supported).
    bool gelu = false;
    float eps = 0;
    uint32_t head_dim = 0, n_rot = 0;  // Qkv
    float freq_base = 10000;
    // Qkv of a decode step's first layer: x is the embedding row of the step's token, read from
    // this table (fused_embed_supported), and the row is also written to x for the residual.
    const DeviceTensor* embed = nullptr;
    // Gemma's post-norm and residual add folded into this mat-vec's input (matvec_fused_h.comp's
    // subgroup mode, Store, GateUp or Qkv, without column parts or a GELU here;
    // fused_resid_supported): x is read as x + rmsnorm(resid) * resid_norm (eps), that row is
    // written to x_out (not x), and cols floats of zero are zeroed for the step's next Add mat-vec.
    bool fold = false;  // the fold on: resid, resid_norm, x_out and zero bound
    BufferRange resid, resid_norm, x_out, zero;
    bool resid_out = true;  // false: another dispatch of the step writes x_out and zero
    // Heads (one token): heads->q and heads->k (one row each; not y) get the rows of Wq and Wk
    // as they are, heads->v_cache the V rows plus bv; the last subgroup to write a q or k head
    // adds its bias, RMS-normalizes it (q_norm, k_norm), rotates it as neox, n_rot, ff,
    // freq_base / scale, attn_factor and YaRN say, and writes q back in place, k to k_cache
    // (step, caches, kv_ring as op_qkv_rope reads them; heads->v unused). Without q/k norms,
    // in groups of 2 rows, each group is a RoPE pair and is finished where it is summed (no
    // count). head_count: a uint per q and k head, zero before, left at zero.
    // defer_qk_norm (q/k norms; fused_heads_in_pairs): the norms' division by each head's rms is
    // left to the attention (DecodeAttentionFamily::qk_norm), so that these heads too are
    // finished in pairs: q (in heads->q) and k (in heads->k, not the cache) rotated and times
    // their norm weights, and each pair's sum of squares in qk_ss, [n_head + n_head_kv]
    // [head_dim / 2] floats.
    const QkvRope* heads = nullptr;
    BufferRange head_count, qk_ss;
    bool defer_qk_norm = false;
};
// Whether op_matvec_fused handles these weights here: one piece each, of one width, and one
// type that matvec_fused.comp reads or types that matvec_fused_h.comp reads (gate and up must
// still share theirs: only Q, K and V take a dispatch per type, or one where a Q4_K or Q5_K
// dispatch reads Q6_K V rows beside its own).
bool fused_matvec_supports(const Adapter& a, const Plan& plan,
                           std::initializer_list<const DeviceTensor*> w);
// Whether the fused decode kernels read this type only with F16 dot products (Q4_1, Q5_0,
// Q5_1 and the K-quants: matvec_fused_h.comp's subgroup mode).
bool fused_matvec_f16_only(GgmlType type);
// Whether matvec_fused_h.comp reads this type (with F16 dot products, where the device has F16
// arithmetic): Q4_0, Q8_0 and the F16-only types.
bool fused_matvec_f16_type(GgmlType type);
// w's row stride as the fused decode kernels count it (include/fused_weights.glsl): elements for
// the float types, blocks of 32 for the quantized ones (K-quant superblocks hold 8).
uint32_t fused_row_stride(const DeviceTensor& w);
Status op_matvec_fused(Recorder& rec, const FusedMatvec& f);
// Whether a decode step's QKV of wq, wk, wv can look its input up in this embedding table itself
// (FusedMatvec::embed): one piece, the weights' own type (Q4_0 or Q8_0) and width, and
// matvec_fused_h.comp's subgroup mode.
bool fused_embed_supported(const Recorder& rec, const DeviceTensor& table, const DeviceTensor& wq,
                           const DeviceTensor& wk, const DeviceTensor& wv);
// Whether op_matvec_fused takes FusedMode::Heads for these Q, K and V weights and head size here:
// matvec_fused_h.comp's subgroup mode for each type, heads of whole row groups, 22 storage
// buffers a stage.
bool fused_heads_supported(const Recorder& rec, const DeviceTensor& wq, const DeviceTensor& wk,
                           const DeviceTensor& wv, uint32_t head_dim);
// ... and finishes them in RoPE pairs (groups of 2 rows), as FusedMatvec::defer_qk_norm needs.
bool fused_heads_in_pairs(const Recorder& rec, const DeviceTensor& wq, const DeviceTensor& wk,
                          const DeviceTensor& wv, uint32_t head_dim);
// Whether op_matvec_fused takes a residual add (FusedMode::Add without a norm) of w here, also
// where x is too wide to stage whole and column parts (float atomics) split it.
bool fused_matvec_add_supported(const Adapter& a, const Plan& plan, const DeviceTensor& w);
// Whether a mat-vec of w can fold a post-norm and residual add into its input
// (FusedMatvec::resid): matvec_fused_h.comp's subgroup mode reads w here.
bool fused_resid_supported(const Recorder& rec, const DeviceTensor& w);
// Whether gate/up can store its rows apart (FusedMode::GateUp) and down read them (silu_in):
// both run in matvec_fused_h.comp's subgroup mode here.
bool fused_gate_up_apart(const Recorder& rec, const DeviceTensor& gate, const DeviceTensor& up,
                         const DeviceTensor& down);
// Whether a Silu-mode dispatch of w's type and shape can take a GELU gate here (FusedMatvec::
// gelu: matvec_fused_h.comp in either mode).
bool fused_matvec_gelu_supported(const Recorder& rec, const DeviceTensor& w);
// out[t] = row step_tokens[t] of the table, as floats.
Status op_get_rows(Recorder& rec, const DeviceTensor& table, BufferRange step, BufferRange out,
                   int n_tokens);
// n_rows rows of n floats, `stride` apart in x and out; out_f16: out is F16.
Status op_rms_norm(Recorder& rec, BufferRange x, uint32_t x_off, BufferRange w, BufferRange out,
                   uint32_t out_off, int n, int n_rows, int stride, float eps,
                   bool out_f16 = false);
// x[row] += r[row] (rows of n, r's contiguous), then out[row] = rms_norm(x[row]) * w: the
// residual add and the next norm in one dispatch. out_f16: out is F16.
Status op_add_rms_norm(Recorder& rec, BufferRange x, BufferRange r, BufferRange w, BufferRange out,
                       int n, int n_rows, float eps, bool out_f16);
// out[row] += rms_norm(x[row]) * w (rows of n, both contiguous): a norm after a projection and
// the residual add after it in one dispatch (Gemma's post-attention and post-FFN norms); x is
// left zeroed, for the next projection to add into.
Status op_rms_norm_add(Recorder& rec, BufferRange x, BufferRange w, BufferRange out, int n,
                       int n_rows, float eps);
// RoPE in place on n_tokens rows of q (n_head heads) and k (n_head_kv heads), rows contiguous,
// ff optional; then k and v stored as F16 at the step's positions of k_cache and v_cache (rows
// of n_head_kv * head_dim).
Status op_rope_kv_store(Recorder& rec, BufferRange q, BufferRange k, BufferRange v,
                        BufferRange k_cache, BufferRange v_cache, BufferRange step, BufferRange ff,
                        int n_tokens, int n_head, int n_head_kv, int head_dim, int n_rot,
                        float freq_base);
struct AttentionShape {
    int n_tokens, n_head, n_head_kv, head_dim;
    float scale;
};
// Whether op_attention runs this batch on the tensor cores (attention_coopmat.comp): then
// every position's K and V come from the F16 cache, and Q and P are rounded to F16.
bool attention_on_tensor_cores(const Adapter& a, const AttentionShape& s);
// out[t][h*hd..] = softmax(q k^T * scale) v over positions [0, pos0 + t], K/V rows n_head_kv*hd.
// k_batch/v_batch (optional, F32 rows of this batch): the batch's own positions are read from
// them instead of from the F16 cache.
// keep_f32: never on the tensor cores (layers of F32 weights keep F32 Q, K, V and P).
Status op_attention(Recorder& rec, BufferRange q, BufferRange k_cache, BufferRange v_cache,
                    BufferRange out, BufferRange step, const AttentionShape& s,
                    BufferRange k_batch = {}, BufferRange v_batch = {}, bool keep_f32 = false);
// The decoder families' extras of the decode attention (attention.comp FAMILY): s.scale as
// given, scores soft-capped (softcap > 0: cap * tanh(s / cap)), a sliding window (window > 0:
// the query at position p reads keys p - window < j <= p only, and its runs cover no others),
// caches that are rings (kv_ring > 0: position j in row j % kv_ring, kv_ring >= window), and
// any head_dim % 8 == 0 up to 8 * 256 (Phi-3's 96). qk_norm: the q/k norms that the step's
// Q/K/V left undone (FusedMatvec::defer_qk_norm): q and k_new ([Dkv] F32, the step's key) are
// rotated and times their norm weights, and qk_ss holds each head's sums of squares in
// head_dim / 2 pieces ([n_head + n_head_kv][head_dim / 2]); the attention divides q and the key
// by their heads' rms (qk_eps: the norms' epsilon) and stores the key in the K cache.
struct DecodeAttentionFamily {
    float softcap = 0.0f;
    uint32_t window = 0, kv_ring = 0;
    bool qk_norm = false;
    BufferRange k_new, qk_ss;
    float qk_eps = 0.0f;
};
// Decode attention (one token; shaders/attention.comp, SPLIT_KV): one workgroup per group of
// query heads that share a KV head (each K/V row read once for them) and run of positions, at
// most n_split runs (decode_attention_splits, at most 128) of at least a few passes; split
// groups write partials (decode_attention_partials floats) and the last of their runs
// combines; counters (n_head uints) must be zero and are left at zero. grid (optional, 3
// uints): the workgroup counts for the step's position, written by the host before each step
// (decode_attention_grid), so that a replayed step launches only the workgroups it needs;
// without it n_split runs per head launch and the idle ones return at once (with fam, the grid
// may be the one for the whole context: a window takes as many of its runs as it needs).
// fam: the families' kernel (attention.comp SPLIT_KV FAMILY) with their extras.
bool decode_attention_supported(const Plan& p, const AttentionShape& s, bool fam = false);
// Whether the decode attention takes one run per head at n_kv positions (no split, no partials).
bool decode_attention_one_run(const Plan& p, const AttentionShape& s, uint32_t n_kv);
// x += Wo attention(q, K, V) for one token in one dispatch (attention.comp, WO), for Q4_0, Q8_0
// and Q4_K Wo on devices with float atomics and F16 arithmetic: workgroup (h, i) attends head h
// over the whole context and adds its share of a slice of Wo's rows to x with float atomics
// (the sum's order varies from run to run). For short contexts: no split over positions.
// fam: the families' attention (attention.comp WO FAMILY; head sizes 32 to 256 in 32s).
bool attention_wo_supported(const Recorder& rec, const AttentionShape& s, const DeviceTensor& wo,
                            bool fam = false);
Status op_attention_wo(Recorder& rec, BufferRange q, BufferRange k_cache, BufferRange v_cache,
                       BufferRange x, BufferRange step, const AttentionShape& s,
                       const DeviceTensor& wo, const DecodeAttentionFamily* fam = nullptr);
uint32_t decode_attention_splits(const Plan& p, const AttentionShape& s, int n_ctx);
std::array<uint32_t, 3> decode_attention_grid(const Plan& p, const AttentionShape& s,
                                              uint32_t n_split, uint32_t n_kv);
uint64_t decode_attention_partials(const AttentionShape& s, uint32_t n_split);
Status op_attention_decode(Recorder& rec, BufferRange q, BufferRange k_cache, BufferRange v_cache,
                           BufferRange out, BufferRange step, const AttentionShape& s,
                           BufferRange partials, BufferRange counters, uint32_t n_split,
                           BufferRange grid = {}, const DecodeAttentionFamily* fam = nullptr);
// out_f16: out is F16.
Status op_silu_mul(Recorder& rec, BufferRange g, BufferRange u, BufferRange out, uint32_t n,
                   bool out_f16 = false);
Status op_add(Recorder& rec, BufferRange y, BufferRange x, uint32_t n);  // y += x
// result (one uint32) = argmax of x[x_off .. x_off + n)
Status op_argmax(Recorder& rec, BufferRange x, uint32_t x_off, uint32_t n, BufferRange result);

}  // namespace ember::vulkan
