// The tensor cores' scaled f16 staging (stage_scale.glsl) on the host: the very functions the
// kernels run, compiled as C++, and an emulation of a staged product built from them, so that the
// arithmetic is tested where there are no tensor cores (tests/staging_test.cpp).
#pragma once
#include <algorithm>
#include <bit>
#include <cstdint>
#include <span>

#include "util/half.hpp"

namespace meganeura::kernels::staging {

// GLSL's names for what stage_scale.glsl uses.
using uint = uint32_t;
inline uint floatBitsToUint(float x) { return std::bit_cast<uint>(x); }
inline float uintBitsToFloat(uint x) { return std::bit_cast<float>(x); }
using std::clamp;
using std::max;
using std::min;

#define STAGE_FN inline
#include "kernels/stage_scale.glsl"
#undef STAGE_FN

// f32 to f16 and back, rounding to nearest even as the GPU's conversion does (subnormals kept);
// util/half.hpp's conversions, not _Float16, which clang 14 refuses on x86-64.
inline float round_to_f16(float x) { return half::f16_to_f32(half::f32_to_f16(x)); }

// A block of values staged at exponent `e` as the tensor cores see it: x * 2^e rounded to f16.
inline float staged(float x, int e) { return round_to_f16(x * stage_pow2(e)); }

// The largest stage_magnitude of a block.
inline uint block_magnitude(std::span<const float> block) {
  uint m = 0;
  for (float x : block) m = std::max(m, stage_magnitude(x));
  return m;
}

// sum_k a[k] * b[k] as matmul_coop.glsl computes one output element: K in steps of `step`, each
// step's a and b staged at their own exponents (the step's largest magnitudes, capped at
// STAGE_GROWTH above the smallest exponent so far, as the kernel caps them), exact products of
// the f16 values summed in f32, the sum rescaled as the exponents change and unscaled at the end.
inline float staged_dot(std::span<const float> a, std::span<const float> b, size_t step) {
  float acc = 0.0f;
  int acc_exp = 0, min_a = STAGE_EXP_LIMIT, min_b = STAGE_EXP_LIMIT;
  for (size_t k0 = 0; k0 < a.size(); k0 += step) {
    const size_t n = std::min(step, a.size() - k0);
    const int ea = stage_exponent(block_magnitude(a.subspan(k0, n)), min_a + STAGE_GROWTH);
    const int eb = stage_exponent(block_magnitude(b.subspan(k0, n)), min_b + STAGE_GROWTH);
    min_a = std::min(min_a, ea);
    min_b = std::min(min_b, eb);
    if (k0 != 0 && ea + eb != acc_exp) acc *= stage_rescale(acc_exp, ea + eb);
    acc_exp = ea + eb;
    for (size_t k = k0; k < k0 + n; ++k) acc += staged(a[k], ea) * staged(b[k], eb);  // f16 x f16 is exact in f32
  }
  return stage_unscale(acc, acc_exp);
}

// The same sum as matmul_coop.glsl's fast path computes it: a and b staged whole at the fixed
// exponents their history words give (stage_history_exponent), exact products summed in f32,
// unscaled at the end. Meaningful where stage_fits holds for both; the kernel runs staged_dot's
// way otherwise.
inline float history_dot(std::span<const float> a, std::span<const float> b, uint history_a, uint history_b) {
  const int ea = stage_history_exponent(history_a), eb = stage_history_exponent(history_b);
  float acc = 0.0f;
  for (size_t k = 0; k < a.size(); ++k) acc += staged(a[k], ea) * staged(b[k], eb);
  return stage_unscale(acc, ea + eb);
}

}  // namespace meganeura::kernels::staging
