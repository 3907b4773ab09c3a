// Scaled f16 staging for the tensor cores, keeping f32's exponent range (DESIGN.md, "Precision";
// docs/performance.md, "Tensor-core precision"). Each block of an operand staged for the tensor
// cores (a matmul's K step of A or B, an attention tile) is multiplied by a power of two 2^e
// chosen from its largest finite magnitude, so that it lands in [2^STAGE_TOP, 2^(STAGE_TOP+1)),
// just under f16's largest value; the products are undone in f32 by 2^-e. A block of tiny values
// (a gradient of 1e-20) keeps f16's 11 significant bits instead of flushing to zero, and one of
// huge values (1e5, 1e30) no longer becomes infinity. Powers of two make the scaling exact.
//
// Written in the subset of GLSL that is also C++: the host includes it through
// kernels/stage_scale.hpp (the same arithmetic, emulated and tested in tests/staging_test.cpp),
// which defines STAGE_FN as inline.
#ifndef STAGE_FN
#define STAGE_FN
#endif

// |x|'s bits at or above this are infinity or NaN: they take no part in choosing a scale and pass
// through the staging unchanged (2^e times infinity is infinity), as they would in f32.
const uint STAGE_NOT_FINITE = 0x7f800000u;
// A block's largest magnitude is scaled into [2^14, 2^15): below f16's 65504 with room for
// rounding up, and products of two such values (below 2^30) summed in f32 stay far from its limit.
const int STAGE_TOP = 14;
// Scale exponents stay within +-STAGE_EXP_LIMIT, so that 2^e and 2^-e are normal f32 numbers; a
// block below 2^-134 (far under the 1e-30 the staging promises to keep) is scaled by 2^120 only.
const int STAGE_EXP_LIMIT = 120;
// Along a sum of blocks (the K steps of a product of staged operands, attention's key tiles),
// each block takes its own exponents and the accumulator is rescaled from block to block; a
// block's exponent may exceed the smallest one used before it by at most this much, so that the
// accumulator stays below 2^(30 + 2 * STAGE_GROWTH) times the sum's length. A block that tiny
// next to an earlier one adds less than 2^-STAGE_GROWTH of its largest values' products, and
// keeps all of f16's range below.
const int STAGE_GROWTH = 20;

// |x| as bits, whose unsigned order is the order of magnitudes; 0 for infinity and NaN.
STAGE_FN uint stage_magnitude(float x) {
  uint bits = floatBitsToUint(x) & 0x7fffffffu;
  return bits < STAGE_NOT_FINITE ? bits : 0u;
}

// The exponent e that brings a block whose largest stage_magnitude is `max_bits` into
// [2^STAGE_TOP, 2^(STAGE_TOP+1)) by multiplying it with 2^e, capped at `cap` (STAGE_GROWTH above
// the run's smallest exponent so far; STAGE_EXP_LIMIT for a run's first block).
STAGE_FN int stage_exponent(uint max_bits, int cap) {
  int biased = int(max_bits >> 23u);  // floor(log2(max)) + 127; 0 for zero and subnormals
  return clamp(min(STAGE_TOP + 127 - max(biased, 1), cap), -STAGE_EXP_LIMIT, STAGE_EXP_LIMIT);
}

// 2^e as an f32, exact for e in [-126, 127].
STAGE_FN float stage_pow2(int e) { return uintBitsToFloat(uint(e + 127) << 23u); }

// The factor that brings an accumulator kept at exponent `from` to exponent `to` (the sum of
// the two operands' block exponents): 2^(to - from). Below 2^-126 what was accumulated is
// negligible next to what follows (the cap above), and is scaled by 2^-126 instead; the cap keeps
// to - from at most 2 * STAGE_GROWTH.
STAGE_FN float stage_rescale(int from, int to) { return stage_pow2(clamp(to - from, -126, 127)); }

// x, a sum of products staged at exponents adding up to e (|e| <= 2 * STAGE_EXP_LIMIT), back in
// f32's units: x * 2^-e in two exact halves, so that neither factor leaves f32's normal range.
STAGE_FN float stage_unscale(float x, int e) { return x * stage_pow2(-(e / 2)) * stage_pow2(e / 2 - e); }

// A tile that reads blocks it read at the call before (a training step's products read new
// values of the same operands every step) stages them at one exponent from their largest
// magnitude then, kept with the call (matmul_coop.glsl's scale_history: the magnitude's bits plus
// one, 0 for none yet), and checks afterwards that this call's largest magnitude fits it; only a
// tile that does not runs again at each K step's own exponents. The fixed exponent leaves room
// for the block to grow by 2^STAGE_HEADROOM, and accepts one that shrank by up to
// 2^(STAGE_SLACK - STAGE_HEADROOM): its largest value then still lands at 2^(STAGE_TOP -
// STAGE_SLACK) or above, so that values down to 2^-16 of it keep f16's 11 bits.
const int STAGE_HEADROOM = 3;
const int STAGE_SLACK = 12;
const int STAGE_NO_HISTORY = -1000;  // outside every exponent's range

// The fixed exponent from a block's stored history word, or STAGE_NO_HISTORY.
STAGE_FN int stage_history_exponent(uint stored) {
  if (stored == 0u) return STAGE_NO_HISTORY;
  return clamp(stage_exponent(stored - 1u, STAGE_EXP_LIMIT) - STAGE_HEADROOM, -STAGE_EXP_LIMIT, STAGE_EXP_LIMIT);
}

// Whether a block whose largest magnitude (stage_magnitude's order, infinity and NaN included as
// themselves) is `largest` was staged well at exponent e: below f16's top, and no more than
// STAGE_SLACK under the exponent it would choose itself. A block of zeros fits any exponent.
STAGE_FN bool stage_fits(uint largest, int e) {
  if (largest >= STAGE_NOT_FINITE) return false;
  if (largest == 0u) return true;
  const int own = stage_exponent(largest, STAGE_EXP_LIMIT);
  return e <= own && e >= own - STAGE_SLACK;
}

// StageF16's layout (kernel_abi.hpp, StageF16): the word, from the staged operand's start, that
// holds the exponent of 16-row block `rb` at k block `kb` (32 k a block), after the operand's
// `padded_rows` rows of `row_words` words. Its writers (stage_f16.comp, stage_rows.glsl, the GLU's
// staged store) and readers (the staged products) share it.
STAGE_FN uint staged_exponent_word(uint padded_rows, uint row_words, uint rb, uint kb) {
  return padded_rows * row_words + rb * (row_words / 16u) + kb;
}
