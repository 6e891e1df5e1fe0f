#version 450
// Causal attention of a batch of queries on the tensor cores (GL_NV_cooperative_matrix). A
// workgroup of 4 subgroups of 32 takes 64 queries of one head, each subgroup 16 of them, and
// walks the keys once in tiles of BK positions of the F16 cache (the batch's own keys and
// values are stored there first): S = Q K^T, a softmax step, O += P V. Each tile's K and V are
// staged in shared memory by the whole workgroup, the next tile's loads in flight while this
// one is used (two buffers, one barrier a tile).
// NV cooperative matrices cannot scale rows, so the output is rescaled lazily: P = exp(S - m)
// with m a row's reference maximum, which moves (and O goes through shared memory once to be
// rescaled) only when a score exceeds it by more than LAZY; P <= exp(LAZY) stays well inside
// F16. The denominator divides the output on its way out.
// FAMILY (the decoder families, ops_family.cpp): q read at an offset and stride (Phi-3's fused
// attn_qkv), scores soft-capped (cap * tanh(s / cap), Gemma 2), a sliding window (a query at
// position i sees keys j > i - window; the workgroup reads no key before its first query's
// window, nor tiles before its subgroup's), and caches that are rings of kv_ring rows.
// SPLIT_O (heads of 144 to 256 dimensions, Gemma): two workgroups share a head's 64 queries, each
// summing half of the output's dimensions (S is computed by both); the tile is staged by the
// whole workgroup straight from memory into one buffer (two would not fit 48 KiB), Q in passes
// of 128 dimensions.
// Needs subgroups of 32, head_dim % 16 == 0 and head_dim <= 128, or 256 with SPLIT_O (ops.cpp,
// ops_family.cpp check).
#extension GL_GOOGLE_include_directive : require
#extension GL_NV_cooperative_matrix : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_KHR_shader_subgroup_vote : require
#include "include/common.glsl"

layout(constant_id = 1) const uint HD = 128;  // head_dim

layout(binding = 0) readonly buffer QBuf { vec4 q4[]; };
layout(binding = 1) readonly buffer KBuf { uvec4 kc4[]; };
layout(binding = 2) readonly buffer VBuf { uvec4 vc4[]; };
layout(binding = 3) writeonly buffer OBuf { vec4 o4[]; };
DECLARE_STEP_BUFFER(4)

layout(push_constant) uniform PC {
    uint n_head;
    uint n_head_kv;
    uint q_stride;   // floats between tokens of q (a multiple of 4)
    uint kv_stride;  // halfs between positions of the cache (a multiple of 8)
    uint o_stride;   // floats between tokens of o (a multiple of 4)
    float scale;
    uint n_tokens;
#ifdef FAMILY
    uint q_off;     // floats before the first token's q (a multiple of 4)
    float softcap;  // > 0: scores soft-capped
    uint window;    // > 0: sliding window of this many positions
    uint kv_ring;   // > 0: the caches are rings of this many rows (position p in row p % kv_ring)
#endif
} pc;

#ifdef FAMILY
#define Q_OFF pc.q_off
uint cache_row(uint j) { return pc.kv_ring > 0u ? j % pc.kv_ring : j; }
// The first key a query at position p sees.
uint first_key(uint p) { return pc.window > 0u && p + 1u > pc.window ? p + 1u - pc.window : 0u; }
#else
#define Q_OFF 0u
uint cache_row(uint j) { return j; }
uint first_key(uint p) { return 0u; }
#endif

#define SG 4u               // subgroups a workgroup
#define BQ 16u              // queries a subgroup
#define BK 32u              // positions a key tile
#define LQ 17u              // uvec4 per staged row of Q (128 halfs a pass), + 1 to spread banks
#ifdef SPLIT_O
#define OD (HD / 2u)        // output dimensions a workgroup
#define LDK (HD / 8u + 1u)  // uvec4 per staged row of K, + 1 to spread banks
#define LDV (OD / 8u + 1u)  // and of V
#define NBUF 1u             // tiles staged at once
#else
#define OD HD
#define LDK 17u             // uvec4 per staged row of up to 128 halfs, + 1 to spread banks
#define LDV 17u
#define NBUF 2u
#endif
#define KTILE (BK * LDK)    // uvec4 of one staged K tile
#define BUF (KTILE + BK * LDV)  // and of one K and V tile
#define LDS (BK + 4u)       // floats per row of scores (rows 16-byte aligned)
#define LDP (BK / 8u + 1u)  // uvec4 per row of P
#define LAZY 8.0            // how far a score may exceed the reference maximum before it moves
#define HFK (HD / 8u)       // uvec4 of a row of K
#define HF (OD / 8u)        // 8-column output fragments (uvec4 of a staged row of V)
#define DF (HD / 16u)       // 16-dimension steps of Q K^T
#define LOADS ((BK * HF + WG_SIZE - 1u) / WG_SIZE)  // uvec4 of K (and of V) a thread stages

