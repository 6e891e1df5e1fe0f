#include "vulkan/forward.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/env.h"
#include "common/log.h"

namespace ember::vulkan {
namespace {

enum class Output { None, Logits, Argmax };

// The buffers one forward pass binds.
struct Buffers {
    BufferRange x, xb, q, k, v, att, tmp, g, u, logits, result, step;  // g: 2 rows at least
    BufferRange xh;  // F16 copy of a prompt matmul's activations (tensor-core devices only)
    BufferRange wh;  // F16 copy of a prompt matmul's weights where the tensor cores need one
    BufferRange attn_part, attn_count;  // decode attention: partials, per-head counters
    uint32_t attn_split = 0;            // its most runs per head; 0: not used
    BufferRange attn_grid;              // its workgroup counts for the step (in the step buffer)
    std::vector<BufferRange> k_cache, v_cache;
    BufferRange readback;
    // The output projection writes the logits into readback itself, without a copy after it
    // (EMBER_VULKAN_LOGITS_DIRECT=0: the copy).
    bool logits_direct = false;
    BufferRange timeline;  // Device::timeline: the middle layer's mat-vec timestamps
};

// EMBER_VULKAN_TIMELINE: 3 slots (QKV, gate/up, down) of 1,024 workgroups of 16 subgroups of 8
// timestamps (uvec4), as matvec_fused_h.comp's TIMELINE writes them.
constexpr uint64_t kTimelineBytes = 3ull * 1024 * 16 * 8 * 16;

struct Dims {
    uint32_t E, Dq, Dkv, F, V;
};

Dims dims_of(const LlamaHParams& hp) {
    return {hp.n_embd, hp.n_head * hp.head_dim, hp.n_kv_dim(), hp.n_ff, hp.n_vocab};
}

int batch_capacity(int n_ctx) {
    return std::max(1, std::min(kMaxBatch, n_ctx));
}

// Position, token count, token ids, then the decode attention's grid (3 uints).
uint64_t step_grid_offset(int batch) {
    return 8 + 4 * uint64_t(batch);
}
uint64_t step_bytes(int batch) {
    return step_grid_offset(batch) + 12;
}

Status record_fused_layers(Recorder& rec, const DeviceModel& m, const Buffers& b, bool fuse_wo,
                           bool fold_embed);

AttentionShape attention_shape(const LlamaHParams& hp, int n) {
    return {n, int(hp.n_head), int(hp.n_head_kv), int(hp.head_dim),
            1.0f / std::sqrt(float(hp.head_dim))};
}

// Attention of one decoded token: split over positions where the shape allows
// (EMBER_VULKAN_SPLIT_ATTN=0 keeps one workgroup per head, for comparisons).
Status record_decode_attention(Recorder& rec, const Buffers& b, size_t l, const AttentionShape& s) {
    if (b.attn_split)
        return op_attention_decode(rec, b.q, b.k_cache[l], b.v_cache[l], b.att, b.step, s,
                                   b.attn_part, b.attn_count, b.attn_split, b.attn_grid);
    return op_attention(rec, b.q, b.k_cache[l], b.v_cache[l], b.att, b.step, s);
}

bool split_attention_enabled(const LlamaHParams& hp) {
    return !env_is("EMBER_VULKAN_SPLIT_ATTN", "0") &&
           decode_attention_supported(attention_shape(hp, 1));
}
Status record_layers(Recorder& rec, const DeviceModel& m, const Buffers& b, int n);

// Records the forward pass of n tokens (the step buffer holds their position and ids).
// fuse_wo: a decode step whose context takes one run per head, so that attention and output
// projection can be one dispatch where the device and Wo allow (op_attention_wo).
Status record_forward(Recorder& rec, const DeviceModel& m, const Buffers& b, int n, Output out,
                      bool fuse_wo = false) {
    const LlamaHParams& hp = m.hp;
    const Dims d = dims_of(hp);
    // A decode step's first QKV can look its token up itself, without this dispatch and its
    // barrier.
    const bool fold_embed =
        n == 1 && m.fused_layers &&
        fused_embed_supported(rec, *m.tok_embd, *m.layers[0].wq, *m.layers[0].wk, *m.layers[0].wv);
    if (!fold_embed) {
        rec.tag("embed");
        EMBER_TRY(op_get_rows(rec, *m.tok_embd, b.step, b.x, n));
        rec.barrier();
    }
    if (n == 1 && m.fused_layers) {
        EMBER_TRY(record_fused_layers(rec, m, b, fuse_wo, fold_embed));
    } else {
        EMBER_TRY(record_layers(rec, m, b, n));
    }
    if (out == Output::None) return {};
    // Only the last token's logits are needed.
    rec.tag("output norm + head");
    const bool direct = m.fused_output && out == Output::Logits && b.logits_direct;
    if (m.fused_output) {
        FusedMatvec f;
        f.mode = FusedMode::Store;
        f.w[0] = m.output;
        f.x = b.x;
        f.x_off = uint32_t(n - 1) * d.E;
        f.norm = m.output_norm->pieces[0].range;
        f.eps = hp.rms_eps;
        f.y = direct ? b.readback : b.logits;
        EMBER_TRY(op_matvec_fused(rec, f));
    } else {
        EMBER_TRY(op_rms_norm(rec, b.x, uint32_t(n - 1) * d.E, m.output_norm->pieces[0].range, b.xb,
                              0, int(d.E), 1, int(d.E), hp.rms_eps));
        rec.barrier();
        EMBER_TRY(op_matmul(rec, *m.output, b.xb, 0, b.logits, 0, 1));
    }
    if (direct) {
        rec.barrier_to_host();
        return {};
    }
    rec.barrier();
    if (out == Output::Argmax) {
        rec.tag("argmax");
        EMBER_TRY(op_argmax(rec, b.logits, 0, d.V, b.result));
        rec.barrier_to_transfer();
        if (rec.cmd()) {
            VkBufferCopy c{b.result.offset, 0, 4};
            vkCmdCopyBuffer(rec.cmd(), b.result.buffer, b.readback.buffer, 1, &c);
        }
    } else {
        rec.barrier_to_transfer();
        if (rec.cmd()) {
            VkBufferCopy c{b.logits.offset, 0, uint64_t(d.V) * 4};
            vkCmdCopyBuffer(rec.cmd(), b.logits.buffer, b.readback.buffer, 1, &c);
        }
    }
    rec.barrier_to_host();
    return {};
}

// One token through every layer in five dependent dispatches per layer: norm + QKV + RoPE +
// cache store, attention, output projection + residual, norm + gate/up + SiLU, down + residual;
// four where attention and output projection fuse (fuse_wo).
Status record_fused_layers(Recorder& rec, const DeviceModel& m, const Buffers& b, bool fuse_wo,
                           bool fold_embed) {
    const LlamaHParams& hp = m.hp;
    const BufferRange ff = m.rope_freqs ? m.rope_freqs->pieces[0].range : BufferRange{};
    const AttentionShape shape = attention_shape(hp, 1);
    // Timing diagnostics only (the results are wrong): EMBER_VULKAN_SKIP lists stages to leave
    // out, q(kv) a(ttention) o(utput) f(fn gate/up) d(own), to take their time by difference.
    const std::string skip = env_str("EMBER_VULKAN_SKIP");
    // EMBER_VULKAN_NOBARRIER lists stages (same letters) whose barrier after is left out, for
    // what the barriers cost (results wrong).
    const std::string nob = env_str("EMBER_VULKAN_NOBARRIER");
    // One dependent stage: its dispatch, named in a GPU profile, then a barrier.
    auto stage = [&](char id, const char* label, const auto& record) -> Status {
        if (skip.find(id) != std::string::npos) return {};
        rec.tag(label);
        EMBER_TRY(record());
        if (nob.find(id) == std::string::npos) rec.barrier();
        return {};
    };
    // y += W x: the output and down projections with the residual add.
    auto residual = [](const DeviceTensor* w, BufferRange x, BufferRange y) {
        FusedMatvec f;
        f.mode = FusedMode::Add;
        f.w[0] = w;
        f.x = x;
        f.y = y;
        return f;
    };
    for (size_t l = 0; l < m.layers.size(); ++l) {
        const DeviceLayer& L = m.layers[l];
        // The middle layer's mat-vecs write their timestamps where a timeline is kept.
        auto timed = [&](FusedMatvec f, uint32_t slot) {
            if (l == m.layers.size() / 2) f.timeline = b.timeline, f.timeline_slot = slot;
            return f;
        };
        FusedMatvec qkv;
        qkv.mode = FusedMode::Qkv;
        qkv.w[0] = L.wq;
        qkv.w[1] = L.wk;
        qkv.w[2] = L.wv;
        qkv.x = b.x;
        qkv.norm = L.attn_norm->pieces[0].range;
        qkv.eps = hp.rms_eps;
        qkv.y = b.q;
        qkv.k_cache = b.k_cache[l];
        qkv.v_cache = b.v_cache[l];
        qkv.step = b.step;
        qkv.ff = ff;
        qkv.head_dim = hp.head_dim;
        qkv.n_rot = hp.n_rot;
        qkv.freq_base = hp.rope_freq_base;
        if (l == 0 && fold_embed) qkv.embed = m.tok_embd;
        EMBER_TRY(stage('q', "norm + qkv + rope + kv store",
                        [&] { return op_matvec_fused(rec, timed(qkv, 0)); }));
        if (fuse_wo && attention_wo_supported(rec, shape, *L.wo)) {
            EMBER_TRY(stage('a', "attention + wo + residual", [&] {
                return op_attention_wo(rec, b.q, b.k_cache[l], b.v_cache[l], b.x, b.step, shape,
                                       *L.wo);
            }));
        } else {
            EMBER_TRY(
                stage('a', "attention", [&] { return record_decode_attention(rec, b, l, shape); }));
            EMBER_TRY(stage('o', "wo + residual",
                            [&] { return op_matvec_fused(rec, residual(L.wo, b.att, b.x)); }));
        }
        // Gate and up rows apart where the subgroup kernel runs both (b.g holds [gate; up]):
        // the down projection applies the SiLU as it stages its input.
        const bool apart = fused_gate_up_apart(rec, *L.gate, *L.up, *L.down);
        FusedMatvec gu;
        gu.mode = apart ? FusedMode::GateUp : FusedMode::Silu;
        gu.w[0] = L.gate;
        gu.w[1] = L.up;
        gu.x = b.x;
        gu.norm = L.ffn_norm->pieces[0].range;
        gu.eps = hp.rms_eps;
        gu.y = b.g;
        EMBER_TRY(stage('f', apart ? "norm + gate/up" : "norm + gate/up + silu",
                        [&] { return op_matvec_fused(rec, timed(gu, 1)); }));
        FusedMatvec down = residual(L.down, b.g, b.x);
        down.silu_in = apart;
        EMBER_TRY(stage('d', apart ? "silu + down + residual" : "down + residual",
                        [&] { return op_matvec_fused(rec, timed(down, 2)); }));
    }
    return {};
}

// Whether every one of the matmuls ws reads an F16 copy of its input, so that the dispatch
// producing it can write F16 alone (docs/performance.md item 46; EMBER_VULKAN_FOLD_F16=0 makes
// the copies instead, for comparison).
bool all_read_f16(const Recorder& rec, const Buffers& b, int n,
                  std::initializer_list<const DeviceTensor*> ws) {
    static const bool allowed = !env_is("EMBER_VULKAN_FOLD_F16", "0");
    return allowed && b.xh.buffer &&
           std::all_of(ws.begin(), ws.end(), [&](auto* w) { return matmul_reads_f16(rec, *w, n); });
}

// The F16 input of the matmuls ws (of equal widths): b.xh where the producer wrote it there
// (written, from all_read_f16), else the F16 copy of n rows of x where one of them reads it
// (op_matmul); out stays empty where none does.
Status f16_input(Recorder& rec, const Buffers& b, BufferRange x, int n,
                 std::initializer_list<const DeviceTensor*> ws, bool written, BufferRange& out) {
    out = written ? b.xh : BufferRange{};
    if (written || !b.xh.buffer ||
        std::none_of(ws.begin(), ws.end(), [&](auto* w) { return matmul_reads_f16(rec, *w, n); }))
        return {};
    rec.tag("f16 copy");
    EMBER_TRY(op_convert_f16(rec, x, b.xh, uint64_t(n) * uint64_t((*ws.begin())->cols)));
    rec.barrier();
    out = b.xh;
    return {};
}

// The layers of n tokens, one op per dispatch but for the residual adds, each fused with the
// norm after it. Where every matmul of a norm or SiLU*up output reads F16, that dispatch writes
// b.xh instead of its F32 buffer (f16 below), and no copy is made.
Status record_layers(Recorder& rec, const DeviceModel& m, const Buffers& b, int n) {
    const LlamaHParams& hp = m.hp;
    const Dims d = dims_of(hp);
    const BufferRange ff = m.rope_freqs ? m.rope_freqs->pieces[0].range : BufferRange{};
    const AttentionShape shape = attention_shape(hp, n);
    auto qkv_f16 = [&](const DeviceLayer& L) {
        return all_read_f16(rec, b, n, {L.wq, L.wk, L.wv});
    };
    for (size_t l = 0; l < m.layers.size(); ++l) {
        const DeviceLayer& L = m.layers[l];
        bool f16 = qkv_f16(L);
        if (l == 0) {  // later layers' attention norm ran with the previous layer's last add
            rec.tag("rms_norm");
            EMBER_TRY(op_rms_norm(rec, b.x, 0, L.attn_norm->pieces[0].range, f16 ? b.xh : b.xb, 0,
                                  int(d.E), n, int(d.E), hp.rms_eps, f16));
            rec.barrier();
        }
        BufferRange xh;
        EMBER_TRY(f16_input(rec, b, b.xb, n, {L.wq, L.wk, L.wv}, f16, xh));
        rec.tag("matmul q/k/v");
        EMBER_TRY(op_matmul(rec, *L.wq, b.xb, 0, b.q, 0, n, xh, b.wh));
        EMBER_TRY(op_matmul(rec, *L.wk, b.xb, 0, b.k, 0, n, xh, b.wh));
        EMBER_TRY(op_matmul(rec, *L.wv, b.xb, 0, b.v, 0, n, xh, b.wh));
        rec.barrier();
        rec.tag("rope + kv store");
        EMBER_TRY(op_rope_kv_store(rec, b.q, b.k, b.v, b.k_cache[l], b.v_cache[l], b.step, ff, n,
                                   int(hp.n_head), int(hp.n_head_kv), int(hp.head_dim),
                                   int(hp.n_rot), hp.rope_freq_base));
        rec.barrier();
        // A prompt attends over its own unrounded K/V; a single decoded token reads the F16
        // cache like the fused decode path, so both decode paths agree.
        rec.tag("attention");
        if (n == 1) {
            EMBER_TRY(record_decode_attention(rec, b, l, shape));
        } else {
            EMBER_TRY(
                op_attention(rec, b.q, b.k_cache[l], b.v_cache[l], b.att, b.step, shape, b.k, b.v));
        }
        rec.barrier();
        EMBER_TRY(f16_input(rec, b, b.att, n, {L.wo}, false, xh));
        rec.tag("matmul wo");
        EMBER_TRY(op_matmul(rec, *L.wo, b.att, 0, b.tmp, 0, n, xh, b.wh));
        rec.barrier();
        rec.tag("add + rms_norm");
        f16 = all_read_f16(rec, b, n, {L.gate, L.up});
        EMBER_TRY(op_add_rms_norm(rec, b.x, b.tmp, L.ffn_norm->pieces[0].range, f16 ? b.xh : b.xb,
                                  int(d.E), n, hp.rms_eps, f16));
        rec.barrier();
        EMBER_TRY(f16_input(rec, b, b.xb, n, {L.gate, L.up}, f16, xh));
        rec.tag("matmul gate/up");
        EMBER_TRY(op_matmul(rec, *L.gate, b.xb, 0, b.g, 0, n, xh, b.wh));
        EMBER_TRY(op_matmul(rec, *L.up, b.xb, 0, b.u, 0, n, xh, b.wh));
        rec.barrier();
        rec.tag("silu_mul");
        f16 = all_read_f16(rec, b, n, {L.down});
        EMBER_TRY(op_silu_mul(rec, b.g, b.u, f16 ? b.xh : b.g, uint32_t(n) * d.F, f16));
        rec.barrier();
        EMBER_TRY(f16_input(rec, b, b.g, n, {L.down}, f16, xh));
        rec.tag("matmul down");
        EMBER_TRY(op_matmul(rec, *L.down, b.g, 0, b.tmp, 0, n, xh, b.wh));
        rec.barrier();
        if (l + 1 < m.layers.size()) {
            const DeviceLayer& next = m.layers[l + 1];
            f16 = qkv_f16(next);
            rec.tag("add + rms_norm");
            EMBER_TRY(op_add_rms_norm(rec, b.x, b.tmp, next.attn_norm->pieces[0].range,
                                      f16 ? b.xh : b.xb, int(d.E), n, hp.rms_eps, f16));
        } else {
            rec.tag("add");
            EMBER_TRY(op_add(rec, b.x, b.tmp, uint32_t(n) * d.E));
        }
        rec.barrier();
    }
    return {};
}

class VulkanRunner final : public Runner {
public:
    static Result<std::unique_ptr<Runner>> create(std::shared_ptr<LoadedModel> loaded, int n_ctx);
    Status forward(std::span<const int32_t> tokens, int pos, float* logits) override;
    Result<int32_t> forward_argmax(std::span<const int32_t> tokens, int pos) override;
    // Where the readback memory is host-cached, the logits are read where the GPU wrote them:
    // the copy of 32,000 of them cost 0.2-0.4% of a 7B Q4_0 token on the H200 and 0.9-1.6% of
    // a TinyLlama one (docs/performance.md, item 108). EMBER_VULKAN_LOGITS_VIEW=0 copies them.
    bool has_logits_view() const override { return m_logits_view; }
    Result<std::span<const float>> forward_view(std::span<const int32_t> tokens, int pos) override;
    int n_ctx() const override { return m_n_ctx; }
    // Greedy decoding reads back the token id, not the logits (argmax.comp).
    bool has_device_argmax() const override { return true; }
    void set_cancel(const std::atomic<bool>* cancel) override { m_cancel = cancel; }
    ~VulkanRunner() override;

private:
    VulkanRunner(std::shared_ptr<LoadedModel> loaded, int n_ctx, VkDeviceSize block_limit,
                 VkDeviceSize align)
        : m_loaded(std::move(loaded)), m_n_ctx(n_ctx), m_arena(block_limit, align) {}
    Status run(std::span<const int32_t> tokens, int pos, Output out);
    Status submit_chunk(std::span<const int32_t> tokens, int pos, Output out);
    // EMBER_VULKAN_TIMELINE: the last decode step's timestamps, copied out to that file.
    void dump_timeline();
    // The split attention's counters start at zero (its shader leaves them so): the first
    // command buffer clears them (no submission of its own, so fault injection's "the n-th
    // submission after load" still counts forward passes).
    bool m_counters_zeroed = false;

