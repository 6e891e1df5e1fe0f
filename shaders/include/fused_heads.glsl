// matvec_fused_h.comp's HEADS mode: Q/K/V rows with their heads finished in the same dispatch
// (bias, per-head RMSNorm, RoPE, K and V into the caches), per head or per pair of rows.
// Included after the shader's bindings and push constants, which it reads.
#include "rope_family.glsl"

// Heads in groups of 2 rows (HEADS_C 1 and 2): each group of q or k rows is a RoPE pair (NEOX:
// dimensions j and j + n_rot / 2 of its head; else 2j and 2j + 1), which its lane 0 rotates and
// writes as soon as it has both sums. No head waits for its last row: no count, no finish. With
// q/k norms (QK_DEFER) the pair is rotated times its norm weights but not yet divided by the
// head's rms, which is a factor of the whole head: the pair leaves its share of the head's sum
// of squares in binding 20, and the attention (attention.comp QK_NORM) scales q and the step's
// key, which goes to binding 21 instead of the cache.
#define HEADS_PAIRS (HEADS_C != 0u)
#define QK_DEFER (HEADS_C == 2u)

// The caches' row of the step's position.
uint heads_cache_row() { return pc.kv_ring > 0u ? step_pos0 % pc.kv_ring : step_pos0; }

// The bias of dimension d of q head h (sm 0) or k head h (sm 1); 0 without biases (flag 1).
float head_bias(uint sm, uint h, uint d) {
    return (pc.flags & 1u) == 0u ? 0.0 : sm == 0u ? bq[h * HEAD_DIM + d] : bk[h * HEAD_DIM + d];
}
// Dimension d of q head h (sm 0) or k head h (sm 1) as the projection left it, plus its bias.
float head_in(uint sm, uint base, uint h, uint d) {
    return (sm == 0u ? yc[base + d] : kr[base + d]) + head_bias(sm, h, d);
}
// The q (sm 0) or k norm weight of dimension d (flag 2); 1 without q/k norms.
float head_norm_w(uint sm, uint d) {
    return (pc.flags & 2u) == 0u ? 1.0 : sm == 0u ? qn[d] : kn[d];
}
// ... times 1 / rms and the norm weight (flag 2; else r is 1).
float head_normed(uint sm, uint base, uint h, uint d, float r) {
    return head_in(sm, base, h, d) * (r * head_norm_w(sm, d));
}
// q into y; k into the K cache, or (QK_DEFER) into binding 21 for the attention to finish.
void head_out(uint sm, uint base, uint h, uint d, float v) {
    if (sm == 0u) yc[base + d] = v;
    else if (QK_DEFER) kr[base + d] = v;
    else kc[heads_cache_row() * KV_DIM + h * HEAD_DIM + d] = float16_t(v);
}

// The dimensions of RoPE pair i of a head: i and i + n_rot / 2 (NEOX, flag 8), else 2i, 2i + 1.
uvec2 head_pair(uint i) {
    return (pc.flags & 8u) != 0u ? uvec2(i, i + ROPE_N_ROT / 2u) : uvec2(2u * i, 2u * i + 1u);
}
// cos and sin of pair i at the step's position.
vec2 head_cs(uint i) {
    return family_rope_cs(i, step_pos0, ROPE_N_ROT, ROPE_FREQ_BASE, pc.freq_scale, ROPE_HAS_FF,
                          pc.ext_factor, pc.corr_low, pc.corr_high, pc.mscale);
}
// Dimensions d of a head get (a, b) rotated by cs.
void head_out_rotated(uint sm, uint base, uint h, uvec2 d, float a, float b, vec2 cs) {
    head_out(sm, base, h, d.x, a * cs.x - b * cs.y);
    head_out(sm, base, h, d.y, a * cs.y + b * cs.x);
}

// Row r of Wq or Wk as group r / 2 reads it in pairs: with NEOX, the group's slot s takes
// dimension j + s n_rot / 2 (j < n_rot / 2), the unrotated dimensions past n_rot in order.
uint heads_pair_row(uint r) {
    const uint d = r % HEAD_DIM, j = d / 2u, s = d % 2u, half_rot = ROPE_N_ROT / 2u;
    if ((pc.flags & 8u) == 0u || j >= half_rot) return r;
    return r - d + j + s * half_rot;
}

// Lane 0 of a group of pairs (HEADS_PAIRS): tot holds its two sums, r the first one's row.
// q and k: biased, rotated (within n_rot), q into y and k into the K cache; v: two rows of V.
void heads_write_pair(uint sm, uint tid, uint r, float tot[2]) {
    if (tid != 0u) return;
    if (sm == 2u) {
        const bool b = (pc.flags & 1u) != 0u;
        vc[heads_cache_row() * KV_DIM + r] = float16_t(tot[0] + (b ? bv[r] : 0.0));
        vc[heads_cache_row() * KV_DIM + r + 1u] = float16_t(tot[1] + (b ? bv[r + 1u] : 0.0));
        return;
    }
    const uint hd = HEAD_DIM, h = r / hd, da = r % hd;
    const uint base = (sm == 0u ? Y_OFF : pc.k_off) + h * hd;
    // The dimensions: unrotated da, da + 1, or rotated pair i (the group's first dimension da
    // is pair i's first: heads_pair_row); a pair's slot in its head, [0, hd / 2).
    const bool rotated = da < ROPE_N_ROT;
    const uint i = (pc.flags & 8u) != 0u ? da : da / 2u;
    const uvec2 d = rotated ? head_pair(i) : uvec2(da, da + 1u);
    const float a = tot[0] + head_bias(sm, h, d.x), b = tot[1] + head_bias(sm, h, d.y);
    if (QK_DEFER) {
        const uint slot = sm == 0u ? h : ROWS0 / hd + h;
        qk_ss[slot * (hd / 2u) + (rotated ? i : da / 2u)] = a * a + b * b;
    }
    // (head_norm_w: 1 without q/k norms.)
    const float wa = a * head_norm_w(sm, d.x), wb = b * head_norm_w(sm, d.y);
    if (rotated) {
        head_out_rotated(sm, base, h, d, wa, wb, head_cs(i));
    } else {
        head_out(sm, base, h, d.x, wa);
        head_out(sm, base, h, d.y, wb);
    }
}

