// Scaled f16 staging for the tensor-core attention kernels (stage_scale.glsl's arithmetic): every
// block they stage (a subgroup's 16 rows of Q, dO, K or V; a workgroup's tile of the other side;
// a subgroup's probabilities or ds) is multiplied by a power of two from its largest magnitude,
// products are brought back by the exponents' sum, and accumulators follow their blocks' exponents.
// Include after coop_fragments.glsl and common.glsl; the macros use the kernel's HEAD_DIM, FRAGS,
// lane, p_tile, p_at, P_STRIDE, my_row and my_col0.
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "stage_scale.glsl"

shared uvec2 stage_tile_max[8u];  // per subgroup: the largest magnitudes of its share of two tiles

// The exponents of two tiles the whole workgroup stages, from each invocation's largest
// magnitudes of its shares, capped at cap_a and cap_b. Holds a barrier: call it in uniform flow,
// after a barrier that ends the previous call's reads.
ivec2 workgroup_stage_exponents(uint max_a, uint max_b, int cap_a, int cap_b) {
  subgroupBarrier();  // reconverged after the callers' bounds checks, so that the reduction sees every lane
  max_a = subgroupMax(max_a);
  max_b = subgroupMax(max_b);
  if (subgroupElect()) stage_tile_max[gl_SubgroupID] = uvec2(max_a, max_b);
  barrier();
  uvec2 m = stage_tile_max[0];
  for (uint w = 1u; w < gl_NumSubgroups; ++w) m = max(m, stage_tile_max[w]);
  return ivec2(stage_exponent(m.x, cap_a), stage_exponent(m.y, cap_b));
}

// Rows [r0, r0 + ROWS) of one head of BUF_A into DST_A (and of BUF_B into DST_B when WITH_B) as f16
// rows of STRIDE elements, scaled by 2^EA (2^EB): their exponents, set here, capped at CAP_A
// (CAP_B). Row r is first + r * step (attention_common.glsl), zero past `rows`. The whole
// workgroup stages; the values are read twice (the second time from cache): for the largest
// magnitude, then to stage.
#define STAGE_TILES(DST_A, BUF_A, EA, CAP_A, DST_B, BUF_B, EB, CAP_B, WITH_B, ROWS, STRIDE, first, step, r0, rows) \
  {                                                                                                    \
    uint ma_ = 0u, mb_ = 0u;                                                                           \
    for (uint e_ = gl_LocalInvocationID.x; e_ < (ROWS) * HEAD_DIM; e_ += WG) {                          \
      uint r_ = e_ / HEAD_DIM, at_ = ((first) + ((r0) + r_) * (step)) * HEAD_DIM + e_ % HEAD_DIM;      \
      if ((r0) + r_ >= (rows)) continue;                                                               \
      ma_ = max(ma_, stage_magnitude(uintBitsToFloat(BUF_A[at_])));                                    \
      if (WITH_B) mb_ = max(mb_, stage_magnitude(uintBitsToFloat(BUF_B[at_])));                        \
    }                                                                                                  \
    ivec2 e2_ = workgroup_stage_exponents(ma_, mb_, CAP_A, CAP_B);                                     \
    EA = e2_.x;                                                                                        \
    EB = e2_.y;                                                                                        \
    float sa_ = stage_pow2(EA), sb_ = stage_pow2(EB);                                                  \
    for (uint e_ = gl_LocalInvocationID.x; e_ < (ROWS) * HEAD_DIM; e_ += WG) {                          \
      uint r_ = e_ / HEAD_DIM, x_ = e_ % HEAD_DIM, at_ = ((first) + ((r0) + r_) * (step)) * HEAD_DIM + x_; \
      bool in_ = (r0) + r_ < (rows);                                                                   \
      DST_A[r_ * (STRIDE) + x_] = float16_t(in_ ? uintBitsToFloat(BUF_A[at_]) * sa_ : 0.0f);           \
      if (WITH_B) DST_B[r_ * (STRIDE) + x_] = float16_t(in_ ? uintBitsToFloat(BUF_B[at_]) * sb_ : 0.0f); \
    }                                                                                                  \
  }