    std::shared_ptr<LoadedModel> m_loaded;
    int m_n_ctx;
    int m_batch = 1;
    Arena m_arena;
    Buffer m_step, m_readback, m_timeline;
    bool m_logits_view = false;
    Buffers m_buf;
    CommandPool m_pool;
    Fence m_fence;
    VkCommandBuffer m_cmd_batch = VK_NULL_HANDLE;
    // A decode step (one token) depends on the position only through the step buffer, so its
    // command buffers are recorded once and replayed: [short context][argmax] (short: the
    // attention takes one run per head, and the output projection may fuse into it).
    VkCommandBuffer m_cmd_decode[2][2] = {};
    bool m_decode_recorded[2][2] = {};
    // EMBER_VULKAN_PROFILE=1: timestamps per dispatch for the batch buffer and the four decode
    // buffers, totals for batches and decode steps, printed when the runner goes.
    std::unique_ptr<Profiler> m_prof[5];
    ProfileTotals m_prof_totals[2];
    bool m_span = env_is("EMBER_VULKAN_PROFILE", "span");
    SubmitTimes m_times;  // span: the host's side of the decode submissions
    const std::atomic<bool>* m_cancel = nullptr;
    double m_batch_target_s = 0;  // whole batches unless EMBER_VULKAN_BATCH_MS is set
};

VulkanRunner::~VulkanRunner() {
    // A cancelled or failed wait may have left the last submission running: nothing below
    // (query pools, command buffers, buffers) may go before it ends.
    m_fence.drain();
    if (m_timeline.handle()) dump_timeline();
    if (!m_prof[0]) return;
    std::fprintf(stderr, "%s%s", format_profile("prompt batches", m_prof_totals[1]).c_str(),
                 format_profile("decode steps", m_prof_totals[0]).c_str());
    if (m_times.n)
        std::fprintf(stderr, "decode host: submit %.2f us, wait %.2f us, between %.2f us\n",
                     m_times.submit_us / m_times.n, m_times.wait_us / m_times.n,
                     m_times.between_us / std::max<double>(1, m_times.n - 1));
}

void VulkanRunner::dump_timeline() {
    Context& ctx = *m_loaded->ctx;
    const std::string path = env_str("EMBER_VULKAN_TIMELINE");
    auto host = Buffer::create(ctx.device(), kTimelineBytes, BufferKind::Readback);
    auto cmd = ctx.begin_oneoff();
    Status st = !host ? Status(host.error()) : !cmd ? Status(cmd.error()) : Status{};
    if (st) {
        VkBufferCopy c{0, 0, kTimelineBytes};
        vkCmdCopyBuffer(*cmd, m_timeline.handle(), host->handle(), 1, &c);
        memory_barrier(*cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                       VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
        st = ctx.end_oneoff_and_wait(*cmd);
    }
    FILE* f = st ? std::fopen(path.c_str(), "wb") : nullptr;
    const bool written = f && std::fwrite(host->mapped(), 1, kTimelineBytes, f) == kTimelineBytes;
    if (f) std::fclose(f);
    if (!written)
        EMBER_LOG_WARN("EMBER_VULKAN_TIMELINE: could not write '%s'%s%s", path.c_str(),
                       st ? "" : ": ", st ? "" : st.error().message.c_str());
}

Result<std::unique_ptr<Runner>> VulkanRunner::create(std::shared_ptr<LoadedModel> loaded,
                                                     int n_ctx) {
    Context& ctx = *loaded->ctx;
    const LlamaHParams& hp = loaded->model.hp;
    if (n_ctx <= 0) return make_error("vulkan.bad_context", "context size must be positive");
    const Dims d = dims_of(hp);
    uint64_t kv_layer = uint64_t(n_ctx) * d.Dkv * 2;
    if (kv_layer > ctx.max_range())
        return make_error("vulkan.context_too_large",
                          "a context of " + std::to_string(n_ctx) + " tokens needs " +
                              std::to_string(kv_layer) +
                              " bytes of K cache per layer; the device binds at most " +
                              std::to_string(ctx.max_range()) + " bytes per buffer");
    std::unique_ptr<VulkanRunner> r(
        new VulkanRunner(loaded, n_ctx, ctx.block_limit(), ctx.range_alignment()));
    const int B = batch_capacity(n_ctx);
    r->m_batch = B;
    auto f32 = [&](uint64_t n) { return r->m_arena.reserve(n * 4); };
    size_t sx = f32(uint64_t(B) * d.E), sxb = f32(uint64_t(B) * d.E), sq = f32(uint64_t(B) * d.Dq),
           sk = f32(uint64_t(B) * d.Dkv), sv = f32(uint64_t(B) * d.Dkv),
           satt = f32(uint64_t(B) * d.Dq), stmp = f32(uint64_t(B) * d.E),
           sg = f32(uint64_t(std::max(B, 2)) * d.F), su = f32(uint64_t(B) * d.F), slog = f32(d.V),
           sres = f32(1);
    const bool xh = ctx.adapter().coopmat_nv && B > 1;
    size_t sxh = xh ? r->m_arena.reserve(uint64_t(B) * std::max({d.E, d.Dq, d.F}) * 2) : 0;
    // op_matmul copies as many whole rows as fit, a range at a time.
    const uint64_t wh_bytes =
        B > 1
            ? std::min({loaded->model.weight_scratch, ctx.block_limit(), ctx.max_range()}) / 16 * 16
            : 0;
    const size_t swh = wh_bytes ? r->m_arena.reserve(wh_bytes) : 0;
    const AttentionShape dec = attention_shape(hp, 1);
    const uint32_t n_split = split_attention_enabled(hp) ? decode_attention_splits(dec, n_ctx) : 0;
    size_t spart = f32(std::max<uint64_t>(1, decode_attention_partials(dec, n_split))),
           scount = f32(hp.n_head);
    for (uint64_t bytes : {uint64_t(B) * d.E * 4, uint64_t(B) * d.F * 4, uint64_t(B) * d.Dq * 4})
        if (bytes > ctx.max_range())
            return make_error("vulkan.batch_too_large", "activation buffer of " +
                                                            std::to_string(bytes) +
                                                            " bytes exceeds maxStorageBufferRange");
    std::vector<size_t> skc, svc;
    for (size_t l = 0; l < hp.n_layer; ++l) {
        skc.push_back(r->m_arena.reserve(kv_layer));
        svc.push_back(r->m_arena.reserve(kv_layer));
    }
    EMBER_TRY(r->m_arena.allocate(ctx.device(), BufferKind::DeviceLocal));
    EMBER_ASSIGN_OR_RETURN(r->m_step,
                           Buffer::create(ctx.device(), step_bytes(B), BufferKind::Upload));
    EMBER_ASSIGN_OR_RETURN(r->m_readback,
                           Buffer::create(ctx.device(), uint64_t(d.V) * 4, BufferKind::Readback));
    Buffers& b = r->m_buf;
    b.x = r->m_arena.get(sx);
    b.xb = r->m_arena.get(sxb);
    b.q = r->m_arena.get(sq);
    b.k = r->m_arena.get(sk);
    b.v = r->m_arena.get(sv);
    b.att = r->m_arena.get(satt);
    b.tmp = r->m_arena.get(stmp);
    if (xh) b.xh = r->m_arena.get(sxh);
    if (wh_bytes) b.wh = r->m_arena.get(swh);
    b.g = r->m_arena.get(sg);
    b.u = r->m_arena.get(su);
    b.logits = r->m_arena.get(slog);
    b.result = r->m_arena.get(sres);
    b.step = r->m_step.range();
    b.attn_part = r->m_arena.get(spart);
    b.attn_count = r->m_arena.get(scount);
    b.attn_split = n_split;
    b.attn_grid = r->m_step.range().sub(step_grid_offset(B), 12);
    for (size_t l = 0; l < hp.n_layer; ++l) {
        b.k_cache.push_back(r->m_arena.get(skc[l]));
        b.v_cache.push_back(r->m_arena.get(svc[l]));
    }
    b.readback = r->m_readback.range();
    r->m_logits_view = r->m_readback.host_cached() && !env_is("EMBER_VULKAN_LOGITS_VIEW", "0");
    if (const std::string ms = env_str("EMBER_VULKAN_BATCH_MS"); !ms.empty())
        r->m_batch_target_s = std::max(0.0, std::atof(ms.c_str()) / 1000.0);
    b.logits_direct = !env_is("EMBER_VULKAN_LOGITS_DIRECT", "0");
    if (ctx.device().timeline()) {
        // Device-local: the timestamps' writes must not cross the bus during the step.
        EMBER_ASSIGN_OR_RETURN(
            r->m_timeline, Buffer::create(ctx.device(), kTimelineBytes, BufferKind::DeviceLocal));
        EMBER_ASSIGN_OR_RETURN(VkCommandBuffer cmd, ctx.begin_oneoff());
        vkCmdFillBuffer(cmd, r->m_timeline.handle(), 0, kTimelineBytes, 0);
        EMBER_TRY(ctx.end_oneoff_and_wait(cmd));
        b.timeline = r->m_timeline.range();
    }
    EMBER_ASSIGN_OR_RETURN(r->m_pool, CommandPool::create(ctx.device()));
    EMBER_ASSIGN_OR_RETURN(r->m_fence, Fence::create(ctx.device()));
    EMBER_ASSIGN_OR_RETURN(r->m_cmd_batch, r->m_pool.allocate());
    for (auto& row : r->m_cmd_decode) {
        for (VkCommandBuffer& c : row) {
            EMBER_ASSIGN_OR_RETURN(c, r->m_pool.allocate());
        }
    }
    if (env_is("EMBER_VULKAN_PROFILE", "1") || env_is("EMBER_VULKAN_PROFILE", "span")) {
        const uint32_t cap = 24 * uint32_t(hp.n_layer) + 32;
        for (auto& p : r->m_prof) {
            EMBER_ASSIGN_OR_RETURN(Profiler prof, Profiler::create(ctx.device(), cap));
            p = std::make_unique<Profiler>(std::move(prof));
        }
    }
    return std::unique_ptr<Runner>(std::move(r));
}

Status VulkanRunner::submit_chunk(std::span<const int32_t> tokens, int pos, Output out) {
    Context& ctx = *m_loaded->ctx;
    // The step buffer and the command buffers are the last submission's until it ends.
    m_fence.drain();
    auto* step = static_cast<uint32_t*>(m_step.mapped());
    step[0] = uint32_t(pos);
    step[1] = uint32_t(tokens.size());
    for (size_t i = 0; i < tokens.size(); ++i) step[2 + i] = uint32_t(tokens[i]);
    if (tokens.size() == 1 && m_buf.attn_split) {
        const auto grid = decode_attention_grid(attention_shape(m_loaded->model.hp, 1),
                                                m_buf.attn_split, uint32_t(pos) + 1);
        std::memcpy(step + step_grid_offset(m_batch) / 4, grid.data(), sizeof grid);
    }

    const int n = int(tokens.size());
    const bool decode = n == 1 && out != Output::None;
    const int di = out == Output::Argmax ? 1 : 0;
    const int si =
        decode && m_buf.attn_split &&
        decode_attention_one_run(attention_shape(m_loaded->model.hp, 1), uint32_t(pos) + 1);
    VkCommandBuffer cmd = decode ? m_cmd_decode[si][di] : m_cmd_batch;
    Profiler* prof = m_prof[decode ? 1 + 2 * si + di : 0].get();
    const bool zero = !m_counters_zeroed;
    if (zero || !decode || !m_decode_recorded[si][di]) {
        EMBER_VK_TRY(vkResetCommandBuffer(cmd, 0), "vkResetCommandBuffer");
        VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
        bi.flags = decode ? 0 : VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
        EMBER_VK_TRY(vkBeginCommandBuffer(cmd, &bi), "vkBeginCommandBuffer (forward)");
        // EMBER_VULKAN_PROFILE=span: one interval per submission, to hold against wall time.
        Recorder rec(ctx, cmd, m_span ? nullptr : prof);
        if (zero) rec.fill_zero(m_buf.attn_count);
        if (prof) prof->begin(cmd);
        Status st = record_forward(rec, m_loaded->model, m_buf, n, out, si == 1);
        if (prof && m_span) prof->mark(cmd, decode ? "decode step" : "prompt batch");
        VkResult er = vkEndCommandBuffer(cmd);
        EMBER_TRY(st);
        if (er != VK_SUCCESS) return vk_error(er, "vkEndCommandBuffer (forward)");
        // A decode buffer that also cleared the counters is recorded again next time.
        if (decode) m_decode_recorded[si][di] = !zero;
    }
    EMBER_TRY(submit_and_wait(ctx.device(), cmd, m_fence,
                              prof && decode && m_span ? &m_times : nullptr, m_cancel));
    m_counters_zeroed = true;
    if (prof) EMBER_TRY(prof->collect(m_prof_totals[decode ? 0 : 1]));
    return {};
}

Status VulkanRunner::run(std::span<const int32_t> tokens, int pos, Output out) {
    const uint32_t n_vocab = m_loaded->model.hp.n_vocab;
    if (tokens.empty()) return make_error("vulkan.empty_batch", "forward called with no tokens");
    if (pos < 0 || uint64_t(pos) + tokens.size() > uint64_t(m_n_ctx))
        return make_error("vulkan.context_full", "positions " + std::to_string(pos) + ".." +
                                                     std::to_string(pos + int(tokens.size()) - 1) +
                                                     " exceed the context of " +
                                                     std::to_string(m_n_ctx));
    for (int32_t t : tokens)
        if (t < 0 || uint32_t(t) >= n_vocab)
            return make_error("vulkan.bad_token", "token id " + std::to_string(t) +
                                                      " is outside the vocabulary (" +
                                                      std::to_string(n_vocab) + ")");
    // Prompt batches sized by the time a token took in the last one, so that a submission
    // stays short on a slow adapter (kBatchTargetS).
    for (size_t i = 0, n; i < tokens.size(); i += n) {
        const int left = int(std::min<size_t>(tokens.size() - i, size_t(m_batch)));
        n = tokens.size() == 1 ? 1
                               : size_t(next_batch_size(m_loaded->batch_token_s.load(),
                                                        m_batch_target_s, m_batch, left));
        const bool last = i + n == tokens.size();
        // A cancel also ends a prompt between its batches (a fence wait sees it only while it
        // waits).
        if (m_cancel && m_cancel->load())
            return make_error("vulkan.cancelled", "cancelled before a forward submission");
        const auto t0 = std::chrono::steady_clock::now();
        EMBER_TRY(submit_chunk(tokens.subspan(i, n), pos + int(i), last ? out : Output::None));
        if (tokens.size() > 1)
            m_loaded->batch_token_s.store(
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() /
                double(n));
    }
    return {};
}

Status VulkanRunner::forward(std::span<const int32_t> tokens, int pos, float* logits) {
    EMBER_TRY(run(tokens, pos, Output::Logits));
    std::memcpy(logits, m_readback.mapped(), size_t(m_loaded->model.hp.n_vocab) * 4);
    return {};
}

Result<std::span<const float>> VulkanRunner::forward_view(std::span<const int32_t> tokens,
                                                          int pos) {
    EMBER_TRY(run(tokens, pos, Output::Logits));
    return std::span<const float>(static_cast<const float*>(m_readback.mapped()),
                                  m_loaded->model.hp.n_vocab);
}

Result<int32_t> VulkanRunner::forward_argmax(std::span<const int32_t> tokens, int pos) {
    EMBER_TRY(run(tokens, pos, Output::Argmax));
    uint32_t idx;
    std::memcpy(&idx, m_readback.mapped(), 4);
    return int32_t(idx);
}

const DeviceTensor* need(const WeightStore& s, const Tensor& t, Status& st) {
    const DeviceTensor* d = s.find(t);
    if (!d && st.ok())
        st = make_error("vulkan.missing_tensor", "tensor '" + t.name + "' was not uploaded");
    return d;
}

}  // namespace

int next_batch_size(double token_s, double target_s, int capacity, int left) {
    double n = target_s <= 0 ? double(capacity) : token_s > 0 ? target_s / token_s : kFirstBatch;
    // Never below kFirstBatch: a short prompt stays one batch, so that its logits do not
    // depend on how busy the machine was (a split rounds earlier batches' K/V to F16).
    n = std::min({std::max(n, double(kFirstBatch)), double(capacity), double(left)});
    return std::max(1, int(n));
}

uint64_t weight_scratch_bytes(const Adapter& a, const LlamaModel& model) {
    uint64_t most = 0;
    for (const auto& L : model.layers)
        for (const Tensor* t : {&L.wq, &L.wk, &L.wv, &L.wo, &L.ffn_gate, &L.ffn_up, &L.ffn_down})
            most = std::max(most, dequant_scratch_bytes(a, t->type, t->rows(), t->cols()));
    return most;
}

RunnerSizes runner_sizes(const LlamaHParams& hp, int n_ctx, uint64_t weight_scratch) {
    const Dims d = dims_of(hp);
    const uint64_t B = uint64_t(batch_capacity(n_ctx));
    RunnerSizes s;
    s.kv_cache = 2ull * hp.n_layer * uint64_t(n_ctx) * d.Dkv * 2;
    const AttentionShape dec = attention_shape(hp, 1);
    const uint64_t part = decode_attention_partials(dec, decode_attention_splits(dec, n_ctx));
    s.scratch = 4 * (B * (3ull * d.E + 2ull * d.Dq + 2ull * d.Dkv + 2ull * d.F) + d.V + 1 + part +
                     hp.n_head) +
                step_bytes(int(B)) + weight_scratch;
    return s;
}

std::vector<const Tensor*> model_tensors(const LlamaModel& m) {
    std::vector<const Tensor*> t = {&m.tok_embd, &m.output_norm, &m.output};
    if (m.rope_freqs.present()) t.push_back(&m.rope_freqs);
    for (const auto& L : m.layers)
        for (const Tensor* p : {&L.attn_norm, &L.wq, &L.wk, &L.wv, &L.wo, &L.ffn_norm, &L.ffn_gate,
                                &L.ffn_up, &L.ffn_down})
            t.push_back(p);
    return t;
}

Result<DeviceModel> bind_device_model(const LlamaModel& m, const WeightStore& s, const Adapter& a) {
    Status st;
    DeviceModel dm;
    dm.hp = m.hp;
    dm.tok_embd = need(s, m.tok_embd, st);
    dm.output_norm = need(s, m.output_norm, st);
    dm.output = need(s, m.output, st);
    if (m.rope_freqs.present()) dm.rope_freqs = need(s, m.rope_freqs, st);
    for (const auto& L : m.layers) {
        dm.layers.push_back({need(s, L.attn_norm, st), need(s, L.wq, st), need(s, L.wk, st),
                             need(s, L.wv, st), need(s, L.wo, st), need(s, L.ffn_norm, st),
                             need(s, L.ffn_gate, st), need(s, L.ffn_up, st),
                             need(s, L.ffn_down, st)});
    }
    if (!st.ok()) return st.take_error();
    const bool allow = !env_is("EMBER_VULKAN_FUSED", "0");
    const bool f32_norms =
        std::all_of(dm.layers.begin(), dm.layers.end(), [](const DeviceLayer& L) {
            return L.attn_norm->type == GgmlType::F32 && L.ffn_norm->type == GgmlType::F32;
        });
    // matvec_fused.comp computes 4 rows per workgroup, all of one of Q, K, V.
    dm.fused_layers = allow && f32_norms && !dm.layers.empty() && dm.hp.head_dim % 2 == 0 &&
                      dm.hp.n_rot <= dm.hp.head_dim && (dm.hp.n_head * dm.hp.head_dim) % 4 == 0 &&
                      dm.hp.n_kv_dim() % 4 == 0;
    for (const DeviceLayer& L : dm.layers)
        dm.fused_layers = dm.fused_layers && fused_matvec_supports(a, {L.wq, L.wk, L.wv}) &&
                          fused_matvec_supports(a, {L.gate, L.up}) && L.gate->type == L.up->type &&
                          fused_matvec_supports(a, {L.wo}) && fused_matvec_supports(a, {L.down});
    dm.fused_output =
        allow && dm.output_norm->type == GgmlType::F32 && fused_matvec_supports(a, {dm.output});
    dm.weight_scratch = weight_scratch_bytes(a, m);
    return dm;
}

Result<std::unique_ptr<Runner>> create_runner(std::shared_ptr<LoadedModel> loaded, int n_ctx) {
    return VulkanRunner::create(std::move(loaded), n_ctx);
}

Status warm_up_pipelines(Context& ctx, const DeviceModel& model) {
    Recorder dry(ctx, VK_NULL_HANDLE);
    Buffers none;
    none.attn_split = split_attention_enabled(model.hp) ? 1 : 0;
    none.k_cache.assign(model.layers.size(), BufferRange{});
    none.v_cache.assign(model.layers.size(), BufferRange{});
    // A dry recorder binds no buffer; a non-null handle only says that the prompt matmuls' F16
    // input exists, so that the pipelines reading it are built here too.
    if (ctx.adapter().coopmat_nv) none.xh.buffer = VkBuffer(uintptr_t{1});
    if (ctx.adapter().coopmat_nv) none.wh = {VkBuffer(uintptr_t{1}), 0, kDequantScratchMax};
    EMBER_TRY(record_forward(dry, model, none, 1, Output::Logits));
    EMBER_TRY(record_forward(dry, model, none, 1, Output::Argmax));
    EMBER_TRY(record_forward(dry, model, none, 1, Output::Logits, true));  // short contexts
    EMBER_TRY(record_forward(dry, model, none, 2, Output::None));
    EMBER_TRY(record_forward(dry, model, none, 64, Output::None));  // whole-tile matmuls
    // Full batches: the 128 x 128 matmul tiles, whole and partial.
    EMBER_TRY(record_forward(dry, model, none, kMaxBatch, Output::None));
    EMBER_TRY(record_forward(dry, model, none, kMaxBatch - 1, Output::None));
    return ctx.pipelines().save_cache();
}

}  // namespace ember::vulkan
