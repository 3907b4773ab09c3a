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
  uint kgroups, k_begin[4], ka_shift[4], ka_row[4], kb_shift[4];  // a sum of products (kernel_abi.hpp)
};
// A kernel whose params block carries more after MatMulParams defines MATMUL_PARAMS_TAIL (the
// members) before including this file.
#ifndef MATMUL_PARAMS_TAIL
#define MATMUL_PARAMS_TAIL
#endif
PARAMS_BLOCK { MatMulParams p; MATMUL_PARAMS_TAIL };
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

// The epilogue's operands, apart so that a kernel can load them before its K loop.
float bias_at(uint gn) { return HAS_BIAS != 0u ? uintBitsToFloat(bias_data[p.bias_offset + gn]) : 0.0f; }
float residual_at(uint bt, uint gm, uint gn) {
  if (HAS_RESIDUAL == 0u) return 0.0f;
  uint r_base;
  STRIDED_OFFSET(r_base, bt, p.batch_rank, p.batch_shape, p.r_batch_stride)
  return uintBitsToFloat(res_data[p.r_offset + r_base + gm * p.r_row_stride + gn * p.r_col_stride]);
}
float epilogue_of(float v, float bias, float residual) {
  if (HAS_BIAS != 0u) v += bias;
  switch (ACT) {
    case LIN_ACT_RELU: v = v < 0.0f ? 0.0f : v; break;  // NaN passes through
    case LIN_ACT_GELU: v = gelu_p(v); break;
    case LIN_ACT_GELU_TANH: v = gelu_tanh_p(v); break;
    case LIN_ACT_SILU: v = silu_p(v); break;
  }
  if (HAS_RESIDUAL != 0u) v += residual;
  return v;
}
float epilogue(float v, uint bt, uint gm, uint gn) { return epilogue_of(v, bias_at(gn), residual_at(bt, gm, gn)); }

// Split-K (splits > 1): workgroup row y covers row tile y / splits and the K range
// [s * k_chunk, min(K, (s + 1) * k_chunk)), s = y % splits. SPLIT_PARTIAL 1: the first pass
// writes raw partial sums to C's scratch at s * split_stride, and matmul_split_sum.comp adds them
// and applies the epilogue. SPLIT_PARTIAL 2 (SPLIT_FINISH, kernels that define
// MATMUL_SPLIT_FINISH_BINDING): the partials go to that binding's scratch and the last of a
// tile's splits to finish adds them up and stores C (split_finish below): no second pass. With
// splits = 1, k_chunk = K.
layout(constant_id = 4) const uint SPLIT_PARTIAL = 0u;
const uint SPLIT_FINISH = 2u;
#ifdef MATMUL_SPLIT_FINISH_BINDING
// Coherent: the finishing workgroup reads what the others wrote in this dispatch.
layout(std430, set = 0, binding = MATMUL_SPLIT_FINISH_BINDING) coherent buffer Partials { uint part_data[]; };
layout(std430, set = 0, binding = MATMUL_SPLIT_FINISH_BINDING) coherent buffer Partials4 { vec4 part4[]; };
// One count per output tile: how many of its splits have stored their partials. Zero between
// dispatches (a persistent buffer, zeroed at session build; the finishing workgroup resets it).
layout(std430, set = 0, binding = MATMUL_SPLIT_FINISH_BINDING + 1) coherent buffer TileCounts { uint tile_count[]; };
#endif

// K_GROUPS (spec 10): the call is a sum of products (params kgroups). A specialisation constant,
// so that a single product's K loop compiles without the lookup: read from the params block,
// the lookup alone made SmolLM2's inference on an H100 3.08 -> 3.17 ms.
layout(constant_id = 10) const uint K_GROUPS = 0u;

