// A session's state on the device (KV cache, activations, command buffers) and the forward
// pass it runs: the plan's stages recorded into command buffers, submitted batch by batch.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

#include "vulkan/forward.h"
#include "vulkan/stages_family.h"
namespace ember::vulkan {
namespace {

// What a forward pass returns: the logits (host-visible memory the runner owns, valid until its
// next forward pass) or the argmax's token id.
struct Forwarded {
    std::span<const float> logits;
    int32_t token = -1;
};

class VulkanRunner final : public Runner {
public:
    static Result<std::unique_ptr<Runner>> create(std::shared_ptr<LoadedModel> loaded, int n_ctx);
    // The one forward pass: tokens at positions pos.., then the logits or the argmax (out).
    Result<Forwarded> forward(std::span<const int32_t> tokens, int pos, Output out);
    // Runner's entry points, each a view of the one above.
    Status forward(std::span<const int32_t> tokens, int pos, float* logits) override;
    Result<int32_t> forward_argmax(std::span<const int32_t> tokens, int pos) override;
    // Where the readback memory is host-cached, the logits are read where the GPU wrote them:
    // the copy of 32,000 of them cost 0.2-0.4% of a 7B Q4_0 token on the H200 and 0.9-1.6% of
    // a TinyLlama one.
    bool has_logits_view() const override { return m_logits_view; }
    Result<std::span<const float>> forward_view(std::span<const int32_t> tokens, int pos) override;
    int n_ctx() const override { return m_n_ctx; }
    // Greedy decoding reads back the token id, not the logits (argmax.comp).
    bool has_device_argmax() const override { return true; }
    // Partial offload: the next forward pass starts from the CPU layers' residual stream.
    void set_hidden_input(const float* hidden) override { m_hidden = hidden; }
    void set_cancel(const std::atomic<bool>* cancel) override { m_cancel = cancel; }
    void set_profiling(bool on) override;
    // Partial offload with the CPU's layers' weights also here (LoadedModel::whole): a prompt
    // given no residual stream runs every layer, their K/V rows in host-visible memory.
    bool runs_whole_prompts() const override { return m_loaded->has_whole; }
    uint16_t* kv_f16(uint32_t l, bool value) override;
    ~VulkanRunner() override;

private:
    VulkanRunner(std::shared_ptr<LoadedModel> loaded, int n_ctx, VkDeviceSize block_limit,
                 VkDeviceSize align)
        : m_loaded(std::move(loaded)),
          m_n_ctx(n_ctx),
          m_arena(block_limit, align),
          m_host_kv(block_limit, align) {}
    Status allocate_buffers();
    Status check_input(std::span<const int32_t> tokens, int pos) const;
    Status submit_chunk(std::span<const int32_t> tokens, int pos, Output out);
    // The split attention's counters start at zero (its shader leaves them so): the first
    // command buffer clears them (no submission of its own, so fault injection's "the n-th
    // submission after load" still counts forward passes).
    bool m_counters_zeroed = false;

