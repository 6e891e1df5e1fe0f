#version 450
// Causal grouped-query attention of one query (head h, token t) over an F16 KV cache, with
// an online softmax over tiles of WG_SIZE positions so that no score array of n_ctx is needed.
// Query t sits at position step_pos0 + t and sees positions [0, step_pos0 + t].
// With batch_kv set, the positions of this batch are read from the batch's own F32 K/V rather
// than from their F16 copies in the cache: a prompt then attends over unrounded keys (F16 keys
// alone move the logits by up to 1e-2), while earlier turns and decode read the F16 cache.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#if defined(WO)
#extension GL_EXT_shader_atomic_float : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_shuffle : require
#endif
#include "include/common.glsl"

#if defined(SPLIT_KV)
// Decode (one query token), flash-decoding style. Workgroup (hg, sp) takes the G query heads
// hg G .. hg G + G - 1, which share one KV head (GQA: each K/V row is read once for all of them,
// not once per query head), and the sp-th run of whole passes of positions; a pass is R * PT
// positions (R = WG_SIZE / (head_dim / 8) rows of threads): thread (row, seg) loads piece seg (8
// dimensions) of K and of V at positions row, row + R, ... of the pass, all in one round trip;
// scores meet in shared memory, and an online softmax per head carries the maximum and sum from
// pass to pass. Short contexts take one workgroup per group, which writes its output itself.
// Longer ones are split into at most n_split runs of at least min_passes passes (the partials,
// counter and combine cost about three round trips): each run writes its partials (max, sum,
// unnormalized output) and the last of a group's runs to finish (an atomic counter, left at
// zero) combines them. Needs head_dim % 8 == 0 and head_dim / 8 dividing WG_SIZE, G dividing
// n_head / n_head_kv and G R PT <= 2 WG_SIZE (ops.cpp checks).
// FAMILY (the decoder families' decode, ops.cpp op_attention_decode with DecodeAttentionExtras):
// scores soft-capped (cap * tanh(s / cap), Gemma 2), a sliding window (the query at position p
// reads only keys p - window < j <= p: the runs cover the window alone), caches that are rings
// of kv_ring rows (position j in row j % kv_ring), and head_dim / 8 up to WG_SIZE without
// dividing it (Phi-3's 96: the threads past R rows of a pass compute what no one reads).
// QK_NORM (FAMILY; Qwen 3, Gemma 3): the Q/K/V dispatch left the q/k norms' division by each
// head's rms to this one (matvec_fused_h.comp HEADS_C 2): it wrote q and the step's key rotated
// and times their norm weights, the key to binding 8 (not the cache), and each head's sums of
// squares in pieces to binding 9. Every workgroup scales its q heads, and the step's key where
// a pass reads its position, by 1 / rms; the first workgroup of each KV head stores that key in
// the cache, whose row for the step no workgroup reads.
layout(constant_id = 1) const uint PT = 8;  // positions per thread in a pass
layout(constant_id = 15) const uint G = 1;  // query heads per workgroup (WO: 1)

layout(binding = 0) readonly buffer QBuf4 { vec4 q4[]; };
layout(binding = 1) readonly buffer KBuf { uvec4 kc4[]; };
layout(binding = 2) readonly buffer VBuf { uvec4 vc4[]; };
#if defined(WO)
// The output projection fused in (Wo of a type fused_weights.glsl reads; short contexts):
// workgroup (h, sp) takes the whole context of head h (one run; the sp workgroups of a head
// repeat its attention), then rows [sp slice_rows, +slice_rows) of Wo's columns of head h,
// and adds its share of each row's product to the residual x with a float atomic.
layout(binding = 3) buffer XBuf { float xr[]; };
#else
layout(binding = 3) writeonly buffer OBuf { float o[]; };
#endif
layout(binding = 4) coherent buffer PartBuf { float part[]; };     // [h][sp][2 + head_dim]
layout(binding = 5) coherent buffer CountBuf { uint counter[]; };  // per query head, left at 0
DECLARE_STEP_BUFFER(6)
#if defined(FAMILY)
layout(constant_id = 16) const uint QK_NORM = 0;
layout(constant_id = 17) const float QK_EPS = 1e-6;
layout(binding = 1) writeonly buffer KBufW { uvec4 kcw4[]; };
layout(binding = 8) readonly buffer KNewBuf { vec4 knew4[]; };   // [Dkv] the step's key
layout(binding = 9) readonly buffer SsBuf { float qk_ss[]; };    // [n_head + n_head_kv][hd / 2]
#else
const uint QK_NORM = 0u;
#endif

