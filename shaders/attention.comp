#version 450
// Causal grouped-query attention of one query (head h, token t) over an F16 KV cache, with
// an online softmax over tiles of WG_SIZE positions so that no score array of n_ctx is needed.
// Query t sits at position step_pos0 + t and sees positions [0, step_pos0 + t].
// With batch_kv set, the positions of this batch are read from the batch's own F32 K/V rather
// than from their F16 copies in the cache: a prompt then attends over unrounded keys (F16 keys
// alone move the logits by up to 1e-2), while earlier turns and decode read the F16 cache.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "include/common.glsl"

#if defined(SPLIT_KV)
// Decode (one query token) split over positions, flash-decoding style. Workgroup (hk, sp)
// takes KV head hk with all its g query heads and a run of about PPP positions, and writes
// its softmax partials (max, sum, unnormalized output); the last workgroup of the KV head to
// finish (an atomic counter) combines them. Latency, not bandwidth, bounds decode attention,
// so each pass makes one round trip to memory: every thread loads one 16-byte piece of K and
// of V (the next pass's pieces are loaded while this one computes), partial scores meet in
// shared memory, and one thread per head turns them into the pass's softmax weights.
// Needs head_dim % 8 == 0, head_dim | WG_SIZE (128) and g <= G_MAX (ops.cpp checks).
#define G_MAX 8u
#define OUT_MAX 8u  // outputs (head, dimension) per thread: G_MAX * 128 / WG_SIZE

layout(binding = 0) readonly buffer QBuf { float q[]; };
layout(binding = 1) readonly buffer KBuf { uvec4 kc4[]; };
layout(binding = 2) readonly buffer VBuf { uvec4 vc4[]; };
layout(binding = 3) writeonly buffer OBuf { float o[]; };
layout(binding = 4) coherent buffer PartBuf { float part[]; };  // [hk][sp][h][2 + head_dim]
layout(binding = 5) coherent buffer CountBuf { uint counter[]; };  // per KV head, left at 0
DECLARE_STEP_BUFFER(6)

layout(push_constant) uniform PC {
    uint n_head;
    uint n_head_kv;
    uint head_dim;
    uint kv_stride;  // halfs between positions of the cache
    float scale;
    uint n_split;    // workgroups per KV head (gl_NumWorkGroups.y)
} pc;

shared float q_s[G_MAX * 128];     // [h][d], scaled
shared float v_s[1024];            // the pass's V, [position][d]: PPP * head_dim = 8 * WG_SIZE
shared float part_s[G_MAX * 128];  // partial scores, [h][position][seg]
shared float s_s[G_MAX * 128];     // scores, then their exp(score - running max), [h][position]
shared float mh_s[G_MAX], lh_s[G_MAX], ch_s[G_MAX];  // per head: running max, sum, rescale
shared uint last_s;

