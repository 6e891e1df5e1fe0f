#version 450
// Decode mat-vec with its neighbours fused in, so that one token's layer is five dependent
// dispatches: each workgroup computes 4 output rows over the whole input vector.
//   STORE: y = W x'            ADD: y += W x (the residual add)
//   QKV:   rows of [Wq; Wk; Wv] x', rotated (RoPE) in pairs; K and V stored as F16 at the
//          step's position in the cache, Q into y
//   SILU:  y = silu(Wg x') * (Wu x') for 2 rows of each
// x' is x RMS-normalized and scaled by the norm weight when has_norm is set: every workgroup
// reads all of x anyway, so it sums x^2 on the way and scales its dot products at the end.
// Q4_0/Q8_0 weights use the regrouped layout of weights.cpp; their quants become floats by
// OR-ing them into the mantissa of 2^23 (exact, and cheaper than an int-to-float conversion).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "include/common.glsl"

#define MODE_STORE 0u
#define MODE_ADD 1u
#define MODE_QKV 2u
#define MODE_SILU 3u

#if defined(TYPE_Q4_0) || defined(TYPE_Q8_0)
#if defined(TYPE_Q8_0)
#define QV 2u
#else
#define QV 1u
#endif
// Each thread reads a quarter of a block: Q4_0 one uint (8 elements), Q8_0 one uvec2.
#if defined(TYPE_Q8_0)
#define QPART uvec2
#else
#define QPART uint
#endif
layout(binding = 0) readonly buffer W0 { QPART wq0[]; };
layout(binding = 0) readonly buffer W0D { float16_t wd0[]; };
layout(binding = 1) readonly buffer W1 { QPART wq1[]; };
layout(binding = 1) readonly buffer W1D { float16_t wd1[]; };
layout(binding = 2) readonly buffer W2 { QPART wq2[]; };
layout(binding = 2) readonly buffer W2D { float16_t wd2[]; };
#elif defined(TYPE_F32)
layout(binding = 0) readonly buffer W0 { float wf0[]; };
layout(binding = 1) readonly buffer W1 { float wf1[]; };
layout(binding = 2) readonly buffer W2 { float wf2[]; };
#elif defined(TYPE_F16)
layout(binding = 0) readonly buffer W0 { float16_t wf0[]; };
layout(binding = 1) readonly buffer W1 { float16_t wf1[]; };
layout(binding = 2) readonly buffer W2 { float16_t wf2[]; };
#else
#error "no weight type defined"
#endif

layout(binding = 3) readonly buffer XBuf { float x[]; };
layout(binding = 3) readonly buffer XBuf4 { vec4 x4[]; };
layout(binding = 4) readonly buffer NBuf { float nw[]; };
layout(binding = 4) readonly buffer NBuf4 { vec4 nw4[]; };
layout(binding = 5) buffer YBuf { float y[]; };
layout(binding = 6) writeonly buffer KBuf { float16_t kc[]; };
layout(binding = 7) writeonly buffer VBuf { float16_t vc[]; };
DECLARE_STEP_BUFFER(8)
layout(binding = 9) readonly buffer FBuf { float ff[]; };

layout(push_constant) uniform PC {
    uint ncols;
    uint stride;  // units (elements or blocks) per row
    uint mode;
    uint rows0;   // rows of W0 (QKV: of Wq; SILU: of Wg and of Wu)
    uint rows1;   // QKV: rows of Wk and of Wv
    uint x_off;
    uint y_off;
    uint has_norm;
    float eps;
    uint head_dim;
    uint n_rot;
    float freq_base;
    uint has_ff;
    uint kv_dim;  // QKV: halfs between positions of the cache
} pc;

// Rows per workgroup: 8 measured slower than 4 on the H200.
#define SLOTS 4
// Blocks per thread per step: 1 measured fastest on the H200 (2 and 4 hold more registers,
// fewer workgroups fit).
#define UNROLL 1u

