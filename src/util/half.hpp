// Host-side f16/bf16 <-> f32 conversions (round to nearest even, NaN kept), matching the kernels.
#pragma once
#include <cstdint>
#include <cstring>

namespace meganeura::half {

inline uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline float bf16_to_f32(uint16_t h) { return from_bits(static_cast<uint32_t>(h) << 16); }

inline uint16_t f32_to_bf16(float f) {
  uint32_t u = bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

inline float f16_to_f32(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  if (exp == 0x1f) return from_bits(sign | 0x7f800000u | (man << 13));  // inf / NaN
  if (exp == 0) {                                                       // zero or subnormal: man * 2^-24
    float v = static_cast<float>(man) * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  return from_bits(sign | ((exp + 112u) << 23) | (man << 13));
}

inline uint16_t f32_to_f16(float f) {
  uint32_t u = bits(f), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);   // NaN
  if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (a < 0x38800000u) {                   // subnormal or zero in f16: round a / 2^-24 to nearest even
    float v = from_bits(a) * 16777216.0f;  // exact: scales by 2^24
    auto m = static_cast<uint32_t>(v);
    float rest = v - static_cast<float>(m);
    if (rest > 0.5f || (rest == 0.5f && (m & 1u))) ++m;
    return static_cast<uint16_t>(sign | m);
  }
  uint32_t r = a + 0xfffu + ((a >> 13) & 1u);  // round to nearest even at bit 13
  return static_cast<uint16_t>(sign | ((r - 0x38000000u) >> 13));
}

}  // namespace meganeura::half
