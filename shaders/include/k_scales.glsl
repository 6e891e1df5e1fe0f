// The 6-bit scale and min of sub-block j (0..7) of a Q4_K or Q5_K superblock from its 12
// scale bytes s (ggml's get_scale_min_k4), with shifts and selects: indexing s by j would put
// it in memory (7B Q4_K decode ran at half speed that way on the H200).
#ifndef K_SCALES_GLSL
#define K_SCALES_GLSL
void scale_min_k4(uvec3 s, uint j, out uint sc, out uint mn) {
    uint sh = 8u * (j & 3u);
    uint b0 = (s.x >> sh) & 255u, b1 = (s.y >> sh) & 255u, b2 = (s.z >> sh) & 255u;
    bool low = j < 4u;
    sc = low ? b0 & 63u : (b2 & 15u) | ((b0 >> 6) << 4);
    mn = low ? b1 & 63u : (b2 >> 4) | ((b1 >> 6) << 4);
}
#endif