#if defined(TYPE_Q4_0) || defined(TYPE_Q8_0)
const uint MAGIC = 0x4B000000u;  // 2^23: its mantissa holds an integer < 2^23 exactly

#include "include/q_rows.glsl"

// Quarter j of block ib of buffer (Q, D) against xa, xb: Q4_0 elements 4j..4j+3 (low
// nibbles) and 16+4j..16+4j+3 (high nibbles); Q8_0 elements 8j..8j+7. The buffer is named at
// compile time: a load chosen by a run-time branch would wait for its data before the next
// block's loads are issued, which cost half the bandwidth.
#if defined(TYPE_Q4_0)
float part_dot(uint q, float d, vec4 xa, vec4 xb) {
    uvec4 u = uvec4(q) >> uvec4(0, 8, 16, 24);
    vec4 lo = uintBitsToFloat((u & 15u) | MAGIC) - 8388616.0;  // 2^23 + 8
    vec4 hi = uintBitsToFloat(((u >> 4) & 15u) | MAGIC) - 8388616.0;
    return (dot(lo, xa) + dot(hi, xb)) * d;
}
#else
float part_dot(uvec2 q, float d, vec4 xa, vec4 xb) {
    // An int8 with its sign bit flipped is the value + 128.
    uvec4 a = ((uvec4(q.x) >> uvec4(0, 8, 16, 24)) & 255u) ^ 128u;
    uvec4 b = ((uvec4(q.y) >> uvec4(0, 8, 16, 24)) & 255u) ^ 128u;
    vec4 lo = uintBitsToFloat(a | MAGIC) - 8388736.0;  // 2^23 + 128
    vec4 hi = uintBitsToFloat(b | MAGIC) - 8388736.0;
    return (dot(lo, xa) + dot(hi, xb)) * d;
}
#endif
#define PART(Q, D, rb, c) \
    part_dot(Q[QR_QUANTS(rb, c) * (4u / QV) + j], float(D[QR_SCALE(rb, c, nblk)]), xa, xb)

// The block loop with slots 0-1 read from (QA, DA) and slots 2-3 from (QB, DB). UNROLL blocks
// per thread per step are loaded unconditionally (clamped index, weight 0 past the end).
#define BLOCK_LOOP(QA, DA, QB, DB)                                                   \
    for (uint blk0 = tid >> 2; blk0 < nblk; blk0 += UNROLL * bstep) {              \
        [[unroll]] for (uint u = 0; u < UNROLL; ++u) {                              \
            uint blk = blk0 + u * bstep;                                           \
            float valid = blk < nblk ? 1.0 : 0.0;                                  \
            blk = min(blk, nblk - 1u);                                             \
            uint xi = (pc.x_off >> 2) + blk * 8u;                                  \
            vec4 xa = x4[xi + xa_i] * valid, xb = x4[xi + xb_i] * valid;           \
            if (pc.has_norm != 0u) {                                               \
                ss += dot(xa, xa) + dot(xb, xb);                                   \
                xa *= nw4[blk * 8u + xa_i];                                        \
                xb *= nw4[blk * 8u + xb_i];                                        \
            }                                                                      \
            acc[0] += PART(QA, DA, sbase[0], blk);                                \
            acc[1] += PART(QA, DA, sbase[1], blk);                                \
            acc[2] += PART(QB, DB, sbase[2], blk);                                \
            acc[3] += PART(QB, DB, sbase[3], blk);                                \
        }                                                                          \
    }
#else
float w_at(uint m, uint i) {
    if (m == 0u) return float(wf0[i]);
    if (m == 1u) return float(wf1[i]);
    return float(wf2[i]);
}
float chunk_dot(uint m, uint rb, uint c, vec4 xv[8]) {
    float s = 0.0;
    uint c0 = c * 32;
    uint n = min(32u, pc.ncols - c0);
    for (uint i = 0; i < n; ++i) s += w_at(m, rb + c0 + i) * xv[i >> 2][i & 3];
    return s;
}
#endif