shared uvec4 skv[NBUF * BUF];       // K, V of the tiles [buffer][K|V][position][dim]; Q at first
shared float ss[SG * BQ * LDS];     // per subgroup: scores [query][position], or a fragment
shared uvec4 sp[SG * BQ * LDP];     // per subgroup: probabilities [query][position]

uint kv0, kvs, n_keys, key0;  // key0: the workgroup's first key
uint vo;                      // the workgroup's first uvec4 of a row of V (SPLIT_O: its half)

#ifdef SPLIT_O
// Tile kt's keys and (this workgroup's half of) values into the buffer: zeros outside the keys
// in use.
void load_tile(uint kt) {
    for (uint i = gl_LocalInvocationID.x; i < BK * HFK; i += WG_SIZE) {
        uint p = i / HFK, c = i - p * HFK, j = kt * BK + p;
        skv[p * LDK + c] = j < n_keys && j >= key0 ? kc4[cache_row(j) * kvs + kv0 + c] : uvec4(0u);
    }
    for (uint i = gl_LocalInvocationID.x; i < BK * HF; i += WG_SIZE) {
        uint p = i / HF, c = i - p * HF, j = kt * BK + p;
        skv[KTILE + p * LDV + c] =
            j < n_keys && j >= key0 ? vc4[cache_row(j) * kvs + kv0 + vo + c] : uvec4(0u);
    }
}
#else

// Tile kt's keys and values into registers: zeros outside the keys in use.
void fetch(uint kt, out uvec4 k[4], out uvec4 v[4]) {
    [[unroll]] for (uint u = 0; u < 4u; ++u) {
        uint i = gl_LocalInvocationID.x + u * WG_SIZE, p = i / HF, j = kt * BK + p;
        k[u] = uvec4(0u);
        v[u] = uvec4(0u);
        if (u < LOADS && i < BK * HF && j < n_keys && j >= key0) {
            uint a = cache_row(j) * kvs + kv0 + (i - p * HF);
            k[u] = kc4[a];
            v[u] = vc4[a];
        }
    }
}
void stage(uint buf, uvec4 k[4], uvec4 v[4]) {
    [[unroll]] for (uint u = 0; u < 4u; ++u) {
        uint i = gl_LocalInvocationID.x + u * WG_SIZE, p = i / HF;
        if (u < LOADS && i < BK * HF) {
            skv[buf * BUF + p * LDK + (i - p * HF)] = k[u];
            skv[buf * BUF + KTILE + p * LDV + (i - p * HF)] = v[u];
        }
    }
}
#endif

// Dimensions [8 c0, 8 c0 + 128) of Q of the workgroup's queries (from tw) of head h, scaled and
// rounded to F16 (zeros past the batch), into the K/V buffers for the subgroups to load.
void stage_q(uint tw, uint h, uint c0) {
    const uint QW = min(HFK, 16u);  // uvec4 of a row a pass
    if (c0 > 0u) barrier();         // the previous pass is loaded
    for (uint i = gl_LocalInvocationID.x; i < SG * BQ * QW; i += WG_SIZE) {
        uint r = i / QW, c = i - r * QW, t = tw + r;
        uvec4 v = uvec4(0u);
        if (t < pc.n_tokens && c0 + c < HFK) {
            uint b = (Q_OFF + t * pc.q_stride + h * HD) / 4u + (c0 + c) * 2u;
            vec4 x = q4[b] * pc.scale, y = q4[b + 1u] * pc.scale;
            v = uvec4(packHalf2x16(x.xy), packHalf2x16(x.zw), packHalf2x16(y.xy),
                      packHalf2x16(y.zw));
        }
        skv[r * LQ + c] = v;
    }
    barrier();
}

