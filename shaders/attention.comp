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
// Decode (one query token), flash-decoding style. Workgroup (h, sp) takes query head h and the
// sp-th run of whole passes of positions; a pass is R * PT positions (R = WG_SIZE / (head_dim /
// 8) rows of threads): thread (row, seg) loads piece seg (8 dimensions) of K and of V at
// positions row, row + R, ... of the pass, all in one round trip; scores meet in shared memory,
// and an online softmax carries the maximum and sum from pass to pass. Short contexts take one
// workgroup per head, which writes its output itself. Longer ones are split into at most
// pc.n_split runs of at least pc.min_passes passes (the partials, counter and combine cost
// about three round trips, docs/performance.md item 41): each run writes its partials (max,
// sum, unnormalized output) and the last of a head's runs to finish (an atomic counter, left at
// zero) combines them. Needs head_dim % 8 == 0 and head_dim / 8 dividing WG_SIZE (ops.cpp
// checks).
layout(constant_id = 1) const uint PT = 8;  // positions per thread in a pass

layout(binding = 0) readonly buffer QBuf4 { vec4 q4[]; };
layout(binding = 1) readonly buffer KBuf { uvec4 kc4[]; };
layout(binding = 2) readonly buffer VBuf { uvec4 vc4[]; };
layout(binding = 3) writeonly buffer OBuf { float o[]; };
layout(binding = 4) coherent buffer PartBuf { float part[]; };     // [h][sp][2 + head_dim]
layout(binding = 5) coherent buffer CountBuf { uint counter[]; };  // per query head, left at 0
DECLARE_STEP_BUFFER(6)

layout(push_constant) uniform PC {
    uint n_head;
    uint n_head_kv;
    uint head_dim;
    uint kv_stride;   // halfs between positions of the cache
    float scale;
    uint n_split;     // most runs per head (partials are laid out for these)
    uint min_passes;  // fewest passes in a run
} pc;

// A pass: [0, PT WG_SIZE) partial scores, [k][thread]; [PT WG_SIZE, + P) its weights,
// [position] (P <= PT WG_SIZE). After the last pass, [0, 8 WG_SIZE): each row's outputs,
// [row][d].
shared float sh[(PT > 4u ? 2u * PT : 8u) * WG_SIZE];
shared uint last_s;

// Runs of a context of n_pass passes: at most n_split of at least min_passes each (ops.cpp's
// decode_attention_grid makes the same choice); per: passes per run.
uint runs(uint n_pass, out uint per) {
    uint n = min((n_pass + pc.min_passes - 1u) / pc.min_passes, pc.n_split);
    per = (n_pass + n - 1u) / n;
    return (n_pass + per - 1u) / per;
}