    std::shared_ptr<LoadedModel> m_loaded;
    int m_n_ctx;
    int m_batch = 1;
    Arena m_arena;
    // The CPU's layers' K and V ([2 * l + value] slots) where prompts run whole: host-visible
    // (cached) memory, so the CPU's runner converts rows in place (Runner::copy_kv).
    Arena m_host_kv;
    std::vector<size_t> m_host_kv_slots;
    Buffer m_step, m_readback;
    Buffer m_input;                   // host-visible [batch][E] (partial offload), else none
    const float* m_hidden = nullptr;  // set_hidden_input's [n][E] for the next forward pass
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
    bool m_profiling = true;  // Session::set_profiling: off, submissions are not collected
    bool m_span = false;
    SubmitTimes m_times;  // span: the host's side of the decode submissions
    const std::atomic<bool>* m_cancel = nullptr;
    double m_batch_target_s = 0;  // Plan::batching: 0 (whole batches) or the time a batch takes
};

VulkanRunner::~VulkanRunner() {
    // A cancelled or failed wait may have left the last submission running: nothing below
    // (query pools, command buffers, buffers) may go before it ends.
    m_fence.drain();
    if (!m_prof[0]) return;
    std::fprintf(stderr, "%s%s", format_profile("prompt batches", m_prof_totals[1]).c_str(),
                 format_profile("decode steps", m_prof_totals[0]).c_str());
    if (m_times.n)
        std::fprintf(stderr, "decode host: submit %.2f us, wait %.2f us, between %.2f us\n",
                     m_times.submit_us / m_times.n, m_times.wait_us / m_times.n,
                     m_times.between_us / double(std::max<uint64_t>(1, m_times.n_between)));
}

void VulkanRunner::set_profiling(bool on) {
    // The host's time between submissions resumes with the next one, not across the pause.
    if (on && !m_profiling) m_times.last_done = -1;
    m_profiling = on;
}

// The activations, the KV cache and the step and readback buffers (shapes: stages.h).
Status VulkanRunner::allocate_buffers() {
    Context& ctx = *m_loaded->ctx;
    const LlamaHParams& hp = m_loaded->model.hp;
    const Dims d = dims_of(hp);
    const int B = m_batch;
    const uint64_t kv_layer = uint64_t(m_n_ctx) * d.Dkv * 2;
    auto f32 = [&](uint64_t n) { return m_arena.reserve(n * 4); };
    size_t sx = f32(uint64_t(B) * d.E), sxb = f32(uint64_t(B) * d.E), sq = f32(uint64_t(B) * d.Dq),
           sk = f32(uint64_t(B) * d.Dkv), sv = f32(uint64_t(B) * d.Dkv),
           satt = f32(uint64_t(B) * d.Dq), stmp = f32(uint64_t(B) * d.E),
           sg = f32(uint64_t(std::max(B, 2)) * d.F), su = f32(uint64_t(B) * d.F), slog = f32(d.V),
           sres = f32(1);
    const bool xh = ctx.adapter().coopmat_nv && B > 1;
    size_t sxh = xh ? m_arena.reserve(uint64_t(B) * std::max({d.E, d.Dq, d.F}) * 2) : 0;
    // op_matmul copies as many whole rows as fit, a range at a time.
    const uint64_t wh_bytes =
        B > 1 ? std::min({m_loaded->model.weight_scratch, ctx.block_limit(), ctx.max_range()}) /
                    16 * 16
              : 0;
    const size_t swh = wh_bytes ? m_arena.reserve(wh_bytes) : 0;
    const uint32_t n_split = decode_attention_split(m_loaded->model.plan, hp, m_n_ctx);
    const AttentionShape dec = attention_shape(hp, 1);
    // The decode attention's count a head, then Q/K/V's count of each head's rows
    // (head_count) at the next bound offset the device allows (a multiple of 16 at least: 6
    // heads' counts end at 24 bytes).
    const uint64_t align = effective_alignment(ctx.adapter().props.limits),
                   head_count_off = align_up(4 * uint64_t(hp.n_head), align);
    size_t spart = f32(std::max<uint64_t>(1, decode_attention_partials(dec, n_split))),
           scount = m_arena.reserve(head_count_off + 4 * uint64_t(hp.n_head + hp.n_head_kv));
    for (uint64_t bytes : {uint64_t(B) * d.E * 4, uint64_t(B) * d.F * 4, uint64_t(B) * d.Dq * 4})
        if (bytes > ctx.max_range())
            return make_error("vulkan.batch_too_large", "activation buffer of " +
                                                            std::to_string(bytes) +
                                                            " bytes exceeds maxStorageBufferRange");
    // A sliding-window layer of the other families keeps a ring of its window's positions.
    const bool family = uses_family_stages(hp);
    std::vector<size_t> skc, svc;
    std::vector<uint32_t> rings;
    // The CPU's layers keep no cache here, or (whole prompts) one in host memory.
    const uint32_t first = m_loaded->model.first_layer;
    const bool whole = m_loaded->has_whole;
    for (uint32_t l = 0; l < hp.n_layer; ++l) {
        // (The host copy holds every position, as the CPU's cache does, rows alike: no ring.)
        const bool ring = family && !(l < first && whole);
        rings.push_back(ring ? family_kv_ring(hp, l, m_n_ctx, B) : 0);
        const uint64_t bytes = rings.back() ? uint64_t(rings.back()) * d.Dkv * 2 : kv_layer;
        if (l < first && whole)
            for (int v = 0; v < 2; ++v) m_host_kv_slots.push_back(m_host_kv.reserve(bytes));
        skc.push_back(m_arena.reserve(l < first ? 0 : bytes));
        svc.push_back(m_arena.reserve(l < first ? 0 : bytes));
    }
    const uint64_t wide = family ? uint64_t(B) * family_wide_floats(hp) : 0;
    const size_t swide = wide ? f32(wide) : 0;
    const uint64_t qk_ss = family ? family_qk_ss_floats(hp) : 0;
    const size_t sqk = qk_ss ? f32(qk_ss) : 0;
    EMBER_TRY(m_arena.allocate(ctx.device(), BufferKind::DeviceLocal));
    EMBER_TRY(m_host_kv.allocate(ctx.device(), BufferKind::Readback));
    EMBER_ASSIGN_OR_RETURN(m_step, Buffer::create(ctx.device(), step_bytes(B), BufferKind::Upload));
    EMBER_ASSIGN_OR_RETURN(m_readback,
                           Buffer::create(ctx.device(), uint64_t(d.V) * 4, BufferKind::Readback));
    if (first) {
        EMBER_ASSIGN_OR_RETURN(
            m_input, Buffer::create(ctx.device(), uint64_t(B) * d.E * 4, BufferKind::Upload));
        m_buf.input = m_input.range();
    }
    Buffers& b = m_buf;
    b.x = m_arena.get(sx);
    b.xb = m_arena.get(sxb);
    b.q = m_arena.get(sq);
    b.k = m_arena.get(sk);
    b.v = m_arena.get(sv);
    b.att = m_arena.get(satt);
    b.tmp = m_arena.get(stmp);
    if (xh) b.xh = m_arena.get(sxh);
    if (wh_bytes) b.wh = m_arena.get(swh);
    b.g = m_arena.get(sg);
    b.u = m_arena.get(su);
    b.logits = m_arena.get(slog);
    b.result = m_arena.get(sres);
    b.step = m_step.range();
    b.attn_part = m_arena.get(spart);
    b.attn_count = m_arena.get(scount);
    b.head_count = b.attn_count.sub(head_count_off, 4 * (hp.n_head + hp.n_head_kv));
    b.attn_split = n_split;
    b.attn_grid = m_step.range().sub(step_grid_offset(B), 12);
    for (size_t l = 0; l < hp.n_layer; ++l) {
        const bool host = l < first && whole;
        b.k_cache.push_back(host ? m_host_kv.get(m_host_kv_slots[2 * l]) : m_arena.get(skc[l]));
        b.v_cache.push_back(host ? m_host_kv.get(m_host_kv_slots[2 * l + 1]) : m_arena.get(svc[l]));
    }
    b.kv_ring = rings;
    if (wide) b.wide = m_arena.get(swide);
    if (qk_ss) b.qk_ss = m_arena.get(sqk);
    b.rope_ff = family_rope_factors(m_loaded->model, m_n_ctx);
    b.readback = m_readback.range();
    return {};
}

Result<std::unique_ptr<Runner>> VulkanRunner::create(std::shared_ptr<LoadedModel> loaded,
                                                     int n_ctx) {
    Context& ctx = *loaded->ctx;
    const LlamaHParams& hp = loaded->model.hp;
    if (n_ctx <= 0) return make_error("vulkan.bad_context", "context size must be positive");
    const uint64_t kv_layer = uint64_t(n_ctx) * dims_of(hp).Dkv * 2;
    if (kv_layer > ctx.max_range())
        return make_error("vulkan.context_too_large",
                          "a context of " + std::to_string(n_ctx) + " tokens needs " +
                              std::to_string(kv_layer) +
                              " bytes of K cache per layer; the device binds at most " +
                              std::to_string(ctx.max_range()) + " bytes per buffer");
    std::unique_ptr<VulkanRunner> r(
        new VulkanRunner(loaded, n_ctx, ctx.block_limit(), ctx.range_alignment()));
    r->m_batch = batch_capacity(n_ctx);
    EMBER_TRY(r->allocate_buffers());
    r->m_logits_view = r->m_readback.host_cached();
    const Plan& plan = loaded->model.plan;
    r->m_batch_target_s = plan.batching == Batching::Timed ? plan.batch_target_s : 0;
    EMBER_ASSIGN_OR_RETURN(r->m_pool, CommandPool::create(ctx.device()));
    EMBER_ASSIGN_OR_RETURN(r->m_fence, Fence::create(ctx.device()));
    EMBER_ASSIGN_OR_RETURN(r->m_cmd_batch, r->m_pool.allocate());
    for (auto& row : r->m_cmd_decode) {
        for (VkCommandBuffer& c : row) {
            EMBER_ASSIGN_OR_RETURN(c, r->m_pool.allocate());
        }
    }
    r->m_span = plan.profile == Overrides::Profile::Span;
    if (plan.profile != Overrides::Profile::Off) {
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
    // A prompt without the CPU's residual stream runs every layer (runs_whole_prompts). The
    // stream is this chunk's only: a later call without one must not see it.
    const float* hidden = std::exchange(m_hidden, nullptr);
    const bool whole = !hidden && m_loaded->has_whole;
    const DeviceModel& model = whole ? m_loaded->whole : m_loaded->model;
    // The step buffer and the command buffers are the last submission's until it ends.
    m_fence.drain();
    auto* step = static_cast<uint32_t*>(m_step.mapped());
    step[0] = uint32_t(pos);
    step[1] = uint32_t(tokens.size());
    for (size_t i = 0; i < tokens.size(); ++i) step[2 + i] = uint32_t(tokens[i]);
    if (model.first_layer)
        std::memcpy(m_input.mapped(), hidden, tokens.size() * model.hp.n_embd * sizeof(float));
    if (tokens.size() == 1 && m_buf.attn_split) {
        const auto grid = decode_attention_grid(model.plan, attention_shape(model.hp, 1),
                                                m_buf.attn_split, uint32_t(pos) + 1);
        std::memcpy(step + step_grid_offset(m_batch) / 4, grid.data(), sizeof grid);
    }

    const int n = int(tokens.size());
    const bool decode = n == 1 && out != Output::None && !whole;
    const int di = out == Output::Argmax ? 1 : 0;
    const int si =
        decode && m_buf.attn_split &&
        decode_attention_one_run(model.plan, attention_shape(model.hp, 1), uint32_t(pos) + 1);
    VkCommandBuffer cmd = decode ? m_cmd_decode[si][di] : m_cmd_batch;
    Profiler* prof = m_prof[decode ? 1 + 2 * si + di : 0].get();
    const bool zero = !m_counters_zeroed;
    if (zero || !decode || !m_decode_recorded[si][di]) {
        EMBER_VK_TRY(vkResetCommandBuffer(cmd, 0), "vkResetCommandBuffer");
        VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
        bi.flags = decode ? 0 : VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
        EMBER_VK_TRY(vkBeginCommandBuffer(cmd, &bi), "vkBeginCommandBuffer (forward)");
        // EMBER_VULKAN_PROFILE=span: one interval per submission, to hold against wall time.
        Recorder rec(ctx, cmd, model.plan, m_span ? nullptr : prof);
        if (zero) rec.fill_zero(m_buf.attn_count);
        if (prof) prof->begin(cmd);
        const Step s{n, out, si == 1};
        Status st = record_stages(rec, model, m_buf, s, forward_stages(rec, model, s));
        if (prof && m_span) prof->mark(cmd, decode ? "decode step" : "prompt batch");
        // The CPU's layers' K/V rows are read by the host after this submission.
        if (whole) rec.barrier_to_host();
        VkResult er = vkEndCommandBuffer(cmd);
        EMBER_TRY(st);
        if (er != VK_SUCCESS) return vk_error(er, "vkEndCommandBuffer (forward)");
        // A decode buffer that also cleared the counters is recorded again next time.
        if (decode) m_decode_recorded[si][di] = !zero;
    }
    EMBER_TRY(submit_and_wait(ctx.device(), cmd, m_fence,
                              prof && decode && m_span && m_profiling ? &m_times : nullptr,
                              m_cancel));
    m_counters_zeroed = true;
    // Off (set_profiling), the timestamps are written as recorded but not read.
    ProfileTotals& totals = m_prof_totals[decode ? 0 : 1];
    if (prof && m_profiling) EMBER_TRY(prof->collect(totals));
    if (prof && !m_profiling) ++totals.left_out;
    return {};
}

Status VulkanRunner::check_input(std::span<const int32_t> tokens, int pos) const {
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
    return {};
}

uint16_t* VulkanRunner::kv_f16(uint32_t l, bool value) {
    if (size_t(2 * l + 1) >= m_host_kv_slots.size()) return nullptr;
    // The host may touch the rows only once the device is done with them.
    m_fence.drain();
    return reinterpret_cast<uint16_t*>(m_host_kv.mapped(m_host_kv_slots[2 * l + (value ? 1 : 0)]));
}

Result<Forwarded> VulkanRunner::forward(std::span<const int32_t> tokens, int pos, Output out) {
    EMBER_TRY(check_input(tokens, pos));
    const float* hidden = std::exchange(m_hidden, nullptr);
    const uint32_t E = m_loaded->model.hp.n_embd;
    if (m_loaded->model.first_layer && !hidden && !m_loaded->has_whole)
        return make_error("internal", "forward: this runner starts at layer " +
                                          std::to_string(m_loaded->model.first_layer) +
                                          " and was given no residual stream");
    // Prompt batches: whole ones (up to the runner's capacity), or, where the plan sizes them
    // by time, what fits the target at the time a token took in the last one, so that a
    // submission stays short on a slow adapter (kBatchTargetS).
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
        m_hidden = hidden ? hidden + i * E : nullptr;
        EMBER_TRY(submit_chunk(tokens.subspan(i, n), pos + int(i), last ? out : Output::None));
        if (tokens.size() > 1)
            m_loaded->batch_token_s.store(
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() /
                double(n));
    }
    Forwarded f;
    if (out == Output::Argmax) {
        uint32_t idx;
        std::memcpy(&idx, m_readback.mapped(), 4);
        f.token = int32_t(idx);
    } else if (out == Output::Logits) {
        f.logits = std::span<const float>(static_cast<const float*>(m_readback.mapped()),
                                          m_loaded->model.hp.n_vocab);
    }
    return f;
}

Status VulkanRunner::forward(std::span<const int32_t> tokens, int pos, float* logits) {
    EMBER_ASSIGN_OR_RETURN(Forwarded f, forward(tokens, pos, Output::Logits));
    std::memcpy(logits, f.logits.data(), f.logits.size_bytes());
    return {};
}

Result<std::span<const float>> VulkanRunner::forward_view(std::span<const int32_t> tokens,
                                                          int pos) {
    EMBER_ASSIGN_OR_RETURN(Forwarded f, forward(tokens, pos, Output::Logits));
    return f.logits;
}

Result<int32_t> VulkanRunner::forward_argmax(std::span<const int32_t> tokens, int pos) {
    EMBER_ASSIGN_OR_RETURN(Forwarded f, forward(tokens, pos, Output::Argmax));
    return f.token;
}

}  // namespace

Result<std::unique_ptr<Runner>> create_runner(std::shared_ptr<LoadedModel> loaded, int n_ctx) {
    return VulkanRunner::create(std::move(loaded), n_ctx);
}

}  // namespace ember::vulkan