layout(push_constant) uniform PC {
    uint n_head;
    uint n_head_kv;
    uint head_dim;
    uint kv_stride;   // halfs between positions of the cache
    float scale;
    uint n_split;     // most runs per head (partials are laid out for these)
    uint min_passes;  // fewest passes in a run
#if defined(WO)
    uint wo_rows;     // Wo: rows (the embedding width) and blocks per row
    uint wo_stride;
    uint slice_rows;  // rows per workgroup
#endif
#if defined(FAMILY)
    float softcap;  // > 0: scores soft-capped
    uint window;    // > 0: sliding window of this many positions
    uint kv_ring;   // > 0: the caches are rings of this many rows
#endif
} pc;

// The shape as constants (0: from the push constants), so that
// addresses and trip counts fold, as in matvec_fused_h.comp.
layout(constant_id = 5) const uint N_HEAD_C = 0;
layout(constant_id = 6) const uint N_HEAD_KV_C = 0;
layout(constant_id = 7) const uint HEAD_DIM_C = 0;
layout(constant_id = 8) const uint KV_STRIDE_C = 0;
#define P_N_HEAD (N_HEAD_C != 0u ? N_HEAD_C : pc.n_head)
#define P_N_HEAD_KV (N_HEAD_KV_C != 0u ? N_HEAD_KV_C : pc.n_head_kv)
#define P_HEAD_DIM (HEAD_DIM_C != 0u ? HEAD_DIM_C : pc.head_dim)
#define P_KV_STRIDE (KV_STRIDE_C != 0u ? KV_STRIDE_C : pc.kv_stride)
// ... and the softmax's scale and the runs' counts (0: from the push constants).
layout(constant_id = 12) const float SCALE_C = 0.0;
layout(constant_id = 13) const uint N_SPLIT_C = 0;
layout(constant_id = 14) const uint MIN_PASSES_C = 0;
#define P_SCALE (SCALE_C != 0.0 ? SCALE_C : pc.scale)
#define P_N_SPLIT (N_SPLIT_C != 0u ? N_SPLIT_C : pc.n_split)
#define P_MIN_PASSES (MIN_PASSES_C != 0u ? MIN_PASSES_C : pc.min_passes)
#if defined(WO)
layout(constant_id = 9) const uint WO_ROWS_C = 0;
layout(constant_id = 10) const uint WO_STRIDE_C = 0;
layout(constant_id = 11) const uint SLICE_ROWS_C = 0;
#define P_WO_ROWS (WO_ROWS_C != 0u ? WO_ROWS_C : pc.wo_rows)
#define P_WO_STRIDE (WO_STRIDE_C != 0u ? WO_STRIDE_C : pc.wo_stride)
#define P_SLICE_ROWS (SLICE_ROWS_C != 0u ? SLICE_ROWS_C : pc.slice_rows)
#endif

// A pass: [0, G PT WG_SIZE) partial scores, [g][k][thread]; [G PT WG_SIZE, + G P) their
// weights, [g][position] (G P <= 2 WG_SIZE). After the last pass, [0, 8 WG_SIZE): one head's
// outputs of each row, [row][d].
#define SH_W (G * PT * WG_SIZE)
shared float sh[G * PT > 6u ? SH_W + 2u * WG_SIZE : 8u * WG_SIZE];
shared float red_g[G * 128u];  // the G heads' partial maxima or sums, [g][subgroup]
shared uint last_s;

#if defined(WO)
shared float oh[256];  // head h's output (head_dim <= 256, ops.cpp checks)
layout(constant_id = 2) const uint NCH = 4;  // Wo: the head's blocks in a row
#include "include/dot_f16.glsl"
shared uvec4 ohs[NCH * 4u];  // oh * 2^-e as F16 pairs, in block_dot's order

