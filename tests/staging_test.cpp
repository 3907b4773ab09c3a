// The tensor cores' scaled f16 staging (kernels/stage_scale.glsl), run on the host through
// kernels/stage_scale.hpp: the functions the kernels call, against a double reference, at the
// edges of f16 and f32 (zeros, subnormals, +-65504, infinities, NaN, f32's largest and smallest),
// and a staged dot product emulated step by step as matmul_coop.glsl computes it. No GPU needed.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/stage_scale.hpp"

namespace {

using namespace meganeura::kernels::staging;

// A value staged alone (its own block) and brought back: x * 2^e in f16, times 2^-e.
double round_trip(float x) {
  const int e = stage_exponent(stage_magnitude(x), STAGE_EXP_LIMIT);
  return std::ldexp(static_cast<double>(staged(x, e)), -e);
}

constexpr double kF16Epsilon = 1.0 / 2048;  // half an ulp of f16's 11 significant bits, relative

TEST(Staging, EveryNormalF32KeepsElevenBits) {
  const float values[] = {1.0f,    -1.0f, 65504.0f, -65504.0f, 65505.0f, 1e5f,    -3e5f,    1e30f, FLT_MAX,    -FLT_MAX,
                          6.1e-5f, 6e-8f, 1e-20f,   1e-30f,    -1e-30f,  FLT_MIN, 3.3e-38f, 0.1f,  1.0f / 3.0f};
  for (float x : values) {
    const double back = round_trip(x);
    EXPECT_TRUE(std::isfinite(back)) << x;
    EXPECT_LE(std::abs(back - x), kF16Epsilon * std::abs(static_cast<double>(x))) << x;
  }
}

TEST(Staging, PlainF16WouldLoseThem) {
  // The defect the scaling fixes, so that the test above can tell: unscaled f16 makes 1e5
  // infinite and flushes 1e-8 to zero.
  EXPECT_TRUE(std::isinf(round_to_f16(1e5f)));
  EXPECT_EQ(round_to_f16(1e-8f), 0.0f);
  EXPECT_TRUE(std::isfinite(round_trip(1e5f)));
  EXPECT_NE(round_trip(1e-8f), 0.0);
}

TEST(Staging, SubnormalF32KeepsItsValue) {
  // Below f32's normal range the exponent is capped at STAGE_EXP_LIMIT: 2^120 still lifts values
  // down to 2^-134 into f16's normal range. (Below that, f16's subnormals keep fewer bits, and
  // f32's own subnormals have few to give.)
  for (float x : {1e-40f, -5.9e-39f, std::ldexp(1.0f, -134), -std::ldexp(1.5f, -133)}) {
    const double back = round_trip(x);
    EXPECT_NE(back, 0.0) << x;
    EXPECT_LE(std::abs(back - x), kF16Epsilon * std::abs(static_cast<double>(x))) << x;
  }
}

TEST(Staging, ZerosInfinitiesAndNaN) {
  EXPECT_EQ(stage_magnitude(std::numeric_limits<float>::infinity()), 0u);
  EXPECT_EQ(stage_magnitude(std::numeric_limits<float>::quiet_NaN()), 0u);
  EXPECT_EQ(stage_magnitude(-0.0f), 0u);
  EXPECT_EQ(round_trip(0.0f), 0.0);
  EXPECT_EQ(round_trip(-0.0f), 0.0);
  // In a block of finite values, an infinity or NaN stays what it is.
  const int e = stage_exponent(stage_magnitude(1e-10f), STAGE_EXP_LIMIT);
  EXPECT_TRUE(std::isinf(staged(-std::numeric_limits<float>::infinity(), e)));
  EXPECT_TRUE(std::isnan(staged(std::numeric_limits<float>::quiet_NaN(), e)));
  // An all-zero block takes the largest exponent, capped like any other.
  EXPECT_EQ(stage_exponent(0u, STAGE_EXP_LIMIT), STAGE_EXP_LIMIT);
  EXPECT_EQ(stage_exponent(0u, 7), 7);
}

TEST(Staging, BlockMaximumLandsInTheTopBinade) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  for (int p = -149; p <= 127; ++p) {
    const float x = std::ldexp(mantissa(rng), p);
    if (!std::isfinite(x) || x == 0.0f) continue;
    const int e = stage_exponent(stage_magnitude(x), STAGE_EXP_LIMIT);
    const double scaled = std::ldexp(static_cast<double>(x), e);
    if (e > -STAGE_EXP_LIMIT && e < STAGE_EXP_LIMIT) {
      EXPECT_GE(scaled, 16384.0) << x;
      EXPECT_LT(scaled, 32768.0) << x;
    }
    EXPECT_LE(staged(x, e), 65504.0f) << x;
  }
}

