#version 450
// Causal grouped-query attention of one query (head h, token t) over an F16 KV cache, with
// an online softmax over tiles of WG_SIZE positions so that no score array of n_ctx is needed.
// Query t sits at position step_pos0 + t and sees positions [0, step_pos0 + t].
// With batch_kv set, the positions of this batch are read from the batch's own F32 K/V rather
// than from their F16 copies in the cache: a prompt then attends over unrounded keys (F16 keys
// alone move the logits by up to 1e-2), while earlier turns and decode read the F16 cache.
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
    uint o_off;
    uint o_stride;
    float scale;
    uint batch_kv;   // 1: positions >= step_pos0 come from kbatch/vbatch (rows of kv_stride)
} pc;

shared float q_s[512];
shared float p_s[512];

void main() {
    uint h = gl_WorkGroupID.x, t = gl_WorkGroupID.y;
    uint tid = gl_LocalInvocationID.x;
    uint hk = h / (pc.n_head / pc.n_head_kv);
    uint n_kv = step_pos0 + t + 1;
    uint qb = pc.q_off + t * pc.q_stride + h * pc.head_dim;
    for (uint d = tid; d < pc.head_dim; d += WG_SIZE) q_s[d] = q[qb + d] * pc.scale;
    barrier();

    float m = -1e30, l = 0.0;
    float acc[MAX_D_PER_THREAD];
    for (uint k = 0; k < MAX_D_PER_THREAD; ++k) acc[k] = 0.0;
    uint kvh = hk * pc.head_dim;
    for (uint j0 = 0; j0 < n_kv; j0 += WG_SIZE) {
        uint j = j0 + tid;
        float s = -1e30;
        if (j < n_kv) {
            s = 0.0;
            if (pc.batch_kv != 0u && j >= step_pos0) {
                uint kb = (j - step_pos0) * pc.kv_stride + kvh;
                for (uint d = 0; d < pc.head_dim; ++d) s += q_s[d] * kbatch[kb + d];
            } else {
                uint kb = j * pc.kv_stride + kvh;
                for (uint d = 0; d < pc.head_dim; ++d) s += q_s[d] * float(kc[kb + d]);
            }
        }
        float m_new = max(m, wg_max(s));
        float p = j < n_kv ? exp(s - m_new) : 0.0;
        p_s[tid] = p;
        float corr = exp(m - m_new);
        l = l * corr + wg_sum(p);  // its barrier also publishes p_s
        uint jn = min(WG_SIZE, n_kv - j0);
        for (uint k = 0; k < MAX_D_PER_THREAD; ++k) {
            uint d = tid + k * WG_SIZE;
            if (d >= pc.head_dim) break;
            float a = acc[k] * corr;
            for (uint jj = 0; jj < jn; ++jj) {
                uint j = j0 + jj;
                float v = (pc.batch_kv != 0u && j >= step_pos0)
                              ? vbatch[(j - step_pos0) * pc.kv_stride + kvh + d]
                              : float(vc[j * pc.kv_stride + kvh + d]);
                a += p_s[jj] * v;
            }
            acc[k] = a;
        }
        barrier();  // p_s is rewritten by the next tile
        m = m_new;
    }
    uint ob = pc.o_off + t * pc.o_stride + h * pc.head_dim;
    for (uint k = 0; k < MAX_D_PER_THREAD; ++k) {
        uint d = tid + k * WG_SIZE;
        if (d < pc.head_dim) o[ob + d] = acc[k] / l;
    }
}