// x[r] += Wo[r, h hd ..] . oh for this workgroup's rows: oh as F16 pairs (scaled so that block
// sums stay small, as in matvec_fused_h.comp). NCH neighbouring lanes take the blocks of one
// row, so that a warp's load covers whole rows (a thread per row made every load touch 32
// cache lines, and the projection cost as much as the separate dispatch); up to 8 loads a
// thread in flight, then products, a sum across the row's lanes and one atomic per row.
layout(constant_id = 3) const uint WO_LOADS = 8;  // loads a thread issues at once (ops.cpp)
// Timing only (ops.cpp passes 0; wrong results by design): 1 = plain stores instead of
// the atomic adds, 2 = the attention left out, 4 = the projection left out (with all but one of
// each thread's Wo loads, which the compiler then drops).
layout(constant_id = 4) const uint ADIAG = 0;
#define STEP_LOADS WO_LOADS
#define FUSED_ROW_BLOCKS (P_N_HEAD * P_HEAD_DIM / 32u)  // Wo's columns: the heads' outputs
#include "include/fused_weights.glsl"
FUSED_WEIGHTS(7)
SLOT_REGS

// NL lanes a row: NCH rounded up to a power of 2 (Phi-3's head of 96: 3 blocks, 4 lanes), for
// the sum across a row's lanes; lanes past NCH load their row's last block and add nothing.
const uint NL = NCH > 4u ? 8u : NCH > 2u ? 4u : NCH;

// The loads of rows rb, rb + rows_per_pass, ... (this lane's block of each) into the slots.
void load_wo(uint h, uint rb) {
    const uint c = min(gl_LocalInvocationID.x % NL, NCH - 1u), rows_per_pass = WG_SIZE / NL;
    const uint r1 = min(gl_WorkGroupID.y * P_SLICE_ROWS + P_SLICE_ROWS, P_WO_ROWS);
    [[unroll]] for (uint k = 0; k < WO_LOADS; ++k) {
        uint r = min(rb + k * rows_per_pass, r1 - 1u);  // clamped: loads unconditional
        LOADQ(7, r * P_WO_STRIDE, h * NCH + c, k);
    }
}
float wo_keep() { return FOLDQ(WO_LOADS - 1u); }
void project_out(uint h) {
    const uint tid = gl_LocalInvocationID.x;
    float mx = 0.0;
    for (uint d = tid; d < NCH * 32u; d += WG_SIZE) mx = max(mx, abs(oh[d]));
    int e;
    frexp(wg_max(mx), e);
    const float down = exp2(float(-e)), up = exp2(float(e));
    for (uint c = tid; c < NCH * 8u; c += WG_SIZE) {
        vec4 v = vec4(oh[4u * c], oh[4u * c + 1u], oh[4u * c + 2u], oh[4u * c + 3u]) * down;
        uint w = pair_word(c & 7u), slot = (c >> 3) * 4u + (w >> 2);
        ohs[slot][w & 3u] = packHalf2x16(v.xz);
        ohs[slot][(w & 3u) + PAIR_STEP] = packHalf2x16(v.yw);
    }
    barrier();
    // This lane's block of every row it takes (NL divides WG_SIZE); lanes past NCH add 0.
    const uint lane = tid % NL, c = min(lane, NCH - 1u);
    const uvec4 xv[4] = {ohs[4u * c], ohs[4u * c + 1u], ohs[4u * c + 2u], ohs[4u * c + 3u]};
    XSUM(xv);
    const uint j = (h * NCH + c) & 7u;  // the block's index in its superblock (K-quants)
    const uint r0 = gl_WorkGroupID.y * P_SLICE_ROWS, r1 = min(r0 + P_SLICE_ROWS, P_WO_ROWS);
    const uint rows_per_pass = WG_SIZE / NL;
    for (uint rb = r0 + tid / NL; rb < r1; rb += WO_LOADS * rows_per_pass) {
        if (rb != r0 + tid / NL) load_wo(h, rb);  // the first batch was loaded by main()
        [[unroll]] for (uint k = 0; k < WO_LOADS; ++k) {
            float v = lane < NCH ? DOTQ(k, j) : 0.0;
            for (uint o = 1u; o < NL; o <<= 1) v += subgroupShuffleXor(v, o);  // the row's sum
            uint r = rb + k * rows_per_pass;
            if (lane == 0u && r < r1) {
                if ((ADIAG & 1u) != 0u) xr[r] = v * up;
                else atomicAdd(xr[r], v * up);
            }
        }
    }
}
#endif