TEST(Staging, SmallValuesBesideALargeOneKeepTheirShare) {
  // In a block whose largest magnitude is M, a value above M * 2^-28 keeps 11 bits; below it the
  // absolute error stays under M * 2^-39 (f16's subnormal spacing, scaled back).
  std::mt19937 rng(2);
  std::uniform_real_distribution<double> log_ratio(-45.0, 0.0);
  for (const double big : {1e-30, 1e-6, 1.0, 7e4, 1e30}) {
    std::vector<float> block{static_cast<float>(big)};
    for (int i = 0; i < 500; ++i)
      block.push_back(static_cast<float>(big * std::exp2(log_ratio(rng)) * (i % 2 ? -1 : 1)));
    const int e = stage_exponent(block_magnitude(block), STAGE_EXP_LIMIT);
    for (float x : block) {
      const double back = std::ldexp(static_cast<double>(staged(x, e)), -e), err = std::abs(back - x);
      if (std::abs(x) >= big * std::exp2(-28))
        EXPECT_LE(err, kF16Epsilon * std::abs(static_cast<double>(x))) << x << " beside " << big;
      else
        EXPECT_LE(err, big * std::exp2(-39)) << x << " beside " << big;
    }
  }
}

TEST(Staging, UnscaleAndRescaleAreExactPowersOfTwo) {
  for (int e = -240; e <= 240; e += 7) {
    const float x = 1.375f;
    const double want = std::ldexp(1.375, -e);
    const float got = stage_unscale(x, e);
    if (want > FLT_MAX) {
      EXPECT_TRUE(std::isinf(got)) << e;
    } else if (want >= FLT_MIN) {
      EXPECT_EQ(static_cast<double>(got), want) << e;
    }
  }
  for (int from = -100; from <= 100; from += 9)
    for (int to = from - 40; to <= from + 40; to += 5)
      EXPECT_EQ(static_cast<double>(stage_rescale(from, to)), std::ldexp(1.0, to - from));
  EXPECT_EQ(static_cast<double>(stage_rescale(120, -120)), std::ldexp(1.0, -126));  // clamped: see stage_rescale
}

// sum |a_k b_k|: the staged dot product's error bound is relative to it (each operand keeps 11
// bits: 2^-10 for a product), plus f32's own summation.
double abs_dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t k = 0; k < a.size(); ++k) s += std::abs(static_cast<double>(a[k]) * b[k]);
  return s;
}

double exact_dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t k = 0; k < a.size(); ++k) s += static_cast<double>(a[k]) * b[k];
  return s;
}

TEST(Staging, DotProductsAtEveryMagnitude) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  // Gradients of 1e-8 against activations of 1, activations of 1e5 (beyond f16), and the ends.
  const std::pair<double, double> scales[] = {{1, 1},      {1e-8, 1},     {1e-20, 1e-20}, {1e5, 1e5},
                                              {3e5, 1e-3}, {1e-30, 1e10}, {1e18, 1e18},   {1e-30, 1e-8}};
  for (auto [sa, sb] : scales) {
    for (size_t k_len : {1u, 31u, 32u, 100u, 1000u}) {
      std::vector<float> a(k_len), b(k_len);
      for (size_t k = 0; k < k_len; ++k) {
        a[k] = static_cast<float>(sa * normal(rng));
        b[k] = static_cast<float>(sb * normal(rng));
      }
      for (size_t step : {32u, 64u}) {
        const double got = staged_dot(a, b, step), want = exact_dot(a, b), bound = abs_dot(a, b);
        ASSERT_TRUE(std::isfinite(got)) << sa << " x " << sb << ", K " << k_len;
        EXPECT_LE(std::abs(got - want), (1.0 / 1024 + 1e-6) * bound) << sa << " x " << sb << ", K " << k_len;
      }
    }
  }
}

TEST(Staging, StepsOfVeryDifferentMagnitudes) {
  // K steps from 1e20 down to 1e-20 and back, a 1e6-fold growth, zero steps first: each step is
  // staged at its own exponents and the accumulator follows them without overflowing; tiny steps
  // after zero ones (a gradient whose first rows are masked) keep their relative precision.
  std::mt19937 rng(4);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const size_t step = 32;
  const double tol = 1.0 / 1024 + 1e-6;
  for (const auto& scales : std::vector<std::vector<double>>{
           {0.0, 1e20, 1e-20, 1.0, 1e-30, 1e15}, {1.0, 0.5, 1e6, 1e-3}, {0.0, 0.0, 1e-20, 3e-21}}) {
    std::vector<float> a, b;
    for (double s : scales)
      for (size_t k = 0; k < step; ++k) {
        a.push_back(static_cast<float>(s * normal(rng)));
        b.push_back(static_cast<float>(normal(rng)));
      }
    const double got = staged_dot(a, b, step);
    ASSERT_TRUE(std::isfinite(got)) << scales[1];
    EXPECT_NE(got, 0.0) << scales[1];
    EXPECT_LE(std::abs(got - exact_dot(a, b)), tol * abs_dot(a, b)) << scales[1];
  }
}