// Lane (row, part)'s 16 scores of the tile whose columns start at key j0 (soft-capped), from
// the subgroup's score space at sb; returns their visible maximum over the row's two lanes
// (query position qpos sees keys qfirst .. qpos).
float read_scores(uint j0, uint sb, uint row, uint part, uint qpos, uint qfirst,
                  out float sv[16]) {
    float mt = -1e30;
    [[unroll]] for (uint c = 0; c < 16u; ++c) {
        float x = ss[sb + row * LDS + part * 16u + c];
#ifdef FAMILY
        // tanh is 1 in float well before 10; clamping keeps it from inf / inf.
        if (pc.softcap > 0.0) x = pc.softcap * tanh(clamp(x / pc.softcap, -10.0, 10.0));
#endif
        sv[c] = x;
        if (j0 + c <= qpos && j0 + c >= qfirst) mt = max(mt, x);
    }
    return max(mt, subgroupShuffleXor(mt, 1u));
}

// P = exp(S - m) of those 16 scores as F16 pairs into the subgroup's P rows at pb; l adds what
// P V will multiply (the rounded values).
void write_p(uint j0, uint pb, uint row, uint part, uint qpos, uint qfirst, float m,
             float sv[16], inout float l) {
    uint w[8];
    [[unroll]] for (uint c = 0; c < 16u; c += 2u) {
        float p0 = j0 + c <= qpos && j0 + c >= qfirst ? exp(sv[c] - m) : 0.0;
        float p1 = j0 + c + 1u <= qpos && j0 + c + 1u >= qfirst ? exp(sv[c + 1u] - m) : 0.0;
        w[c / 2u] = packHalf2x16(vec2(p0, p1));
        vec2 r = unpackHalf2x16(w[c / 2u]);
        l += r.x + r.y;
    }
    sp[pb + row * LDP + part * 2u] = uvec4(w[0], w[1], w[2], w[3]);
    sp[pb + row * LDP + part * 2u + 1u] = uvec4(w[4], w[5], w[6], w[7]);
    subgroupMemoryBarrierShared();
    subgroupBarrier();
}

// A fragment of O times alpha, through the subgroup's score space at sb (its scores are read).
void rescale_frag(inout fcoopmatNV<32, gl_ScopeSubgroup, 16, 8> a, uint sb, float alpha) {
    coopMatStoreNV(a, ss, sb, 8u, false);
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    [[unroll]] for (uint e = 0; e < 4u; ++e) ss[sb + gl_SubgroupInvocationID * 4u + e] *= alpha;
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    coopMatLoadNV(a, ss, sb, 8u, false);
    subgroupBarrier();
}

// Output fragment f (8 columns) of query t, divided by its row's denominator l, through the
// subgroup's score space; lane (row, part) holds columns part * 4 .. + 4 (rows past the batch
// are dropped).
void write_frag(fcoopmatNV<32, gl_ScopeSubgroup, 16, 8> a, uint f, uint sb, uint t, uint h,
                float l) {
    const uint lane = gl_SubgroupInvocationID, part = lane & 1u;
    coopMatStoreNV(a, ss, sb, 8u, false);
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    vec4 v = vec4(ss[sb + lane * 4u], ss[sb + lane * 4u + 1u], ss[sb + lane * 4u + 2u],
                  ss[sb + lane * 4u + 3u]);
    if (t < pc.n_tokens) o4[(t * pc.o_stride + h * HD) / 4u + vo * 2u + f * 2u + part] = v / l;
    subgroupBarrier();
}