#if defined(FAMILY)
#define CACHE_ROW(j) (pc.kv_ring > 0u ? (j) % pc.kv_ring : (j))
#else
#define CACHE_ROW(j) (j)
#endif

// Runs of a context of n_pass passes: at most n_split of at least min_passes each (ops.cpp's
// decode_attention_grid makes the same choice); per: passes per run.
uint runs(uint n_pass, out uint per) {
    uint n = min((n_pass + P_MIN_PASSES - 1u) / P_MIN_PASSES, P_N_SPLIT);
#if defined(FAMILY)
    // A window's runs within the grid, which the host sets for the whole context (its fewer
    // passes may still round to more runs).
    n = min(n, gl_NumWorkGroups.y);
#endif
    per = (n_pass + n - 1u) / n;
    return (n_pass + per - 1u) / per;
}

// The maxima (MAX) or sums (+) of v[0 .. G) over the workgroup, each head's apart; like
// wg_max / wg_sum, its barriers also publish what was written to shared memory before.
#define WG_REDUCE_G(v, OP, SUBGROUP_OP)                                                 \
    {                                                                                   \
        [[unroll]] for (uint g_ = 0; g_ < G; ++g_) {                                    \
            float r_ = SUBGROUP_OP(v[g_]);                                              \
            if (subgroupElect()) red_g[g_ * gl_NumSubgroups + gl_SubgroupID] = r_;      \
        }                                                                               \
        barrier();                                                                      \
        [[unroll]] for (uint g_ = 0; g_ < G; ++g_) {                                    \
            float s_ = red_g[g_ * gl_NumSubgroups];                                     \
            for (uint i_ = 1; i_ < gl_NumSubgroups; ++i_)                               \
                s_ = OP(s_, red_g[g_ * gl_NumSubgroups + i_]);                          \
            v[g_] = s_;                                                                 \
        }                                                                               \
        barrier();                                                                      \
    }
float add_f(float a, float b) { return a + b; }

// QK_NORM: 1 / rms of q head s (s < n_head) or of KV head s - n_head, from its pairs' sums of
// squares; each subgroup sums them itself (no barrier).
float head_inv_rms(uint s) {
#if defined(FAMILY)
    const uint n = P_HEAD_DIM / 2u;
    float t = 0.0;
    for (uint i = gl_SubgroupInvocationID; i < n; i += gl_SubgroupSize) t += qk_ss[s * n + i];
    return inversesqrt(subgroupAdd(t) / float(P_HEAD_DIM) + QK_EPS);
#else
    return 1.0;
#endif
}

// QK_NORM: the step's key, this thread's 8 dimensions of KV head hk scaled by 1 / rms and
// rounded to F16 as the cache holds it; the first workgroup of each KV head stores it there.
uvec4 step_key(uint h0, uint hk, uint row, uint seg, uint cache_off) {
    uvec4 knew = uvec4(0u);
#if defined(FAMILY)
    if (QK_NORM != 0u) {
        const float r = head_inv_rms(P_N_HEAD + hk);
        const uint kb = (hk * P_HEAD_DIM) / 4u + 2u * seg;
        const vec4 a = knew4[kb] * r, b = knew4[kb + 1u] * r;
        knew = uvec4(packHalf2x16(a.xy), packHalf2x16(a.zw), packHalf2x16(b.xy),
                     packHalf2x16(b.zw));
        if (h0 % (P_N_HEAD / P_N_HEAD_KV) == 0u && gl_WorkGroupID.y == 0u && row == 0u)
            kcw4[cache_off] = knew;
    }
#endif
    return knew;
}