// This subgroup's 16 rows [row0, row0 + 16) of one head of `buf` (as STAGE_TILES's) as A
// fragments, scaled by 2^E (their exponent, set here), staged 32 columns at a time through the
// subgroup's f16 scratch p_tile.
#define LOAD_ROWS(frags, E, buf, first, step, row0, rows)                                            \
  {                                                                                                  \
    uint m_ = 0u;                                                                                    \
    for (uint e_ = lane; e_ < 16u * HEAD_DIM; e_ += gl_SubgroupSize) {                               \
      uint r_ = e_ / HEAD_DIM;                                                                       \
      if ((row0) + r_ < (rows))                                                                      \
        m_ = max(m_, stage_magnitude(uintBitsToFloat(buf[((first) + ((row0) + r_) * (step)) * HEAD_DIM + e_ % HEAD_DIM]))); \
    }                                                                                                \
    subgroupBarrier(); /* reconverged after the bounds checks: the reduction sees every lane */      \
    E = stage_exponent(subgroupMax(m_), STAGE_EXP_LIMIT);                                            \
  }                                                                                                  \
  for (uint c0 = 0u; c0 < HEAD_DIM; c0 += 32u) {                                                     \
    float s_ = stage_pow2(E);                                                                        \
    for (uint e_ = lane; e_ < 16u * 32u; e_ += gl_SubgroupSize) {                                    \
      uint r_ = e_ / 32u, x_ = c0 + e_ % 32u;                                                        \
      p_tile[p_at + r_ * P_STRIDE + e_ % 32u] = float16_t(                                           \
          ((row0) + r_ < (rows) && x_ < HEAD_DIM) ? uintBitsToFloat(buf[((first) + ((row0) + r_) * (step)) * HEAD_DIM + x_]) * s_ : 0.0f); \
    }                                                                                                \
    subgroupMemoryBarrierShared();                                                                   \
    subgroupBarrier();                                                                               \
    for (uint f_ = c0 / 16u; f_ < min(FRAGS, c0 / 16u + 2u); ++f_)                                   \
      coopMatLoadNV(frags[f_], p_tile, p_at + (f_ * 16u - c0), P_STRIDE, false);                     \
    subgroupBarrier();                                                                               \
  }

// This subgroup's probabilities or ds, each invocation's VALS[0..N) at row my_row and columns
// my_col0.., into p_tile scaled by 2^E (their exponent, set here, capped at CAP).
#define STAGE_P(VALS, N, E, CAP)                                                           \
  {                                                                                        \
    uint m_ = 0u;                                                                          \
    for (uint c_ = 0u; c_ < (N); ++c_) m_ = max(m_, stage_magnitude(VALS[c_]));            \
    subgroupBarrier();                                                                     \
    E = stage_exponent(subgroupMax(m_), CAP);                                              \
    float s_ = stage_pow2(E);                                                              \
    for (uint c_ = 0u; c_ < (N); ++c_) p_tile[p_at + my_row * P_STRIDE + my_col0 + c_] = float16_t(VALS[c_] * s_); \
  }

// A 16x16 product of blocks staged at exponents adding up to E, back in f32's units.
#define UNSCALE_FRAGMENT(S, E) \
  S = S * stage_pow2(-((E) / 2)); \
  S = S * stage_pow2((E) / 2 - (E));

// Brings the accumulators ACC[0..FRAGS), kept at exponent ACC_EXP, to exponent E (a subgroup's).
#define RESCALE_ACCUMULATORS(ACC, ACC_EXP, E)                                 \
  if ((E) != ACC_EXP) {                                                       \
    float r_ = stage_rescale(ACC_EXP, E);                                     \
    for (uint f_ = 0u; f_ < FRAGS; ++f_) ACC[f_] = ACC[f_] * r_;              \
    ACC_EXP = (E);                                                            \
  }