void main() {
    const uint hk = gl_WorkGroupID.x, sp = gl_WorkGroupID.y, tid = gl_LocalInvocationID.x;
    const uint g = pc.n_head / pc.n_head_kv, hd = pc.head_dim;
    const uint TPP = hd / 8u, PPP = WG_SIZE / TPP;  // threads per position, positions per pass
    const uint n_kv = step_pos0 + 1u;
    const uint n_act = min((n_kv + PPP - 1u) / PPP, pc.n_split);  // workgroups with work
    if (sp >= n_act) return;
    const uint per = (n_kv + n_act - 1u) / n_act;
    const uint j_begin = min(sp * per, n_kv), j_end = min(j_begin + per, n_kv);
    const uint pl = tid / TPP, seg = tid % TPP;  // this thread's position in a pass, its piece
    const uint kv0 = (hk * hd) / 8u + seg;

    uvec4 kw = uvec4(0u), vw = uvec4(0u);
    if (j_begin + pl < j_end) {
        kw = kc4[(j_begin + pl) * (pc.kv_stride / 8u) + kv0];
        vw = vc4[(j_begin + pl) * (pc.kv_stride / 8u) + kv0];
    }
    for (uint i = tid; i < g * hd; i += WG_SIZE) q_s[i] = q[hk * g * hd + i] * pc.scale;
    barrier();

    const uint n_out = (g * hd + WG_SIZE - 1u) / WG_SIZE;
    float acc[OUT_MAX];
    [[unroll]] for (uint k = 0; k < OUT_MAX; ++k) acc[k] = 0.0;
    if (tid < g) mh_s[tid] = -1e30, lh_s[tid] = 0.0;
    for (uint j0 = j_begin; j0 < j_end; j0 += PPP) {
        const uint npl = min(PPP, j_end - j0);
        // Partial scores of this thread's piece against every head; its V piece as floats.
        vec2 k0 = unpackHalf2x16(kw.x), k1 = unpackHalf2x16(kw.y);
        vec2 k2 = unpackHalf2x16(kw.z), k3 = unpackHalf2x16(kw.w);
        vec4 ka = vec4(k0, k1), kb = vec4(k2, k3);
        for (uint h = 0; h < g; ++h) {
            uint qb = h * hd + seg * 8u;
            float sc = dot(ka, vec4(q_s[qb], q_s[qb + 1u], q_s[qb + 2u], q_s[qb + 3u])) +
                       dot(kb, vec4(q_s[qb + 4u], q_s[qb + 5u], q_s[qb + 6u], q_s[qb + 7u]));
            part_s[(h * PPP + pl) * TPP + seg] = sc;
        }
        uint vb = pl * hd + seg * 8u;
        vec2 v0 = unpackHalf2x16(vw.x), v1 = unpackHalf2x16(vw.y);
        vec2 v2 = unpackHalf2x16(vw.z), v3 = unpackHalf2x16(vw.w);
        v_s[vb] = v0.x, v_s[vb + 1u] = v0.y, v_s[vb + 2u] = v1.x, v_s[vb + 3u] = v1.y;
        v_s[vb + 4u] = v2.x, v_s[vb + 5u] = v2.y, v_s[vb + 6u] = v3.x, v_s[vb + 7u] = v3.y;
        barrier();
        // The next pass's pieces are on their way while this one finishes.
        if (j0 + PPP + pl < j_end) {
            kw = kc4[(j0 + PPP + pl) * (pc.kv_stride / 8u) + kv0];
            vw = vc4[(j0 + PPP + pl) * (pc.kv_stride / 8u) + kv0];
        }
        for (uint i = tid; i < g * PPP; i += WG_SIZE) {
            float t = 0.0;
            for (uint k = 0; k < TPP; ++k) t += part_s[i * TPP + k];
            s_s[i] = t;
        }
        barrier();
        // One thread per head turns the pass's scores into weights exp(score - max) once (the
        // outputs of a head share them) and keeps the head's running max and sum.
        if (tid < g) {
            float mo = mh_s[tid], mt = mo;
            for (uint p = 0; p < npl; ++p) mt = max(mt, s_s[tid * PPP + p]);
            float lsum = 0.0;
            for (uint p = 0; p < npl; ++p) {
                float e = exp(s_s[tid * PPP + p] - mt);
                s_s[tid * PPP + p] = e;
                lsum += e;
            }
            float c = exp(mo - mt);
            ch_s[tid] = c;
            lh_s[tid] = lh_s[tid] * c + lsum;
            mh_s[tid] = mt;
        }
        barrier();
        // Outputs (h, d) = i / hd, i % hd for i = tid, tid + WG_SIZE, ...
        [[unroll]] for (uint k = 0; k < OUT_MAX; ++k) {
            uint i = tid + k * WG_SIZE;
            if (k >= n_out || i >= g * hd) break;
            uint h = i / hd, d = i % hd;
            float a = 0.0;
            for (uint p = 0; p < npl; ++p) a += s_s[h * PPP + p] * v_s[p * hd + d];
            acc[k] = acc[k] * ch_s[h] + a;
        }
        barrier();  // part_s, s_s, v_s and the head values are rewritten by the next pass
    }

    const uint row = 2u + hd;
    const uint base = (hk * pc.n_split + sp) * g * row;
    [[unroll]] for (uint k = 0; k < OUT_MAX; ++k) {
        uint i = tid + k * WG_SIZE;
        if (k >= n_out || i >= g * hd) break;
        uint h = i / hd, d = i % hd;
        part[base + h * row + 2u + d] = acc[k];
        if (d == 0u) {
            part[base + h * row] = mh_s[h];
            part[base + h * row + 1u] = lh_s[h];
        }
    }
    memoryBarrierBuffer();
    barrier();
    if (tid == 0u) last_s = atomicAdd(counter[hk], 1u) == n_act - 1u ? 1u : 0u;
    barrier();
    if (last_s == 0u) return;
    memoryBarrierBuffer();

    // The last workgroup of this KV head combines the partials, 8 splits' loads at a time.
    for (uint i = tid; i < g * hd; i += WG_SIZE) {
        uint h = i / hd, d = i % hd;
        float mx = -1e30, den = 0.0, num = 0.0;
        for (uint k0 = 0; k0 < n_act; k0 += 8u) {
            float mk[8], lk[8], ok[8];
            [[unroll]] for (uint u = 0; u < 8u; ++u) {
                uint b = ((hk * pc.n_split + min(k0 + u, n_act - 1u)) * g + h) * row;
                mk[u] = part[b];
                lk[u] = part[b + 1u];
                ok[u] = part[b + 2u + d];
            }
            [[unroll]] for (uint u = 0; u < 8u; ++u) {
                if (k0 + u >= n_act) break;
                float mn = max(mx, mk[u]);
                float c = exp(mx - mn), w = exp(mk[u] - mn);
                den = den * c + lk[u] * w;
                num = num * c + ok[u] * w;
                mx = mn;
            }
        }
        o[(hk * g + h) * hd + d] = num / den;
    }
    if (tid == 0u) counter[hk] = 0u;
}

#else  // one workgroup per (head, token)
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
#endif
