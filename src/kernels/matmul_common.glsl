// The MatMul family's shared contract (kernel_abi.hpp, "MatMul"): the params block, the five
// tensor bindings and Linear's epilogue, for every tier: matmul.comp (f32, register-tiled),
// matmul_gemv.comp (a few rows), matmul_coop.glsl (tensor cores) and matmul_split_sum.comp
// (split-K's second pass). Include after common.glsl.
struct MatMulParams {
  uint M, K, batch, batch_rank;
  uint a_offset, a_row_stride, a_col_stride, groups;
  uint batch_shape[4], a_batch_stride[4], b_batch_stride[4];
  uint bias_offset, r_offset, r_row_stride, r_col_stride, r_batch_stride[4];
  uint N[4], tile0[5], k_chunk, splits, split_stride;
  uint b_offset[4], c_offset[4];
  uint b_row_stride[4], b_col_stride[4];
};
// A kernel whose params block carries more after MatMulParams defines MATMUL_PARAMS_TAIL (the
// members) before including this file.
#ifndef MATMUL_PARAMS_TAIL
#define MATMUL_PARAMS_TAIL
#endif
layout(std430, set = 0, binding = 0) readonly buffer Params { MatMulParams p; MATMUL_PARAMS_TAIL };
layout(std430, set = 0, binding = 2) readonly buffer A { uint a_data[]; };
layout(std430, set = 0, binding = 3) readonly buffer B { uint b_data[]; };
layout(std430, set = 0, binding = 4) writeonly buffer C { uint c_data[]; };
// Bound to A and B when the epilogue does not read them (never to C).
layout(std430, set = 0, binding = 5) readonly buffer Bias { uint bias_data[]; };
layout(std430, set = 0, binding = 6) readonly buffer Res { uint res_data[]; };

layout(constant_id = 1) const uint HAS_BIAS = 0u;
layout(constant_id = 2) const uint ACT = 0u;  // LIN_ACT_*
layout(constant_id = 3) const uint HAS_RESIDUAL = 0u;
const uint LIN_ACT_NONE = 0u, LIN_ACT_RELU = 1u, LIN_ACT_GELU = 2u, LIN_ACT_GELU_TANH = 3u, LIN_ACT_SILU = 4u;

float epilogue(float v, uint bt, uint gm, uint gn) {
  if (HAS_BIAS != 0u) v += uintBitsToFloat(bias_data[p.bias_offset + gn]);
  switch (ACT) {
    case LIN_ACT_RELU: v = v < 0.0f ? 0.0f : v; break;  // NaN passes through
    case LIN_ACT_GELU: v = gelu_p(v); break;
    case LIN_ACT_GELU_TANH: v = gelu_tanh_p(v); break;
    case LIN_ACT_SILU: v = silu_p(v); break;
  }
  if (HAS_RESIDUAL != 0u) {
    uint r_base;
    STRIDED_OFFSET(r_base, bt, p.batch_rank, p.batch_shape, p.r_batch_stride)
    v += uintBitsToFloat(res_data[p.r_offset + r_base + gm * p.r_row_stride + gn * p.r_col_stride]);
  }
  return v;
}

// Split-K (splits > 1): workgroup row y covers row tile y / splits and the K range
// [s * k_chunk, min(K, (s + 1) * k_chunk)), s = y % splits; the first pass writes raw partial
// sums to C's scratch at s * split_stride, and matmul_split_sum.comp adds them and applies the
// epilogue. With splits = 1, k_chunk = K.
layout(constant_id = 4) const uint SPLIT_PARTIAL = 0u;

uint group_of(uint tile) {  // the product a column tile belongs to
  uint g = 0u;
  while (g + 1u < p.groups && tile >= p.tile0[g + 1u]) ++g;
  return g;
}

// Split-K's second pass: element i of C summed over the splits' partials, bound as A.
float split_sum(uint i) {
  float sum = 0.0f;
  for (uint s = 0u; s < p.splits; ++s) sum += uintBitsToFloat(a_data[s * p.split_stride + i]);
  return sum;
}

void store_c(uint g, uint bt, uint gm, uint gn, float acc, uint split) {
  uint i = p.c_offset[g] + bt * p.M * p.N[g] + gm * p.N[g] + gn;
  if (SPLIT_PARTIAL != 0u) c_data[split * p.split_stride + i] = floatBitsToUint(acc);
  else c_data[i] = floatBitsToUint(epilogue(acc, bt, gm, gn));
}