// One subgroup finishes q or k head h once all its rows are in y: a lane takes RoPE pairs (or
// the unrotated dimensions past n_rot). Up to FIN_K of each a lane reads once, before its angles
// are computed, and keeps in registers (every head on a 32-lane subgroup); the rest it reads
// again after the norm.
const uint FIN_K = 8u;
void finish_head(uint sm, uint h, uint lane, uint sgs) {
    const uint hd = HEAD_DIM, base = (sm == 0u ? Y_OFF : pc.k_off) + h * hd;
    const uint n_rot = ROPE_N_ROT, half_rot = n_rot / 2u;
    const bool normed = (pc.flags & 2u) != 0u;
    float a[FIN_K], b[FIN_K], u[FIN_K];
    float ss = 0.0;
    [[unroll]] for (uint k = 0; k < FIN_K; ++k) {
        const uint i = lane + k * sgs, d = n_rot + lane + k * sgs;
        const uvec2 p = head_pair(i);
        a[k] = i < half_rot ? head_in(sm, base, h, p.x) : 0.0;
        b[k] = i < half_rot ? head_in(sm, base, h, p.y) : 0.0;
        u[k] = d < hd ? head_in(sm, base, h, d) : 0.0;
        ss += a[k] * a[k] + b[k] * b[k] + u[k] * u[k];
    }
    vec2 cs[FIN_K];
    [[unroll]] for (uint k = 0; k < FIN_K; ++k) {
        const uint i = lane + k * sgs;
        cs[k] = i < half_rot ? head_cs(i) : vec2(1.0, 0.0);
    }
    float r = 1.0;
    if (normed) {
        for (uint i = lane + FIN_K * sgs; i < half_rot; i += sgs) {
            const uvec2 p = head_pair(i);
            const float va = head_in(sm, base, h, p.x), vb = head_in(sm, base, h, p.y);
            ss += va * va + vb * vb;
        }
        for (uint d = n_rot + lane + FIN_K * sgs; d < hd; d += sgs) {
            const float v = head_in(sm, base, h, d);
            ss += v * v;
        }
        r = inversesqrt(subgroupAdd(ss) / float(hd) + EPS);
    }
    [[unroll]] for (uint k = 0; k < FIN_K; ++k) {
        const uint i = lane + k * sgs, d = n_rot + lane + k * sgs;
        const uvec2 p = head_pair(i);
        if (i < half_rot)
            head_out_rotated(sm, base, h, p, a[k] * (r * head_norm_w(sm, p.x)),
                             b[k] * (r * head_norm_w(sm, p.y)), cs[k]);
        if (d < hd) head_out(sm, base, h, d, u[k] * (r * head_norm_w(sm, d)));
    }
    for (uint i = lane + FIN_K * sgs; i < half_rot; i += sgs) {
        const uvec2 p = head_pair(i);
        head_out_rotated(sm, base, h, p, head_normed(sm, base, h, p.x, r),
                         head_normed(sm, base, h, p.y, r), head_cs(i));
    }
    for (uint d = n_rot + lane + FIN_K * sgs; d < hd; d += sgs)
        head_out(sm, base, h, d, head_normed(sm, base, h, d, r));
}

// Once a subgroup has written all its groups (grp0, grp0 + n_sg, ...): their q and k rows made
// visible with one barrier (one per group held the subgroup's loop up), then each group counted
// in its head; the subgroup that counts a head's last group finishes it (reading after the count)
// and leaves its count at zero.
void count_heads(uint grp0, uint n_sg, uint n_groups, uint lane, uint sgs) {
    memoryBarrierBuffer();
    subgroupBarrier();
    for (uint grp = grp0; grp < n_groups; grp += n_sg) {
        const uint row = grp * ROWS;  // of [Wq; Wk; Wv]
        if (row >= ROWS0 + ROWS1) break;  // v rows: nothing to finish
        const uint sm = row < ROWS0 ? 0u : 1u, h = (row - sm * ROWS0) / HEAD_DIM;
        const uint slot = sm == 0u ? h : ROWS0 / HEAD_DIM + h;
        uint last = 0u;
        if (lane == 0u) last = atomicAdd(head_count[slot], 1u) == HEAD_DIM / ROWS - 1u ? 1u : 0u;
        if (subgroupMax(last) == 0u) continue;
        memoryBarrierBuffer();
        finish_head(sm, h, lane, sgs);
        if (lane == 0u) head_count[slot] = 0u;
    }
}
