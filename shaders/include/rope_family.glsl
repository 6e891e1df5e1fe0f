// The rotation of RoPE pair i at position pos for the decoder families (qkv_rope.comp and
// matvec_fused_h.comp's HEADS mode compute the same angles as cpu::rope): pair i turns by
// pos * freq_scale * base^(-2i/n_rot) / ff[i] (has_ff: Llama 3's, LongRoPE's factors in the
// includer's ff[]), YaRN keeping ext_factor * ramp(i) of the unscaled angle (the ramp falling from
// 1 at pair corr_low to 0 at corr_high), cos and sin times mscale. Returns (cos, sin).
vec2 family_rope_cs(uint i, uint pos, uint n_rot, float base, float freq_scale, bool has_ff,
                    float ext_factor, float corr_low, float corr_high, float mscale) {
    float extrap = float(pos) * pow(base, -2.0 * float(i) / float(n_rot));
    if (has_ff) extrap /= ff[i];
    float theta = extrap * freq_scale;
    if (ext_factor != 0.0) {
        float ramp = 1.0 - clamp((float(i) - corr_low) / max(0.001, corr_high - corr_low), 0.0, 1.0);
        float mix_ = ramp * ext_factor;
        theta = theta * (1.0 - mix_) + extrap * mix_;
    }
    // Reduce to [0, 2pi): GPU sin/cos are only accurate near zero.
    const float two_pi = 6.283185307179586;
    theta -= two_pi * floor(theta / two_pi);
    return vec2(cos(theta), sin(theta)) * mscale;
}
