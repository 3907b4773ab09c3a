#version 450
// Cast16: f32 <-> f16/bf16, two 16-bit elements per 32-bit word. Conversions are done on the bits:
// packHalf2x16's rounding and unpackHalf2x16's subnormal handling are not pinned down by Vulkan.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 1) const uint MODE = 0u;
const uint CAST_F16_TO_F32 = 0u, CAST_BF16_TO_F32 = 1u, CAST_F32_TO_F16 = 2u, CAST_F32_TO_BF16 = 3u;

struct Cast16Params { uint n; };
PARAMS_BLOCK { Cast16Params p; };
layout(std430, set = 0, binding = 2) readonly buffer In { uint src[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Out { uint dst[]; };

uint f32_to_f16(uint x) {
  uint sign = (x >> 16) & 0x8000u;
  uint a = x & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00u | ((a >> 13) & 0x3ffu);  // NaN, kept quiet
  if (a >= 0x477ff000u) return sign | 0x7c00u;  // >= 65520 rounds to inf
  if (a >= 0x38800000u) {                       // normal half: rebias, round 13 bits to nearest even
    uint r = a - 0x38000000u;
    return sign | ((r + 0x0fffu + ((r >> 13) & 1u)) >> 13);
  }
  if (a <= 0x33000000u) return sign;            // <= 2^-25 rounds (to even) to zero
  uint e = a >> 23;                             // subnormal half: value / 2^-24, rounded to even
  uint m = (a & 0x7fffffu) | 0x800000u;
  uint shift = 126u - e;                        // 14..24
  uint q = m >> shift;
  uint rem = m & ((1u << shift) - 1u);
  uint half_ulp = 1u << (shift - 1u);
  if (rem > half_ulp || (rem == half_ulp && (q & 1u) != 0u)) q += 1u;
  return sign | q;
}

uint f16_to_f32(uint h) {
  uint sign = (h & 0x8000u) << 16;
  uint e = (h >> 10) & 0x1fu;
  uint m = h & 0x3ffu;
  if (e == 0u) return sign | floatBitsToUint(float(m) * 5.96046448e-08f);  // subnormal: m * 2^-24, exact
  if (e == 31u) return sign | 0x7f800000u | (m << 13);
  return sign | ((e + 112u) << 23) | (m << 13);
}

void main() {
  uint words = (p.n + 1u) / 2u;
  for (uint w = gl_GlobalInvocationID.x; w < words; w += gl_NumWorkGroups.x * WG) {
    uint e0 = 2u * w;
    bool has1 = e0 + 1u < p.n;
    if (MODE == CAST_F16_TO_F32 || MODE == CAST_BF16_TO_F32) {
      uint v = src[w];
      bool bf = MODE == CAST_BF16_TO_F32;
      dst[e0] = bf ? (v << 16) : f16_to_f32(v & 0xffffu);
      if (has1) dst[e0 + 1u] = bf ? (v & 0xffff0000u) : f16_to_f32(v >> 16);
    } else {
      bool bf = MODE == CAST_F32_TO_BF16;
      uint lo = bf ? f32_to_bf16(src[e0]) : f32_to_f16(src[e0]);
      uint hi = has1 ? (bf ? f32_to_bf16(src[e0 + 1u]) : f32_to_f16(src[e0 + 1u])) : 0u;
      dst[w] = lo | (hi << 16);
    }
  }
}