#if !defined(TYPE_Q4_0) && !defined(TYPE_Q8_0)
// Columns 32c..32c+31 of x' into xv; with has_norm, adds their x^2 (before scaling) to ss.
void load_x(uint c, out vec4 xv[8], inout float ss) {
    uint c0 = c * 32;
    if ((pc.ncols & 31u) == 0u && (pc.x_off & 3u) == 0u) {
        uint b = (pc.x_off >> 2) + c * 8;
        for (uint i = 0; i < 8; ++i) xv[i] = x4[b + i];
        if (pc.has_norm != 0u) {
            for (uint i = 0; i < 8; ++i) {
                ss += dot(xv[i], xv[i]);
                xv[i] *= nw4[c * 8 + i];
            }
        }
    } else {
        for (uint i = 0; i < 32; ++i) {
            uint col = c0 + i;
            float v = col < pc.ncols ? x[pc.x_off + col] : 0.0;
            if (pc.has_norm != 0u && col < pc.ncols) {
                ss += v * v;
                v *= nw[col];
            }
            xv[i >> 2][i & 3] = v;
        }
    }
}

#endif

shared float partial[(SLOTS + 1) * 128];

// pc.mode as a constant, as in matvec_fused_h.comp (8: read pc.mode).
layout(constant_id = 1) const uint MODE_CONST = 8;

#include "include/rope_pair.glsl"

// Workgroup wg's slots: each one's matrix (QKV: 0, 1, 2 for Wq, Wk, Wv; SILU: gate, up), row
// within it, first unit of the row, and whether it exists.
void slot_rows(uint wg, uint mode, out uint sm[SLOTS], out uint srow[SLOTS],
               out uint sbase[SLOTS], out bool sok[SLOTS]) {
    const uint n_rows = mode == MODE_QKV ? pc.rows0 + 2u * pc.rows1 : pc.rows0;
    for (uint s = 0; s < SLOTS; ++s) {
        uint m = 0u, r;
        if (mode == MODE_SILU) {
            m = s >> 1;
            r = wg * 2u + (s & 1u);
            sok[s] = r < pc.rows0;
        } else {
            r = wg * SLOTS + s;
            sok[s] = r < n_rows;
            if (mode == MODE_QKV && r >= pc.rows0) {
                r -= pc.rows0;
                m = 1u;
                if (r >= pc.rows1) {
                    r -= pc.rows1;
                    m = 2u;
                }
            }
        }
        if (!sok[s]) r = 0u;
        sm[s] = m;
        srow[s] = r;
        sbase[s] = r * pc.stride;
    }
}

// The slots' sums over the workgroup, times 1 / rms(x) where has_norm (ss: this thread's share
// of sum(x^2)); only threads below SLOTS add them up (false for the others, which write nothing).
bool row_sums(float acc[SLOTS], float ss, out float tot[SLOTS]) {
    const uint sg = gl_SubgroupID, nsg = gl_NumSubgroups;
    for (uint s = 0; s < SLOTS; ++s) {
        float v = subgroupAdd(acc[s]);
        if (subgroupElect()) partial[s * 128 + sg] = v;
    }
    if (pc.has_norm != 0u) {
        float v = subgroupAdd(ss);
        if (subgroupElect()) partial[SLOTS * 128 + sg] = v;
    }
    barrier();
    if (gl_LocalInvocationID.x >= SLOTS) return false;
    float scale = 1.0;
    if (pc.has_norm != 0u) {
        float t = 0.0;
        for (uint i = 0; i < nsg; ++i) t += partial[SLOTS * 128 + i];
        scale = inversesqrt(t / float(pc.ncols) + pc.eps);
    }
    for (uint s = 0; s < SLOTS; ++s) {
        float t = 0.0;
        for (uint i = 0; i < nsg; ++i) t += partial[s * 128 + i];
        tot[s] = t * scale;
    }
    return true;
}

