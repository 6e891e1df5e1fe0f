// The 6-bit scale and min of sub-block j (0..7) of a Q4_K or Q5_K superblock, from its 12 scale
// bytes s as weights.cpp repacks them at upload: byte j of s.x, s.y holds scale j and min j's
// high 2 bits, nibble j of s.z min j's low 4. Shifts and masks only: indexing the scale words
// by j would put them in memory (7B Q4_K decode ran at half speed that way on the H200).
#ifndef K_SCALES_GLSL
#define K_SCALES_GLSL
void scale_min_q4k(uvec3 s, uint j, out uint sc, out uint mn) {
    uint b = bitfieldExtract(j < 4u ? s.x : s.y, int(8u * (j & 3u)), 8);
    sc = b & 63u;
    mn = bitfieldExtract(s.z, int(4u * j), 4) | ((b >> 2) & 48u);
}
#endif