// One pass over positions [p0, p0 + n) of the context (n_kv positions): thread (row, seg)
// loads its K and V pieces of positions row, row + R, ..., the G heads' scores meet in sh, and
// each head's online softmax (maximum m, sum l) rescales and adds to its output (acc_a, acc_b:
// this thread's 8 dimensions). QK_NORM: the step's own key is knew (step_key), not the cache's.
void attend_pass(uint p0, uint n, uint n_kv, uint row, uint kv0, uvec4 knew, vec4 qa[G],
                 vec4 qc[G], inout float m[G], inout float l[G], inout vec4 acc_a[G],
                 inout vec4 acc_b[G]) {
    const uint tid = gl_LocalInvocationID.x, TPP = P_HEAD_DIM / 8u, R = WG_SIZE / TPP;
    const uint P = R * PT, stride4 = P_KV_STRIDE / 8u;
    uvec4 kw[PT], vw[PT];
    [[unroll]] for (uint k = 0; k < PT; ++k) {
        const uint jp = p0 + min(row + k * R, n - 1u);  // clamped: loads unconditional
        const uint j = CACHE_ROW(jp);
        kw[k] = kc4[j * stride4 + kv0];
        vw[k] = vc4[j * stride4 + kv0];
        if (QK_NORM != 0u && jp == n_kv - 1u) kw[k] = knew;
    }
    [[unroll]] for (uint k = 0; k < PT; ++k) {
        vec4 ka = vec4(unpackHalf2x16(kw[k].x), unpackHalf2x16(kw[k].y));
        vec4 kb = vec4(unpackHalf2x16(kw[k].z), unpackHalf2x16(kw[k].w));
        [[unroll]] for (uint g = 0; g < G; ++g)
            sh[(g * PT + k) * WG_SIZE + tid] = dot(qa[g], ka) + dot(qc[g], kb);
    }
    barrier();
    // Score f = g P + i (position i = r + k R of the pass, head g) has its pieces at
    // sh[(g PT + k) WG_SIZE + r TPP ..]; the weights go to sh[SH_W + f].
    float mx[G];
    [[unroll]] for (uint g = 0; g < G; ++g) mx[g] = -1e30;
    for (uint f = tid; f < G * P; f += WG_SIZE) {
        const uint g = f / P, i = f % P;
        if (i >= n) continue;
        uint b = (g * PT + i / R) * WG_SIZE + (i % R) * TPP;
        float sc = 0.0;
        for (uint t = 0; t < TPP; ++t) sc += sh[b + t];
#if defined(FAMILY)
        // tanh is 1 in float well before 10; clamping keeps it from inf / inf.
        if (pc.softcap > 0.0) sc = pc.softcap * tanh(clamp(sc / pc.softcap, -10.0, 10.0));
#endif
        sh[SH_W + f] = sc;
        [[unroll]] for (uint gg = 0; gg < G; ++gg)
            if (gg == g) mx[gg] = max(mx[gg], sc);
    }
    WG_REDUCE_G(mx, max, subgroupMax)  // its barriers also publish the scores
    float sum[G];
    [[unroll]] for (uint g = 0; g < G; ++g) mx[g] = max(m[g], mx[g]), sum[g] = 0.0;
    for (uint f = tid; f < G * P; f += WG_SIZE) {
        const uint g = f / P;
        if (f % P >= n) continue;
        float mg = mx[0];
        [[unroll]] for (uint gg = 1; gg < G; ++gg)
            if (gg == g) mg = mx[gg];
        float e = exp(sh[SH_W + f] - mg);
        sh[SH_W + f] = e;
        [[unroll]] for (uint gg = 0; gg < G; ++gg)
            if (gg == g) sum[gg] += e;
    }
    WG_REDUCE_G(sum, add_f, subgroupAdd)
    [[unroll]] for (uint g = 0; g < G; ++g) {
        const float c = exp(m[g] - mx[g]);
        l[g] = l[g] * c + sum[g];
        m[g] = mx[g];
        acc_a[g] *= c;
        acc_b[g] *= c;
    }
    [[unroll]] for (uint k = 0; k < PT; ++k) {
        const uint i = row + k * R;
        const vec4 va = vec4(unpackHalf2x16(vw[k].x), unpackHalf2x16(vw[k].y));
        const vec4 vb = vec4(unpackHalf2x16(vw[k].z), unpackHalf2x16(vw[k].w));
        [[unroll]] for (uint g = 0; g < G; ++g) {
            float p = i < n ? sh[SH_W + g * P + i] : 0.0;
            acc_a[g] += p * va;
            acc_b[g] += p * vb;
        }
    }
    barrier();  // sh is rewritten by the next pass
}