// Thread tid's share of the outputs: its slot's row (STORE, ADD), SiLU(gate) * up (SILU), or a
// RoPE pair of q into y, of k or v into the cache (QKV).
void write_rows(uint mode, uint tid, float tot[SLOTS], uint sm[SLOTS], uint srow[SLOTS],
                bool sok[SLOTS]) {
    if (mode == MODE_STORE || mode == MODE_ADD) {
        if (!sok[tid]) return;
        uint o = pc.y_off + srow[tid];
        if (mode == MODE_ADD) y[o] += tot[tid];
        else y[o] = tot[tid];
    } else if (mode == MODE_SILU) {
        if (tid >= 2u || !sok[tid]) return;
        float g = tot[tid];
        y[pc.y_off + srow[tid]] = g / (1.0 + exp(-g)) * tot[tid + 2u];
    } else {
        // QKV: thread p handles the pair of slots 2p, 2p+1 (rows 2i, 2i+1 of one matrix).
        if (tid >= 2u) return;
        uint s0 = 2u * tid;
        if (!sok[s0]) return;
        float v0 = tot[s0], v1 = tot[s0 + 1u];
        uint r = srow[s0], m = sm[s0];
        if (m < 2u) rope_pair(r % pc.head_dim, step_pos0, v0, v1);
        if (m == 0u) {
            y[pc.y_off + r] = v0;
            y[pc.y_off + r + 1u] = v1;
        } else {
            uint o = step_pos0 * pc.kv_dim + r;
            if (m == 1u) {
                kc[o] = float16_t(v0);
                kc[o + 1u] = float16_t(v1);
            } else {
                vc[o] = float16_t(v0);
                vc[o + 1u] = float16_t(v1);
            }
        }
    }
}

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint mode = MODE_CONST < 8u ? MODE_CONST : pc.mode;
    uint sm[SLOTS], srow[SLOTS], sbase[SLOTS];
    bool sok[SLOTS];
    slot_rows(linear_workgroup(), mode, sm, srow, sbase, sok);

    float acc[SLOTS];
    for (uint s = 0; s < SLOTS; ++s) acc[s] = 0.0;
    float ss = 0.0;
#if defined(TYPE_Q4_0) || defined(TYPE_Q8_0)
    // Four threads per block, so that x is read in coalesced 16-byte pieces. ncols is a
    // multiple of 32 and x_off of 4 here (ops.cpp checks).
    uint j = tid & 3u;
    uint nblk = pc.ncols / 32u;
#if defined(TYPE_Q4_0)
    uint xa_i = j, xb_i = 4u + j;
#else
    uint xa_i = 2u * j, xb_i = 2u * j + 1u;
#endif
    const uint bstep = WG_SIZE / 4u;
    if (mode == MODE_SILU) {
        BLOCK_LOOP(wq0, wd0, wq1, wd1)
    } else if (sm[0] == 0u) {  // a workgroup's rows lie in one matrix (ops.cpp checks)
        BLOCK_LOOP(wq0, wd0, wq0, wd0)
    } else if (sm[0] == 1u) {
        BLOCK_LOOP(wq1, wd1, wq1, wd1)
    } else {
        BLOCK_LOOP(wq2, wd2, wq2, wd2)
    }
#else
    uint nch = (pc.ncols + 31u) / 32u;
    for (uint c = tid; c < nch; c += WG_SIZE) {
        vec4 xv[8];
        load_x(c, xv, ss);
        for (uint s = 0; s < SLOTS; ++s) acc[s] += chunk_dot(sm[s], sbase[s], c, xv);
    }
#endif
    float tot[SLOTS];
    if (row_sums(acc, ss, tot)) write_rows(mode, tid, tot, sm, srow, sok);
}
