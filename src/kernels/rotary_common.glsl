// Shared by rotary.comp, matmul_split_sum_rotary.comp and matmul_gemv_subgroup.comp: one part
// of a rotary call (x's shape collapsed with its last axis D kept; cos/sin strides over it,
// kernel_abi.hpp RotaryPart) and where its element e finds cos and sin.
struct RotaryPart {
  uint n, rank, cos_offset, sin_offset;
  uint shape[8], cos_stride[8], sin_stride[8];
};

// cos at C_AT, sin at S_AT, and element E's index along the last axis (LAST) for PART, a
// RotaryPart in the params block read in place (a function taking the struct by value copied it
// to local memory first, its arrays being indexed at run time).
#define ROTARY_AT(PART, E, C_AT, S_AT, LAST)             \
  {                                                      \
    C_AT = (PART).cos_offset;                            \
    S_AT = (PART).sin_offset;                            \
    LAST = 0u;                                           \
    uint rem_ = (E);                                     \
    for (int d_ = int((PART).rank) - 1; d_ >= 0; --d_) { \
      const uint n_ = (PART).shape[d_];                  \
      const uint c_ = d_ > 0 ? rem_ % n_ : rem_;         \
      if (d_ == int((PART).rank) - 1) LAST = c_;         \
      rem_ /= n_;                                        \
      C_AT += c_ * (PART).cos_stride[d_];                \
      S_AT += c_ * (PART).sin_stride[d_];                \
    }                                                    \
  }