void main() {
    const uint tid = gl_LocalInvocationID.x, hd = pc.head_dim;
    const uint h = gl_WorkGroupID.x, sp = gl_WorkGroupID.y, hk = h / (pc.n_head / pc.n_head_kv);
    const uint TPP = hd / 8u, R = WG_SIZE / TPP, P = R * PT;  // positions per pass
    const uint n_kv = step_pos0 + 1u;
    uint per;
    const uint n_run = runs((n_kv + P - 1u) / P, per);
    if (sp >= n_run) return;
    const uint j_begin = sp * per * P, j_end = min(j_begin + per * P, n_kv);
    const uint row = tid / TPP, seg = tid % TPP, W = PT * WG_SIZE;  // W: the weights' offset
    const uint stride4 = pc.kv_stride / 8u, kv0 = (hk * hd) / 8u + seg;
    const uint qb = (h * hd) / 4u + 2u * seg;
    const vec4 qa = q4[qb] * pc.scale, qc = q4[qb + 1u] * pc.scale;
    float m = -1e30, l = 0.0;
    vec4 acc_a = vec4(0.0), acc_b = vec4(0.0);  // dimensions 8 seg .. 8 seg + 7
    for (uint p0 = j_begin; p0 < j_end; p0 += P) {
        const uint n = min(P, j_end - p0);
        uvec4 kw[PT], vw[PT];
        [[unroll]] for (uint k = 0; k < PT; ++k) {
            uint j = p0 + min(row + k * R, n - 1u);  // clamped: every load is unconditional
            kw[k] = kc4[j * stride4 + kv0];
            vw[k] = vc4[j * stride4 + kv0];
        }
        [[unroll]] for (uint k = 0; k < PT; ++k) {
            vec4 ka = vec4(unpackHalf2x16(kw[k].x), unpackHalf2x16(kw[k].y));
            vec4 kb = vec4(unpackHalf2x16(kw[k].z), unpackHalf2x16(kw[k].w));
            sh[k * WG_SIZE + tid] = dot(qa, ka) + dot(qc, kb);
        }
        barrier();
        // Position i of the pass (i = r + k R) has its pieces at sh[k WG_SIZE + r TPP ..].
        float mx = -1e30;
        for (uint i = tid; i < n; i += WG_SIZE) {
            uint b = (i / R) * WG_SIZE + (i % R) * TPP;
            float sc = 0.0;
            for (uint t = 0; t < TPP; ++t) sc += sh[b + t];
            sh[W + i] = sc;
            mx = max(mx, sc);
        }
        const float mn = max(m, wg_max(mx));  // its barriers also publish the scores
        float sum = 0.0;
        for (uint i = tid; i < n; i += WG_SIZE) {
            float e = exp(sh[W + i] - mn);
            sh[W + i] = e;
            sum += e;
        }
        const float c = exp(m - mn);
        l = l * c + wg_sum(sum);
        m = mn;
        acc_a *= c;
        acc_b *= c;
        [[unroll]] for (uint k = 0; k < PT; ++k) {
            uint i = row + k * R;
            float p = i < n ? sh[W + i] : 0.0;
            acc_a += p * vec4(unpackHalf2x16(vw[k].x), unpackHalf2x16(vw[k].y));
            acc_b += p * vec4(unpackHalf2x16(vw[k].z), unpackHalf2x16(vw[k].w));
        }
        barrier();  // sh is rewritten by the next pass
    }
    // The rows hold partial outputs of the same dimensions (R hd = 8 WG_SIZE floats).
    const uint vb = row * hd + seg * 8u;
    [[unroll]] for (uint d = 0; d < 4u; ++d) sh[vb + d] = acc_a[d], sh[vb + 4u + d] = acc_b[d];
    barrier();
    // One run: the output; several: this run's partials (max, sum, unnormalized output).
    const uint row_len = 2u + hd, base = (h * pc.n_split + sp) * row_len;
    for (uint d = tid; d < hd; d += WG_SIZE) {
        float t = 0.0;
        for (uint r = 0; r < R; ++r) t += sh[r * hd + d];
        if (n_run == 1u) o[h * hd + d] = t / l;
        else part[base + 2u + d] = t;
    }
    if (n_run == 1u) return;
    if (tid == 0u) part[base] = m, part[base + 1u] = l;
    memoryBarrierBuffer();
    barrier();
    if (tid == 0u) last_s = atomicAdd(counter[h], 1u) == n_run - 1u ? 1u : 0u;
    barrier();
    if (last_s == 0u) return;
    memoryBarrierBuffer();

    // The last run of this head combines the partials, 8 runs' loads at a time.
    for (uint d = tid; d < hd; d += WG_SIZE) {
        float mx = -1e30, den = 0.0, num = 0.0;
        for (uint k0 = 0; k0 < n_run; k0 += 8u) {
            float mk[8], lk[8], ok[8];
            [[unroll]] for (uint u = 0; u < 8u; ++u) {
                uint b = (h * pc.n_split + min(k0 + u, n_run - 1u)) * row_len;
                mk[u] = part[b];
                lk[u] = part[b + 1u];
                ok[u] = part[b + 2u + d];
            }
            [[unroll]] for (uint u = 0; u < 8u; ++u) {
                if (k0 + u >= n_run) break;
                float mn = max(mx, mk[u]);
                float c = exp(mx - mn), w = exp(mk[u] - mn);
                den = den * c + lk[u] * w;
                num = num * c + ok[u] * w;
                mx = mn;
            }
        }
        o[h * hd + d] = num / den;
    }
    if (tid == 0u) counter[h] = 0u;
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
