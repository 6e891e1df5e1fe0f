// Where Q4_0 and Q8_0 blocks lie as weights.cpp uploads them: each row holds its nb blocks'
// quants (Q4_0 one uvec4 a block, Q8_0 two), then their nb F16 scales, padded to 16 bytes. rb
// is the row's first uvec4 (row * QR_ROW(nb), the stride the host passes for these types).
// A subgroup's loads of consecutive blocks are then whole runs of quants, and their addresses
// the row's base plus the block (groups of 8 blocks with the scales between their quants
// decoded 7B Q4_0 and Q8_0 1.1-1.2% slower on the H200).
#ifndef Q_ROWS_GLSL
#define Q_ROWS_GLSL
#if defined(TYPE_Q8_0)
#define QR_BLOCK_VEC4 2u
#else
#define QR_BLOCK_VEC4 1u
#endif
#define QR_ROW(nb) ((nb) * QR_BLOCK_VEC4 + ((nb) + 7u) / 8u)
// uvec4 index of block c's quants, and F16 index of its scale.
#define QR_QUANTS(rb, c) ((rb) + (c) * QR_BLOCK_VEC4)
#define QR_SCALE(rb, c, nb) (((rb) + (nb) * QR_BLOCK_VEC4) * 8u + (c))
#endif