// Each head's output, the sum of its rows' partials (R hd <= 8 WG_SIZE floats): with WO into
// oh; else the output itself (one run) or this run's unnormalized partials.
void write_heads(uint h0, uint sp, uint n_run, uint row, uint seg, float l[G], vec4 acc_a[G],
                 vec4 acc_b[G]) {
    const uint tid = gl_LocalInvocationID.x, hd = P_HEAD_DIM, R = WG_SIZE / (hd / 8u);
    const uint row_len = 2u + hd, vb = row * hd + seg * 8u;
    [[unroll]] for (uint g = 0; g < G; ++g) {
        [[unroll]] for (uint d = 0; d < 4u; ++d)
            sh[vb + d] = acc_a[g][d], sh[vb + 4u + d] = acc_b[g][d];
        barrier();
        const uint h = h0 + g, base = (h * P_N_SPLIT + sp) * row_len;
        for (uint d = tid; d < hd; d += WG_SIZE) {
            float t = 0.0;
            for (uint r = 0; r < R; ++r) t += sh[r * hd + d];
#if defined(WO)
            oh[d] = t / l[g];
#else
            if (n_run == 1u) o[h * hd + d] = t / l[g];
            else part[base + 2u + d] = t;
#endif
        }
        barrier();
    }
}

#if !defined(WO)
// A run of several: its maxima and sums beside its partials; the last run of the group to
// finish (the counter, left at zero) combines its heads' partials: each run's weight exp(m_r -
// max) and the sums first, all runs at once (sh: [g][run] maxima, then weights; [G n_run + ..]
// the sums, 2 G n_split <= 8 WG_SIZE), then each output over the runs, 16 loads at a time.
void combine_runs(uint h0, uint sp, uint n_run, float m[G], float l[G]) {
    const uint tid = gl_LocalInvocationID.x, hd = P_HEAD_DIM, row_len = 2u + hd;
    if (tid == 0u) {
        [[unroll]] for (uint g = 0; g < G; ++g) {
            const uint base = ((h0 + g) * P_N_SPLIT + sp) * row_len;
            part[base] = m[g], part[base + 1u] = l[g];
        }
    }
    memoryBarrierBuffer();
    barrier();
    const uint hg = gl_WorkGroupID.x;
    if (tid == 0u) last_s = atomicAdd(counter[hg], 1u) == n_run - 1u ? 1u : 0u;
    barrier();
    if (last_s == 0u) return;
    memoryBarrierBuffer();
    float mx[G], den[G];
    [[unroll]] for (uint g = 0; g < G; ++g) mx[g] = -1e30, den[g] = 0.0;
    for (uint f = tid; f < G * n_run; f += WG_SIZE) {
        const uint g = f / n_run, b = ((h0 + g) * P_N_SPLIT + f % n_run) * row_len;
        const float mr = part[b];
        sh[f] = mr;
        sh[G * n_run + f] = part[b + 1u];
        [[unroll]] for (uint gg = 0; gg < G; ++gg)
            if (gg == g) mx[gg] = max(mx[gg], mr);
    }
    WG_REDUCE_G(mx, max, subgroupMax)
    for (uint f = tid; f < G * n_run; f += WG_SIZE) {
        const uint g = f / n_run;
        float mg = mx[0];
        [[unroll]] for (uint gg = 1; gg < G; ++gg)
            if (gg == g) mg = mx[gg];
        const float w = exp(sh[f] - mg);
        sh[f] = w;
        [[unroll]] for (uint gg = 0; gg < G; ++gg)
            if (gg == g) den[gg] += sh[G * n_run + f] * w;
    }
    WG_REDUCE_G(den, add_f, subgroupAdd)
    for (uint e = tid; e < G * hd; e += WG_SIZE) {
        const uint g = e / hd, h = h0 + g, d = e % hd, b0 = h * P_N_SPLIT * row_len + 2u + d;
        float num = 0.0;
        for (uint r = 0; r < n_run; r += 16u) {
            float ok[16];  // clamped: loads unconditional
            [[unroll]] for (uint u = 0; u < 16u; ++u)
                ok[u] = part[b0 + min(r + u, n_run - 1u) * row_len];
            [[unroll]] for (uint u = 0; u < 16u; ++u)
                if (r + u < n_run) num += sh[g * n_run + r + u] * ok[u];
        }
        float dg = den[0];
        [[unroll]] for (uint gg = 1; gg < G; ++gg)
            if (gg == g) dg = den[gg];
        o[h * hd + d] = num / dg;
    }
    if (tid == 0u) counter[hg] = 0u;
}
#endif

