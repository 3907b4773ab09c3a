// Shared by the rotary kernels (rotary.comp, rotary_append.comp, matmul_split_sum_rotary.comp):
// one part of a rotary call (x's shape collapsed with its last axis D kept; cos/sin strides over
// it, kernel_abi.hpp RotaryPart). Where an element finds cos and sin: rotary_index.glsl.
struct RotaryPart {
  uint n, rank, cos_offset, sin_offset;
  uint shape[8], cos_stride[8], sin_stride[8];
};
