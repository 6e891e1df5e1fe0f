#version 450
// Causal grouped-query attention of one query (head h, token t) over an F16 KV cache, as
// attention.comp's one-workgroup-per-(head, token) kernel does (online softmax over tiles of
// WG_SIZE positions), with what the other families add: scores soft-capped (cap * tanh(s /
// cap), Gemma 2), a sliding window (query at position i sees keys j with i - window < j, and
// reads no key before them), heads of up to 512 dimensions (Gemma: 256), and Q and the batch's
// own F32 K/V read at their own offsets and strides (Phi-3's fused attn_qkv).
// Query t sits at position step_pos0 + t and sees positions [first, step_pos0 + t]. A sliding
// window's cache may be a ring of kv_ring rows (position p in row p % kv_ring).
#extension GL_GOOGLE_include_directive : require
#include "include/common.glsl"

#define MAX_D_PER_THREAD 8

layout(binding = 0) readonly buffer QBuf { float q[]; };
layout(binding = 1) readonly buffer KBuf { float16_t kc[]; };
layout(binding = 2) readonly buffer VBuf { float16_t vc[]; };
layout(binding = 3) writeonly buffer OBuf { float o[]; };
layout(binding = 4) readonly buffer KBatch { float kbatch[]; };
layout(binding = 5) readonly buffer VBatch { float vbatch[]; };
DECLARE_STEP_BUFFER(6)

layout(push_constant) uniform PC {
    uint n_head;
    uint n_head_kv;
    uint head_dim;
    uint q_off;
    uint q_stride;   // floats between tokens of q
    uint kv_stride;  // halfs between positions of the cache
    uint o_stride;   // floats between tokens of o
    float scale;
    float softcap;   // > 0: scores soft-capped
    uint window;     // > 0: sliding window of this many positions
    uint batch_kv;   // 1: positions >= step_pos0 come from kbatch/vbatch
    uint kb_off, vb_off, b_stride;  // the batch's K and V rows (floats)
    uint kv_ring;  // rows of the caches when they are rings; 0: one row per position
} pc;

uint cache_row(uint j) { return pc.kv_ring > 0u ? j % pc.kv_ring : j; }

shared float q_s[512];
shared float p_s[64];
shared float s_part[64 * 8];  // WG_SIZE (64) positions x SEG partial scores

// Score of position j (scaled, soft-capped) summed over this thread's dimensions.
float partial_score(uint j, uint kvh, uint seg, uint SEG) {
    float part = 0.0;
    if (pc.batch_kv != 0u && j >= step_pos0) {
        uint kb = pc.kb_off + (j - step_pos0) * pc.b_stride + kvh;
        for (uint d = seg; d < pc.head_dim; d += SEG) part += q_s[d] * kbatch[kb + d];
    } else {
        uint kb = cache_row(j) * pc.kv_stride + kvh;
        for (uint d = seg; d < pc.head_dim; d += SEG) part += q_s[d] * float(kc[kb + d]);
    }
    return part;
}

float value_at(uint j, uint kvh, uint d) {
    if (pc.batch_kv != 0u && j >= step_pos0)
        return vbatch[pc.vb_off + (j - step_pos0) * pc.b_stride + kvh + d];
    return float(vc[cache_row(j) * pc.kv_stride + kvh + d]);
}

void main() {
    uint h = gl_WorkGroupID.x, t = gl_WorkGroupID.y;
    uint tid = gl_LocalInvocationID.x;
    uint hk = h / (pc.n_head / pc.n_head_kv);
    uint n_kv = step_pos0 + t + 1;
    uint first = pc.window > 0u && n_kv > pc.window ? n_kv - pc.window : 0u;
    uint qb = pc.q_off + t * pc.q_stride + h * pc.head_dim;
    for (uint d = tid; d < pc.head_dim; d += WG_SIZE) q_s[d] = q[qb + d] * pc.scale;
    barrier();

    float m = -1e30, l = 0.0;
    float acc[MAX_D_PER_THREAD];
    for (uint k = 0; k < MAX_D_PER_THREAD; ++k) acc[k] = 0.0;
    uint kvh = hk * pc.head_dim;
    // SEG threads share one position, each taking every SEG-th dimension (coalesced loads).
    const uint SEG = 8u;
    uint seg = tid % SEG;
    for (uint j0 = first; j0 < n_kv; j0 += WG_SIZE) {
        uint jn = min(WG_SIZE, n_kv - j0);
        for (uint jj = tid / SEG; jj < jn; jj += WG_SIZE / SEG)
            s_part[jj * SEG + seg] = partial_score(j0 + jj, kvh, seg, SEG);
        barrier();
        float s = -1e30;
        if (tid < jn) {
            s = 0.0;
            for (uint i = 0; i < SEG; ++i) s += s_part[tid * SEG + i];
            // tanh is 1 in float well before 10; clamping keeps it from inf / inf.
            if (pc.softcap > 0.0) s = pc.softcap * tanh(clamp(s / pc.softcap, -10.0, 10.0));
        }
        float m_new = max(m, wg_max(s));
        float p = tid < jn ? exp(s - m_new) : 0.0;
        p_s[tid] = p;
        float corr = exp(m - m_new);
        l = l * corr + wg_sum(p);  // its barriers also publish p_s and free s_part
        for (uint k = 0; k < MAX_D_PER_THREAD; ++k) {
            uint d = tid + k * WG_SIZE;
            if (d >= pc.head_dim) break;
            float a = acc[k] * corr;
            for (uint jj = 0; jj < jn; ++jj) a += p_s[jj] * value_at(j0 + jj, kvh, d);
            acc[k] = a;
        }
        barrier();  // p_s is rewritten by the next tile
        m = m_new;
    }
    uint ob = t * pc.o_stride + h * pc.head_dim;
    for (uint k = 0; k < MAX_D_PER_THREAD; ++k) {
        uint d = tid + k * WG_SIZE;
        if (d < pc.head_dim) o[ob + d] = acc[k] / l;
    }
}
