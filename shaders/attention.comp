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
shared float s_part[64 * 8];  // WG_SIZE (kWgAttn, 64) positions x SEG partial scores

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
    // Scores: SEG threads share one position, thread `seg` taking dimensions seg, seg + SEG, ...
    // so that a warp's loads cover few whole cache lines (one thread per position walking its
    // key touched 32 lines per warp load; the change made 512-token prompts 23-36% faster).
    const uint SEG = 8u;
    uint seg = tid % SEG;
    for (uint j0 = 0; j0 < n_kv; j0 += WG_SIZE) {
        uint jn = min(WG_SIZE, n_kv - j0);
        for (uint jj = tid / SEG; jj < jn; jj += WG_SIZE / SEG) {
            uint j = j0 + jj;
            float part = 0.0;
            if (pc.batch_kv != 0u && j >= step_pos0) {
                uint kb = (j - step_pos0) * pc.kv_stride + kvh;
                for (uint d = seg; d < pc.head_dim; d += SEG) part += q_s[d] * kbatch[kb + d];
            } else {
                uint kb = j * pc.kv_stride + kvh;
                for (uint d = seg; d < pc.head_dim; d += SEG) part += q_s[d] * float(kc[kb + d]);
            }
            s_part[jj * SEG + seg] = part;
        }
        barrier();
        float s = -1e30;
        if (tid < jn) {
            s = 0.0;
            for (uint i = 0; i < SEG; ++i) s += s_part[tid * SEG + i];
        }
        float m_new = max(m, wg_max(s));
        float p = tid < jn ? exp(s - m_new) : 0.0;
        p_s[tid] = p;
        float corr = exp(m - m_new);
        l = l * corr + wg_sum(p);  // its barriers also publish p_s and free s_part
        for (uint k = 0; k < MAX_D_PER_THREAD; ++k) {
            uint d = tid + k * WG_SIZE;
            if (d >= pc.head_dim) break;
            // Four independent sums, so that four positions' loads are in flight at once; cache
            // and batch positions in separate loops (a load behind a run-time choice of buffer
            // waits for the previous one's data).
            vec4 a = vec4(acc[k] * corr, 0.0, 0.0, 0.0);
            uint jc = jn;  // tile positions [0, jc) come from the cache
            if (pc.batch_kv != 0u) jc = step_pos0 > j0 ? min(jn, step_pos0 - j0) : 0u;
            uint jj = 0;
            for (; jj + 4u <= jc; jj += 4u) {
                uint vb = (j0 + jj) * pc.kv_stride + kvh + d;
                vec4 v = vec4(float(vc[vb]), float(vc[vb + pc.kv_stride]),
                              float(vc[vb + 2u * pc.kv_stride]), float(vc[vb + 3u * pc.kv_stride]));
                a += vec4(p_s[jj], p_s[jj + 1u], p_s[jj + 2u], p_s[jj + 3u]) * v;
            }
            for (; jj < jc; ++jj) a.x += p_s[jj] * float(vc[(j0 + jj) * pc.kv_stride + kvh + d]);
            for (; jj + 4u <= jn; jj += 4u) {
                uint vb = (j0 + jj - step_pos0) * pc.kv_stride + kvh + d;
                vec4 v = vec4(vbatch[vb], vbatch[vb + pc.kv_stride], vbatch[vb + 2u * pc.kv_stride],
                              vbatch[vb + 3u * pc.kv_stride]);
                a += vec4(p_s[jj], p_s[jj + 1u], p_s[jj + 2u], p_s[jj + 3u]) * v;
            }
            for (; jj < jn; ++jj)
                a.x += p_s[jj] * vbatch[(j0 + jj - step_pos0) * pc.kv_stride + kvh + d];
            acc[k] = (a.x + a.y) + (a.z + a.w);
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