// A sum of products: where the K step at k0 reads A and B (a K step never straddles two
// products). A single product: its own A row stride, no shifts.
void k_group_at(uint k0, out uint a_shift, out uint a_row, out uint b_shift) {
  a_shift = 0u;
  a_row = p.a_row_stride;
  b_shift = 0u;
  if (K_GROUPS == 0u) return;
  uint j = 0u;
  while (j + 1u < p.kgroups && k0 >= p.k_begin[j + 1u]) ++j;
  a_shift = p.ka_shift[j];
  a_row = p.ka_row[j];
  b_shift = p.kb_shift[j];
}

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

uint c_index(uint g, uint bt, uint gm, uint gn) { return p.c_offset[g] + bt * p.M * p.N[g] + gm * p.N[g] + gn; }

void store_c(uint g, uint bt, uint gm, uint gn, float acc, uint split) {
  uint i = c_index(g, bt, gm, gn);
#ifdef MATMUL_SPLIT_FINISH_BINDING
  if (SPLIT_PARTIAL == SPLIT_FINISH) {
    part_data[split * p.split_stride + i] = floatBitsToUint(acc);
    return;
  }
#endif
  if (SPLIT_PARTIAL != 0u) c_data[split * p.split_stride + i] = floatBitsToUint(acc);
  else c_data[i] = floatBitsToUint(epilogue(acc, bt, gm, gn));
}

#ifdef MATMUL_SPLIT_FINISH_BINDING
shared bool split_is_last;

// After a workgroup stored its partials of the tile (bt, row tile, column tile `tile`), of
// `rows` x `cols` elements from (m0, n0) of product g: counts it in, and if it was the tile's
// last split, adds the splits' partials in split order (the same sum as matmul_split_sum.comp,
// whatever order the workgroups ran in) and stores C with the epilogue. The pattern of CUDA's
// threadFenceReduction: each invocation's writes are made visible device-wide before one
// invocation counts the workgroup in.
void split_finish(uint g, uint bt, uint m0, uint n0, uint tile, uint rows, uint cols) {
  if (SPLIT_PARTIAL != SPLIT_FINISH) return;
  const uint tid = gl_LocalInvocationID.x;
  const uint counter = (bt * ((p.M + rows - 1u) / rows) + m0 / rows) * p.tile0[p.groups] + tile;
  memoryBarrierBuffer();
  barrier();
  if (tid == 0u) split_is_last = atomicAdd(tile_count[counter], 1u) == p.splits - 1u;
  barrier();
  if (!split_is_last) return;
  memoryBarrierBuffer();
  const uint N = p.N[g];
  // Four columns an invocation where C's rows and the partials are 16-byte aligned: the splits'
  // loads are independent, so they are in flight together (one column at a time, the finishing
  // workgroup took longer than a summing pass over the whole product).
  if (N % 4u == 0u && p.c_offset[g] % 4u == 0u && p.split_stride % 4u == 0u) {
    for (uint e = tid * 4u; e < rows * cols; e += WG * 4u) {
      uint gm = m0 + e / cols, gn = n0 + e % cols;
      if (gm >= p.M || gn >= N) continue;
      uint i = c_index(g, bt, gm, gn);
      vec4 sum = vec4(0.0f);
      for (uint s = 0u; s < p.splits; ++s) sum += part4[(s * p.split_stride + i) / 4u];
      for (uint j = 0u; j < 4u; ++j)
        c_data[i + j] = floatBitsToUint(p.groups == 1u ? epilogue(sum[j], bt, gm, gn + j) : sum[j]);
    }
    if (tid == 0u) tile_count[counter] = 0u;
    return;
  }
  for (uint e = tid; e < rows * cols; e += WG) {
    uint gm = m0 + e / cols, gn = n0 + e % cols;
    if (gm >= p.M || gn >= N) continue;
    uint i = c_index(g, bt, gm, gn);
    float sum = 0.0f;
    for (uint s = 0u; s < p.splits; ++s) sum += uintBitsToFloat(part_data[s * p.split_stride + i]);
    c_data[i] = floatBitsToUint(p.groups == 1u ? epilogue(sum, bt, gm, gn) : sum);
  }
  if (tid == 0u) tile_count[counter] = 0u;
}
#endif
