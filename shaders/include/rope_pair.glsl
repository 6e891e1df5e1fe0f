// RoPE of one adjacent pair at position pos, for the fused decode mat-vecs and rope.comp: the
// includer declares the push constants pc (n_rot, freq_base, has_ff) and ff, or defines
// ROPE_N_ROT, ROPE_FREQ_BASE and ROPE_HAS_FF.
#if !defined(ROPE_N_ROT)
#define ROPE_N_ROT pc.n_rot
#define ROPE_FREQ_BASE pc.freq_base
#define ROPE_HAS_FF (pc.has_ff != 0u)
#endif
void rope_pair(uint d, uint pos, inout float v0, inout float v1) {
    // d: the pair's first dimension within its head
    if (d >= ROPE_N_ROT) return;
    uint i = d / 2;
    float theta = float(pos) * pow(ROPE_FREQ_BASE, -2.0 * float(i) / float(ROPE_N_ROT));
    if (ROPE_HAS_FF) theta /= ff[i];
    // Reduce to [0, 2pi): GPU sin/cos are only accurate near zero.
    const float two_pi = 6.283185307179586;
    theta -= two_pi * floor(theta / two_pi);
    float c = cos(theta), s = sin(theta);
    float a = v0, b = v1;
    v0 = a * c - b * s;
    v1 = a * s + b * c;
}
