#version 450
// Y[t, r] = sum_c W[r, c] * X[t, c] on integer dot products, for GPUs without cooperative
// matrices: each 32-value chunk of X is quantized to int8 with a scale (the activations' half of
// llama.cpp's MMQ), each weight chunk read as int8 lanes (idot_weights.glsl), and a chunk's
// products summed in int32 and scaled once. A workgroup of 128 threads owns a tile of BM rows by
// BN tokens and walks the columns KC chunks a stage, both operands staged in shared memory; a
// thread owns TM x TN outputs, rows and tokens strided so that neighbours read neighbouring
// words. X is quantized by every row tile that reads it: 1/BM of the products' work.
#extension GL_GOOGLE_include_directive : require
#include "include/common.glsl"
#define W_BINDING 0
#include "include/weights.glsl"
#include "include/idot_weights.glsl"

#define BM 64u  // rows a workgroup
#define BN 32u  // tokens a workgroup
#define KC 4u   // 32-column chunks a stage
#define TM 4u   // rows a thread (BM / 16)
#define TN 4u   // tokens a thread (BN / 8)

layout(binding = 1) readonly buffer XBuf { float x[]; };
layout(binding = 2) writeonly buffer YBuf { float y[]; };

layout(push_constant) uniform PC {
    uint ncols;
    uint stride;    // units (elements or blocks) per row
    uint nrows;
    uint n_tokens;
    uint x_off;
    uint x_stride;  // floats between tokens of X
    uint y_off;
    uint y_stride;  // floats between tokens of Y
} pc;

// [chunk][half][row or token]: a thread's neighbours read the next 16 bytes.
shared ivec4 sw_q[KC * 2u * BM];
shared vec4 sw_s[KC * BM];  // the chunk's (s0, s1, m)
shared ivec4 sx_q[KC * 2u * BN];
shared vec2 sx_d[KC * BN];  // the chunk's scale and scale * sum of its lanes

// Quantizes X's chunk c of token t (zeros past the matrix) into the stage.
void stage_x(uint t, uint chunk, uint c) {
    float v[32];
    float amax = 0.0;
    bool inside = t < pc.n_tokens && chunk * 32u < pc.ncols;
    uint xb = pc.x_off + t * pc.x_stride + chunk * 32u;
    for (uint i = 0u; i < 32u; ++i) {
        v[i] = inside ? x[xb + i] : 0.0;
        amax = max(amax, abs(v[i]));
    }
    float d = amax / 127.0, inv = amax > 0.0 ? 127.0 / amax : 0.0;
    int sum = 0;
    uint w[8];
    for (uint k = 0u; k < 8u; ++k) {
        uint packed = 0u;
        for (uint i = 0u; i < 4u; ++i) {
            int q = int(round(v[4u * k + i] * inv));
            sum += q;
            packed |= uint(q & 255) << (8u * i);
        }
        w[k] = packed;
    }
    sx_q[(c * 2u) * BN + t % BN] = ivec4(w[0], w[1], w[2], w[3]);
    sx_q[(c * 2u + 1u) * BN + t % BN] = ivec4(w[4], w[5], w[6], w[7]);
    sx_d[c * BN + t % BN] = vec2(d, d * float(sum));
}

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint r0 = gl_WorkGroupID.x * BM, t0 = gl_WorkGroupID.y * BN;
    const uint nchunks = (pc.ncols + 31u) / 32u;
    const uint rg = tid % 16u, tg = tid / 16u;  // this thread's rows rg + 16 i, tokens tg + 8 j
    float acc[TM][TN];
    for (uint i = 0u; i < TM; ++i)
        for (uint j = 0u; j < TN; ++j) acc[i][j] = 0.0;

    for (uint k0 = 0u; k0 < nchunks; k0 += KC) {
        barrier();  // the last stage's products are done
        // Weights: BM x KC chunks, consecutive threads on consecutive chunks of a row.
        for (uint e = tid; e < BM * KC; e += WG_SIZE) {
            uint c = e % KC, r = e / KC, row = r0 + r, chunk = k0 + c;
            ivec4 lo = ivec4(0), hi = ivec4(0);
            vec2 s = vec2(0.0);
            float m = 0.0;
            if (row < pc.nrows && chunk < nchunks)
                idot_chunk(row * pc.stride, chunk, pc.ncols, lo, hi, s, m);
            sw_q[(c * 2u) * BM + r] = lo;
            sw_q[(c * 2u + 1u) * BM + r] = hi;
            sw_s[c * BM + r] = vec4(s, m, 0.0);
        }
        // Activations: BN x KC chunks quantized.
        for (uint e = tid; e < BN * KC; e += WG_SIZE) stage_x(t0 + e / KC, k0 + e % KC, e % KC);
        barrier();

        for (uint c = 0u; c < KC; ++c) {
            ivec4 xl[TN], xh[TN];
            vec2 xd[TN];
            for (uint j = 0u; j < TN; ++j) {
                uint t = tg + 8u * j;
                xl[j] = sx_q[(c * 2u) * BN + t];
                xh[j] = sx_q[(c * 2u + 1u) * BN + t];
                xd[j] = sx_d[c * BN + t];
            }
            for (uint i = 0u; i < TM; ++i) {
                uint r = rg + 16u * i;
                ivec4 wl = sw_q[(c * 2u) * BM + r], wh = sw_q[(c * 2u + 1u) * BM + r];
                vec4 ws = sw_s[c * BM + r];
                for (uint j = 0u; j < TN; ++j) {
                    // int32 sums of each half's 16 products, scaled once per chunk.
                    int a = sdot16(wl, xl[j]), b = sdot16(wh, xh[j]);
                    acc[i][j] += xd[j].x * (ws.x * float(a) + ws.y * float(b)) + ws.z * xd[j].y;
                }
            }
        }
    }

    for (uint j = 0u; j < TN; ++j) {
        uint t = t0 + tg + 8u * j;
        if (t >= pc.n_tokens) continue;
        for (uint i = 0u; i < TM; ++i) {
            uint row = r0 + rg + 16u * i;
            if (row < pc.nrows) y[pc.y_off + t * pc.y_stride + row] = acc[i][j];
        }
    }
}