void main() {
    const uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID, tid = gl_LocalInvocationID.x;
    const uint n_blocks = (pc.n_tokens + SG * BQ - 1u) / (SG * BQ);
    // The last queries see the most keys: their workgroups start first.
    const uint tw = (n_blocks - 1u - gl_WorkGroupID.y) * SG * BQ, t0 = tw + sg * BQ;
    const uint h = gl_WorkGroupID.x, hk = h / (pc.n_head / pc.n_head_kv);
    kvs = pc.kv_stride / 8u;
    kv0 = hk * HFK;
    vo = gl_WorkGroupID.z * HF;
    n_keys = step_pos0 + min(tw + SG * BQ, pc.n_tokens);  // the workgroup's last query's view
    key0 = first_key(step_pos0 + tw);                      // and its first query's first key
    const uint n_tiles = (n_keys + BK - 1u) / BK, kt0 = key0 / BK;
    const uint sb = sg * BQ * LDS, pb = sg * BQ * LDP;

    // Q into each subgroup's registers, 128 dimensions a pass.
    fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> qa[DF];
    [[unroll]] for (uint c0 = 0; c0 < HFK; c0 += 16u) {
        stage_q(tw, h, c0);
        [[unroll]] for (uint d = c0 / 2u; d < min(DF, c0 / 2u + 8u); ++d)
            coopMatLoadNV(qa[d], skv, sg * BQ * LQ + d * 2u - c0, LQ, false);
    }
#ifndef SPLIT_O
    uvec4 pk[4], pv[4];
    fetch(kt0, pk, pv);
    barrier();
    stage(0u, pk, pv);
    barrier();
#endif

    // Lane (row, part) owns columns part * 16 .. + 16 of its query's row of scores; the
    // row's two lanes keep the same m and each its part of the denominator l.
    const uint row = lane >> 1, part = lane & 1u;
    const uint qpos = step_pos0 + t0 + row;  // positions qfirst .. qpos are visible
    const uint qfirst = first_key(qpos);
    // The subgroup's last query in the batch: tiles past it are skipped (none when the
    // subgroup has no query in the batch).
    const bool in_batch = t0 < pc.n_tokens;
    const uint q_last = step_pos0 + min(t0 + BQ, pc.n_tokens) - 1u;
    const uint q_first = first_key(step_pos0 + t0);  // and its first query's first key
    float m = -1e30, l = 0.0;
    fcoopmatNV<32, gl_ScopeSubgroup, 16, 8> acc[HF];
    [[unroll]] for (uint f = 0; f < HF; ++f) acc[f] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 8>(0.0);

    for (uint kt = kt0; kt < n_tiles; ++kt) {
        const uint k0 = kt * BK, kb = ((kt - kt0) % NBUF) * BUF, vb = kb + KTILE;
#ifdef SPLIT_O
        barrier();  // the last tile is read (and Q loaded)
        load_tile(kt);
        barrier();
#else
        if (kt + 1u < n_tiles) fetch(kt + 1u, pk, pv);
#endif
        if (in_batch && k0 <= q_last && k0 + BK > q_first) {
            // S [16 x BK] = Q [16 x HD] K^T [HD x BK]
            fcoopmatNV<32, gl_ScopeSubgroup, 16, 8> s[BK / 8u];
            [[unroll]] for (uint j = 0; j < BK / 8u; ++j) s[j] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 8>(0.0);
            [[unroll]] for (uint d = 0; d < DF; ++d) {
                [[unroll]] for (uint j = 0; j < BK / 8u; ++j) {
                    fcoopmatNV<16, gl_ScopeSubgroup, 16, 8> b;
                    coopMatLoadNV(b, skv, kb + 8u * j * LDK + d * 2u, LDK, true);
                    s[j] = coopMatMulAddNV(qa[d], b, s[j]);
                }
            }
            [[unroll]] for (uint j = 0; j < BK / 8u; ++j) coopMatStoreNV(s[j], ss, sb + 8u * j, LDS, false);
            subgroupMemoryBarrierShared();
            subgroupBarrier();

            // Softmax step: the tile's visible maximum, the reference moved if it is exceeded
            // by more than LAZY, then P = exp(S - m) as F16.
            const uint j0 = k0 + part * 16u;
            float sv[16];
            const float mt = read_scores(j0, sb, row, part, qpos, qfirst, sv);
            const bool grow = mt > m + LAZY;
            if (subgroupAny(grow)) {
                const float alpha = grow ? exp(m - mt) : 1.0;  // 0 while m is the initial -1e30
                if (grow) m = mt;
                l *= alpha;
                if (kt > kt0) {  // O is still zero after no tile
                    subgroupBarrier();  // the scores are read: their space takes a fragment
                    [[unroll]] for (uint f = 0; f < HF; ++f) rescale_frag(acc[f], sb, alpha);
                }
            }
            write_p(j0, pb, row, part, qpos, qfirst, m, sv, l);

            // O [16 x OD] += P [16 x BK] V [BK x OD]
            [[unroll]] for (uint k = 0; k < BK; k += 16u) {
                fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> a;
                coopMatLoadNV(a, sp, pb + k / 8u, LDP, false);
                [[unroll]] for (uint f = 0; f < HF; ++f) {
                    fcoopmatNV<16, gl_ScopeSubgroup, 16, 8> b;
                    coopMatLoadNV(b, skv, vb + k * LDV + f, LDV, false);
                    acc[f] = coopMatMulAddNV(a, b, acc[f]);
                }
            }
        }
#ifndef SPLIT_O
        // The other buffer was last read before the previous barrier.
        if (kt + 1u < n_tiles) stage((kt + 1u - kt0) & 1u, pk, pv);
        barrier();
#endif
    }
    if (!in_batch) return;

    l += subgroupShuffleXor(l, 1u);
    [[unroll]] for (uint f = 0; f < HF; ++f) write_frag(acc[f], f, sb, t0 + row, h, l);
}