// A block's history word as matmul_coop.glsl keeps it: its largest magnitude's bits plus one.
uint history_of(float largest) { return stage_magnitude(largest) + 1u; }

TEST(Staging, HistoryExponentLeavesHeadroomAndSlack) {
  // A block that reached x at the call before is staged with x at 2^(STAGE_TOP - STAGE_HEADROOM):
  // it may grow 8-fold and still fit under f16's top, and shrink 512-fold and still keep 11 bits
  // for values down to 2^-16 of its largest; beyond either, the tile runs at its own exponents.
  for (const float x : {1.0f, 3.0f, 65504.0f, 1e-20f, 1e30f, 6e-8f, 1e-30f}) {  // above the exponents' limit
    const int e = stage_history_exponent(history_of(x));
    ASSERT_NE(e, STAGE_NO_HISTORY) << x;
    const double top = std::ldexp(static_cast<double>(x), e);
    EXPECT_GE(top, std::ldexp(1.0, STAGE_TOP - STAGE_HEADROOM)) << x;
    EXPECT_LT(top, std::ldexp(1.0, STAGE_TOP - STAGE_HEADROOM + 1)) << x;
    EXPECT_TRUE(stage_fits(stage_magnitude(x), e)) << x;
    EXPECT_TRUE(stage_fits(stage_magnitude(x * 8.0f), e)) << x;
    EXPECT_TRUE(stage_fits(stage_magnitude(x / 512.0f), e)) << x;
    EXPECT_FALSE(stage_fits(stage_magnitude(x * 16.0f), e)) << x;
    if (x > 1e-30f) {  // the shrunk block's own exponent would pass the limit
      EXPECT_FALSE(stage_fits(stage_magnitude(x / 1024.0f), e)) << x;
    }
    EXPECT_LT(std::abs(staged(x * 8.0f, e)), 65504.0f) << x;
  }
}

TEST(Staging, HistoryEdges) {
  EXPECT_EQ(stage_history_exponent(0u), STAGE_NO_HISTORY);  // never run
  const int after_zeros = stage_history_exponent(history_of(0.0f));
  EXPECT_NE(after_zeros, STAGE_NO_HISTORY);
  EXPECT_TRUE(stage_fits(0u, after_zeros));                      // zeros again
  EXPECT_FALSE(stage_fits(stage_magnitude(1.0f), after_zeros));  // then values
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (const uint bad : {floatBitsToUint(inf), floatBitsToUint(nan), floatBitsToUint(-nan) & 0x7fffffffu})
    EXPECT_FALSE(stage_fits(bad, 0)) << bad;          // the kernel's float maxima see them as themselves
  for (const float x : {FLT_MAX, FLT_MIN, 1e-45f}) {  // f32's ends: exponents stay within the limit
    const int e = stage_history_exponent(history_of(x));
    EXPECT_LE(std::abs(e), STAGE_EXP_LIMIT) << x;
    EXPECT_TRUE(std::isfinite(staged(x, e))) << x;
  }
}

TEST(Staging, HistoryDotProductsKeepElevenBits) {
  // Where the block fits its history, one exponent for the whole sum is as good as one a step:
  // every magnitude from 1e-30 to 1e30, grown or shrunk within the headroom and slack.
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const double tol = 1.0 / 1024 + 1e-6;
  for (const double scale : {1e-30, 1e-8, 1.0, 1e5, 1e30})
    for (const double change : {1.0, 7.0, 1.0 / 500}) {
      std::vector<float> a, b;
      for (size_t k = 0; k < 300; ++k) {
        a.push_back(static_cast<float>(scale * change * normal(rng)));
        b.push_back(normal(rng));
      }
      const uint ha = history_of(static_cast<float>(3 * scale)), hb = history_of(3.0f);
      ASSERT_TRUE(stage_fits(block_magnitude(a), stage_history_exponent(ha))) << scale << " " << change;
      ASSERT_TRUE(stage_fits(block_magnitude(b), stage_history_exponent(hb)));
      const double got = history_dot(a, b, ha, hb);
      EXPECT_LE(std::abs(got - exact_dot(a, b)), tol * abs_dot(a, b)) << scale << " " << change;
    }
}

}  // namespace