void main() {
    const uint tid = gl_LocalInvocationID.x, hd = P_HEAD_DIM;
    // Heads h0 .. h0 + G - 1 of KV head hk.
#if defined(WO)
    const uint h0 = gl_WorkGroupID.x, sp = 0u, hk = h0 / (P_N_HEAD / P_N_HEAD_KV);
#else
    const uint h0 = gl_WorkGroupID.x * G, sp = gl_WorkGroupID.y;
    const uint hk = h0 / (P_N_HEAD / P_N_HEAD_KV);
#endif
    const uint TPP = hd / 8u, R = WG_SIZE / TPP, P = R * PT;  // positions per pass
#if defined(WO)
    // Wo's first loads do not depend on the attention: in flight during it.
    load_wo(h0, gl_WorkGroupID.y * P_SLICE_ROWS + tid / NL);
#endif
    // This workgroup's run of passes: positions [j_begin, j_end).
    const uint n_kv = step_pos0 + 1u;
    uint per;
#if defined(FAMILY)
    // A sliding window: runs over its positions [j_lo, n_kv) alone.
    const uint j_lo = pc.window > 0u && n_kv > pc.window ? n_kv - pc.window : 0u;
    const uint n_run = runs((n_kv - j_lo + P - 1u) / P, per);
    if (sp >= n_run) return;
    const uint j_begin = j_lo + sp * per * P, j_end = min(j_begin + per * P, n_kv);
#else
    const uint n_run = runs((n_kv + P - 1u) / P, per);
    if (sp >= n_run) return;
    const uint j_begin = sp * per * P, j_end = min(j_begin + per * P, n_kv);
#endif
    const uint row = tid / TPP, seg = tid % TPP;
    const uint stride4 = P_KV_STRIDE / 8u, kv0 = (hk * hd) / 8u + seg;
    const uvec4 knew = step_key(h0, hk, row, seg, CACHE_ROW(n_kv - 1u) * stride4 + kv0);
    vec4 qa[G], qc[G];  // this thread's 8 dimensions of each head's query, scaled
    float m[G], l[G];
    vec4 acc_a[G], acc_b[G];  // dimensions 8 seg .. 8 seg + 7 of each head's output
    [[unroll]] for (uint g = 0; g < G; ++g) {
        const uint qb = ((h0 + g) * hd) / 4u + 2u * seg;
        const float sc = QK_NORM != 0u ? P_SCALE * head_inv_rms(h0 + g) : P_SCALE;
        qa[g] = q4[qb] * sc;
        qc[g] = q4[qb + 1u] * sc;
        m[g] = -1e30;
        l[g] = 0.0;
        acc_a[g] = vec4(0.0);
        acc_b[g] = vec4(0.0);
    }
#if defined(WO)
    const uint j_stop = (ADIAG & 2u) != 0u ? j_begin : j_end;
    if ((ADIAG & 2u) != 0u) l[0] = 1.0;
#else
    const uint j_stop = j_end;
#endif
    for (uint p0 = j_begin; p0 < j_stop; p0 += P)
        attend_pass(p0, min(P, j_end - p0), n_kv, row, kv0, knew, qa, qc, m, l, acc_a, acc_b);
    write_heads(h0, sp, n_run, row, seg, l, acc_a, acc_b);
#if defined(WO)
    if ((ADIAG & 4u) != 0u) {
        if (tid == 0u) xr[h0] += oh[0] + wo_keep();  // keeps the attention and one Wo load
        return;
    }
    project_out(h0);
#else
    if (n_run > 1u) combine_runs(h0, sp, n_run, m, l);
#endif
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
