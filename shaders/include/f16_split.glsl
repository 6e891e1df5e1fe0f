// F32 values as two F16 parts, for an F32 matmul on the tensor cores as three F16 products
// (ops.cpp): hi, the value's 11 leading significant bits (exact in F16; 0 below F16's normal
// range), and lo = v - hi (exact in F32), times 1024 to keep clear of F16's subnormals (and,
// up to |v| < 65504, of its overflow). Integer masks, not an F16 round trip: a driver may fold
// unpackHalf2x16(packHalf2x16(v)) to v, and the low parts would then be 0.
#define F16_LO_SCALE 1024.0
vec2 f16_hi(vec2 v) {
    uvec2 u = floatBitsToUint(v);
    bvec2 normal = greaterThanEqual((u >> 23) & 0xFFu, uvec2(113u));
    return uintBitsToFloat(mix(uvec2(0u), u & 0xFFFFE000u, normal));
}
vec2 f16_lo(vec2 v) { return (v - f16_hi(v)) * F16_LO_SCALE; }
vec4 f16_hi(vec4 v) { return vec4(f16_hi(v.xy), f16_hi(v.zw)); }
vec4 f16_lo(vec4 v) { return vec4(f16_lo(v.xy), f16_lo(v.zw)); }
