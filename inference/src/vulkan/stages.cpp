#include "vulkan/stages.h"

#include <algorithm>
#include <cmath>
#include "vulkan/stages_family.h"
#include "vulkan/stages_family_decode.h"

namespace ember::vulkan {

Dims dims_of(const LlamaHParams& hp) {
    return {hp.n_embd, hp.n_head * hp.head_dim, hp.n_kv_dim(), hp.n_ff, hp.n_vocab};
}

AttentionShape attention_shape(const LlamaHParams& hp, int n) {
    return {n, int(hp.n_head), int(hp.n_head_kv), int(hp.head_dim),
            1.0f / std::sqrt(float(hp.head_dim))};
}

bool all_read_f16(const Recorder& rec, const Buffers& b, int n,
                  std::initializer_list<const DeviceTensor*> ws) {
    bool any = false;
    for (const DeviceTensor* w : ws) {
        if (!w) continue;
        if (!matmul_reads_f16(rec, *w, n)) return false;
        any = true;
    }
    return b.xh.size && any;
}

namespace {

// Whether a decode step's first QKV looks its token up itself (no embedding dispatch and no
// barrier after it).
bool folds_embedding(const Recorder& rec, const DeviceModel& m) {
    const DeviceLayer& L = m.layers[0];
    return fused_embed_supported(rec, *m.tok_embd, *L.wq, *L.wk, *L.wv);
}

// The decode steps' layers on the fused kernels: four or five dependent dispatches a layer.
void fused_layer_stages(const Recorder& rec, const DeviceModel& m, const Step& step,
                        bool fold_embed, std::vector<Stage>& s) {
    const AttentionShape shape = attention_shape(m.hp, 1);
    for (uint32_t l = 0; l < m.layers.size(); ++l) {
        const DeviceLayer& L = m.layers[l];
        s.push_back({StageOp::FusedQkv, l, "norm + qkv + rope + kv store", l == 0 && fold_embed});
        // The output projection inside the attention where one run per head covers the
        // context and the device and Wo allow it.
        if (step.short_context && attention_wo_supported(rec, shape, *L.wo)) {
            s.push_back({StageOp::AttentionWo, l, "attention + wo + residual"});
        } else {
            s.push_back({StageOp::Attention, l, "attention"});
            s.push_back({StageOp::FusedWo, l, "wo + residual"});
        }
        const bool apart = fused_gate_up_apart(rec, *L.gate, *L.up, *L.down);
        s.push_back({StageOp::FusedGateUp, l, apart ? "norm + gate/up" : "norm + gate/up + silu"});
        s.push_back({StageOp::FusedDown, l, apart ? "silu + down + residual" : "down + residual"});
    }
}

// The layers one op a dispatch, but for the residual adds, each fused with the norm after it.
void layer_stages(const DeviceModel& m, std::vector<Stage>& s) {
    for (uint32_t l = 0; l < m.layers.size(); ++l) {
        if (l == 0) s.push_back({StageOp::AttnNorm, l, "rms_norm"});
        s.push_back({StageOp::Qkv, l, "matmul q/k/v"});
        s.push_back({StageOp::RopeKvStore, l, "rope + kv store"});
        s.push_back({StageOp::Attention, l, "attention"});
        s.push_back({StageOp::Wo, l, "matmul wo"});
        s.push_back({StageOp::AddFfnNorm, l, "add + rms_norm"});
        s.push_back({StageOp::GateUp, l, "matmul gate/up"});
        s.push_back({StageOp::SiluMul, l, "silu_mul"});
        s.push_back({StageOp::Down, l, "matmul down"});
        if (l + 1 < m.layers.size())
            s.push_back({StageOp::AddAttnNorm, l, "add + rms_norm"});
        else
            s.push_back({StageOp::Add, l, "add"});
    }
}

std::vector<Stage> llama_stages(const Recorder& rec, const DeviceModel& m, const Step& step) {
    std::vector<Stage> s;
    const bool fused = step.n == 1 && m.fused_layers;
    const bool fold_embed = fused && m.first_layer == 0 && folds_embedding(rec, m);
    if (!fold_embed) s.push_back({StageOp::Embed, 0, "embed"});
    if (fused)
        fused_layer_stages(rec, m, step, fold_embed, s);
    else
        layer_stages(m, s);
    if (step.out == Output::None) return s;
    // Only the last token's logits are needed; the fused head writes them where the host reads
    // them, without a copy after it.
    if (m.fused_output && step.out == Output::Logits) {
        s.push_back({StageOp::OutputDirect, 0, "output norm + head"});
        return s;
    }
    s.push_back({StageOp::OutputHead, 0, "output norm + head"});
    if (step.out == Output::Argmax) s.push_back({StageOp::Argmax, 0, "argmax"});
    s.push_back({StageOp::Readback, 0, "readback"});
    return s;
}

// The F16 input of the matmuls ws (of equal widths): b.xh where the producer wrote it there
// (written, from all_read_f16), else the F16 copy of n rows of x where one of them reads it
// (op_matmul); out stays empty where none does.
Status f16_input(Recorder& rec, const Buffers& b, BufferRange x, int n,
                 std::initializer_list<const DeviceTensor*> ws, bool written, BufferRange& out) {
    out = written ? b.xh : BufferRange{};
    if (written || !b.xh.size ||
        std::none_of(ws.begin(), ws.end(), [&](auto* w) { return matmul_reads_f16(rec, *w, n); }))
        return {};
    rec.tag("f16 copy");
    EMBER_TRY(op_convert_f16(rec, x, b.xh, uint64_t(n) * uint64_t((*ws.begin())->cols)));
    rec.barrier();
    out = b.xh;
    return {};
}

// y += W x: the fused output and down projections with the residual add.
FusedMatvec residual(const DeviceTensor* w, BufferRange x, BufferRange y) {
    FusedMatvec f;
    f.mode = FusedMode::Add;
    f.w[0] = w;
    f.x = x;
    f.y = y;
    return f;
}

// Attention of one decoded token: split over positions where the shape allows.
Status decode_attention(Recorder& rec, const Buffers& b, size_t l, const AttentionShape& s) {
    if (b.attn_split)
        return op_attention_decode(rec, b.q, b.k_cache[l], b.v_cache[l], b.att, b.step, s,
                                   b.attn_part, b.attn_count, b.attn_split, b.attn_grid);
    return op_attention(rec, b.q, b.k_cache[l], b.v_cache[l], b.att, b.step, s);
}

// The context of one stage's recording.
struct At {
    Recorder& rec;
    const DeviceModel& m;
    const Buffers& b;
    int n;
    Output out;
    const Stage& st;
    const DeviceLayer& L() const { return m.layers[st.layer]; }
};

Status fused_qkv(const At& a) {
    const LlamaHParams& hp = a.m.hp;
    const DeviceLayer& L = a.L();
    FusedMatvec f;
    f.mode = FusedMode::Qkv;
    f.w[0] = L.wq;
    f.w[1] = L.wk;
    f.w[2] = L.wv;
    f.x = a.b.x;
    f.norm = L.attn_norm->pieces[0].range;
    f.eps = hp.rms_eps;
    f.y = a.b.q;
    f.k_cache = a.b.k_cache[a.st.layer];
    f.v_cache = a.b.v_cache[a.st.layer];
    f.step = a.b.step;
    f.ff = a.m.rope_freqs ? a.m.rope_freqs->pieces[0].range : BufferRange{};
    f.head_dim = hp.head_dim;
    f.n_rot = hp.n_rot;
    f.freq_base = hp.rope_freq_base;
    if (a.st.embed) f.embed = a.m.tok_embd;
    return op_matvec_fused(a.rec, f);
}

Status fused_gate_up(const At& a, bool apart) {
    const DeviceLayer& L = a.L();
    FusedMatvec f;
    f.mode = apart ? FusedMode::GateUp : FusedMode::Silu;
    f.w[0] = L.gate;
    f.w[1] = L.up;
    f.x = a.b.x;
    f.norm = L.ffn_norm->pieces[0].range;
    f.eps = a.m.hp.rms_eps;
    f.y = a.b.g;
    return op_matvec_fused(a.rec, f);
}

Status output_head(const At& a, BufferRange y) {
    const LlamaHParams& hp = a.m.hp;
    const uint32_t E = hp.n_embd;
    if (a.m.fused_output) {
        FusedMatvec f;
        f.mode = FusedMode::Store;
        f.w[0] = a.m.output;
        f.x = a.b.x;
        f.x_off = uint32_t(a.n - 1) * E;
        f.norm = a.m.output_norm->pieces[0].range;
        f.eps = hp.rms_eps;
        f.y = y;
        return op_matvec_fused(a.rec, f);
    }
    EMBER_TRY(op_rms_norm(a.rec, a.b.x, uint32_t(a.n - 1) * E, a.m.output_norm->pieces[0].range,
                          a.b.xb, 0, int(E), 1, int(E), hp.rms_eps));
    a.rec.barrier();
    return op_matmul(a.rec, *a.m.output, a.b.xb, 0, y, 0, 1);
}

// The ops of the unfused layers' stages.
Status layer_stage(const At& a) {
    Recorder& rec = a.rec;
    const Buffers& b = a.b;
    const LlamaHParams& hp = a.m.hp;
    const Dims d = dims_of(hp);
    const DeviceLayer& L = a.L();
    const int n = a.n;
    const size_t l = a.st.layer;
    auto qkv_f16 = [&](const DeviceLayer& x) {
        return all_read_f16(rec, b, n, {x.wq, x.wk, x.wv});
    };
    BufferRange xh;
    switch (a.st.op) {
        case StageOp::AttnNorm: {
            const bool f16 = qkv_f16(L);
            return op_rms_norm(rec, b.x, 0, L.attn_norm->pieces[0].range, f16 ? b.xh : b.xb, 0,
                               int(d.E), n, int(d.E), hp.rms_eps, f16);
        }
        case StageOp::Qkv:
            EMBER_TRY(f16_input(rec, b, b.xb, n, {L.wq, L.wk, L.wv}, qkv_f16(L), xh));
            rec.tag(a.st.label);
            EMBER_TRY(op_matmul(rec, *L.wq, b.xb, 0, b.q, 0, n, xh, b.wh));
            EMBER_TRY(op_matmul(rec, *L.wk, b.xb, 0, b.k, 0, n, xh, b.wh));
            return op_matmul(rec, *L.wv, b.xb, 0, b.v, 0, n, xh, b.wh);
        case StageOp::RopeKvStore:
            return op_rope_kv_store(
                rec, b.q, b.k, b.v, b.k_cache[l], b.v_cache[l], b.step,
                a.m.rope_freqs ? a.m.rope_freqs->pieces[0].range : BufferRange{}, n, int(hp.n_head),
                int(hp.n_head_kv), int(hp.head_dim), int(hp.n_rot), hp.rope_freq_base);
        case StageOp::Wo:
            EMBER_TRY(f16_input(rec, b, b.att, n, {L.wo}, false, xh));
            rec.tag(a.st.label);
            return op_matmul(rec, *L.wo, b.att, 0, b.tmp, 0, n, xh, b.wh);
        case StageOp::AddFfnNorm: {
            const bool f16 = all_read_f16(rec, b, n, {L.gate, L.up});
            return op_add_rms_norm(rec, b.x, b.tmp, L.ffn_norm->pieces[0].range, f16 ? b.xh : b.xb,
                                   int(d.E), n, hp.rms_eps, f16);
        }
        case StageOp::GateUp:
            EMBER_TRY(f16_input(rec, b, b.xb, n, {L.gate, L.up},
                                all_read_f16(rec, b, n, {L.gate, L.up}), xh));
            rec.tag(a.st.label);
            EMBER_TRY(op_matmul(rec, *L.gate, b.xb, 0, b.g, 0, n, xh, b.wh));
            return op_matmul(rec, *L.up, b.xb, 0, b.u, 0, n, xh, b.wh);
        case StageOp::SiluMul: {
            const bool f16 = all_read_f16(rec, b, n, {L.down});
            return op_silu_mul(rec, b.g, b.u, f16 ? b.xh : b.g, uint32_t(n) * d.F, f16);
        }
        case StageOp::Down:
            EMBER_TRY(f16_input(rec, b, b.g, n, {L.down}, all_read_f16(rec, b, n, {L.down}), xh));
            rec.tag(a.st.label);
            return op_matmul(rec, *L.down, b.g, 0, b.tmp, 0, n, xh, b.wh);
        case StageOp::AddAttnNorm: {
            const DeviceLayer& next = a.m.layers[l + 1];
            const bool f16 = qkv_f16(next);
            return op_add_rms_norm(rec, b.x, b.tmp, next.attn_norm->pieces[0].range,
                                   f16 ? b.xh : b.xb, int(d.E), n, hp.rms_eps, f16);
        }
        case StageOp::Add:
            return op_add(rec, b.x, b.tmp, uint32_t(n) * d.E);
        default:
            return make_error("vulkan.bad_stage", "not a layer stage");
    }
}

// Records one stage and the barrier after it.
Status record_stage(const At& a) {
    Recorder& rec = a.rec;
    const Buffers& b = a.b;
    const size_t l = a.st.layer;
    const DeviceLayer* L = a.m.layers.empty() ? nullptr : &a.L();
    rec.tag(a.st.label);
    switch (a.st.op) {
        case StageOp::Embed:
            EMBER_TRY(op_get_rows(rec, *a.m.tok_embd, b.step, b.x, a.n));
            break;
        case StageOp::Attention:
            // A prompt attends over its own unrounded K/V; a single decoded token reads the
            // F16 cache like the fused decode path, so both decode paths agree. A layer of F32
            // weights keeps F32 attention, as the families' do (stages_family.cpp).
            if (a.n == 1) {
                EMBER_TRY(decode_attention(rec, b, l, attention_shape(a.m.hp, 1)));
            } else {
                EMBER_TRY(op_attention(rec, b.q, b.k_cache[l], b.v_cache[l], b.att, b.step,
                                       attention_shape(a.m.hp, a.n), b.k, b.v,
                                       L->wq->type == GgmlType::F32));
            }
            break;
        case StageOp::FusedQkv:
            EMBER_TRY(fused_qkv(a));
            break;
        case StageOp::FusedWo:
            EMBER_TRY(op_matvec_fused(rec, residual(L->wo, b.att, b.x)));
            break;
        case StageOp::AttentionWo:
            EMBER_TRY(op_attention_wo(rec, b.q, b.k_cache[l], b.v_cache[l], b.x, b.step,
                                      attention_shape(a.m.hp, 1), *L->wo));
            break;
        case StageOp::FusedGateUp:
            EMBER_TRY(fused_gate_up(a, fused_gate_up_apart(rec, *L->gate, *L->up, *L->down)));
            break;
        case StageOp::FusedDown: {
            FusedMatvec down = residual(L->down, b.g, b.x);
            down.silu_in = fused_gate_up_apart(rec, *L->gate, *L->up, *L->down);
            EMBER_TRY(op_matvec_fused(rec, down));
            break;
        }
        case StageOp::OutputDirect:
            EMBER_TRY(output_head(a, b.readback));
            rec.barrier_to_host();
            return {};
        case StageOp::OutputHead:
            EMBER_TRY(output_head(a, b.logits));
            break;
        case StageOp::Argmax:
            // (Its readback follows: no compute reads the result.)
            return op_argmax(rec, b.logits, 0, a.m.hp.n_vocab, b.result);
        case StageOp::Input:
            // The CPU's residual stream (written by the host before the submission).
            if (rec.cmd()) {
                VkBufferCopy c{b.input.offset, b.x.offset, uint64_t(a.n) * a.m.hp.n_embd * 4};
                vkCmdCopyBuffer(rec.cmd(), b.input.buffer, b.x.buffer, 1, &c);
            }
            rec.transfer_to_compute();
            return {};
        case StageOp::Readback: {
            // The step's result to host-visible memory: the token id after an argmax, else
            // the logits.
            rec.barrier_to_transfer();
            if (rec.cmd()) {
                const bool id = a.out == Output::Argmax;
                const BufferRange& src = id ? b.result : b.logits;
                VkBufferCopy c{src.offset, 0, id ? 4 : uint64_t(a.m.hp.n_vocab) * 4};
                vkCmdCopyBuffer(rec.cmd(), src.buffer, b.readback.buffer, 1, &c);
            }
            rec.barrier_to_host();
            return {};
        }
        default:
            EMBER_TRY(layer_stage(a));
            break;
    }
    rec.barrier();
    return {};
}

// Partial offload: the stages of the layers from m.first_layer on, starting from the residual
// stream that the CPU's layers left (Input) instead of the embedding. The unfused Llama layers
// norm the next layer's input in the previous one's last stage, so that one becomes the first
// GPU layer's own norm.
std::vector<Stage> from_hidden(const std::vector<Stage>& all, uint32_t first) {
    std::vector<Stage> s = {{StageOp::Input, first, "input from the CPU"}};
    for (const Stage& st : all) {
        const bool head = st.op == StageOp::OutputHead || st.op == StageOp::OutputDirect ||
                          st.op == StageOp::Argmax || st.op == StageOp::Readback ||
                          st.op == StageOp::FamilySoftcap;
        if (st.op == StageOp::Embed || st.op == StageOp::FamilyEmbedScale) continue;
        if (head || st.layer >= first)
            s.push_back(st);
        else if (st.op == StageOp::AddAttnNorm && st.layer + 1 == first)
            s.push_back({StageOp::AttnNorm, first, "rms_norm"});
    }
    return s;
}

}  // namespace

std::vector<Stage> forward_stages(const Recorder& rec, const DeviceModel& m, const Step& step) {
    // (The families' decode steps on the fused kernels: stages_family_decode.cpp.)
    const bool family = uses_family_stages(m.hp);
    std::vector<Stage> s = !family                         ? llama_stages(rec, m, step)
                           : step.n == 1 && m.fused_layers ? family_decode_stages(rec, m, step)
                                                           : family_stages(m, step);
    return m.first_layer ? from_hidden(s, m.first_layer) : s;
}

Status record_stages(Recorder& rec, const DeviceModel& m, const Buffers& b, const Step& step,
                     const std::vector<Stage>& stages) {
    for (const Stage& st : stages) {
        if (is_family_stage(st.op))
            EMBER_TRY(record_family_stage(rec, m, b, step.n, st));
        else if (is_family_decode_stage(st.op))
            EMBER_TRY(record_family_decode_stage(rec, m, b, st));
        else
            EMBER_TRY(record_stage({rec, m, b, step.n, step.out, st}));
    }
    return {};
}

}  // namespace ember::vulkan
