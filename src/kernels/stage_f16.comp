#version 450
// StageF16 (kernel_abi.hpp): an f32 operand of the tensor-core matmul staged once, before the
// product, as scaled f16 in the layout the kernel copies from (matmul_coop.glsl, STAGED), instead
// of once per tile that reads it inside the product. Element (r, k) of the operand, r < rows,
// k < K, is in[in_offset + r * row_stride + k * col_stride]; the output holds padded_rows rows of
// row_words words (2 f16 values a word, K padded with zeros to 2 * row_words), then one int
// exponent per block of 16 rows x 32 k (rows / 16 major). Each block is scaled by 2^e from its own
// largest finite magnitude (stage_scale.glsl, no cap: the product caps as it sums), rounded to
// f16 as the product's own staging does, so a product of staged blocks equals one staged inside.
// WHOLE_ROWS (spec 1): every block of 16 rows takes one exponent for all of K, from the largest
// magnitude of those rows — for weights staged once (an inference session's) and for the A of a
// product on workgroup-scope matrices (matmul_coop2.glsl), so that a product of two such operands
// never rescales its accumulators. One subgroup a block (WHOLE_ROWS: a workgroup a block of rows,
// its subgroups taking every SUBGROUPS-th block of 32 k); the values pass through shared memory to
// be paired along k.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#include "common.glsl"
#include "stage_scale.glsl"

layout(constant_id = 1) const uint WHOLE_ROWS = 0u;

struct StageF16Params {
  uint rows, K, in_offset, row_stride;
  uint col_stride, out_offset, row_words, padded_rows;
};
PARAMS_BLOCK { StageF16Params p; };
layout(std430, set = 0, binding = 2) readonly buffer In { uint src[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Out { uint dst[]; };

const uint SUBGROUPS = WG / 32u;
shared float block_values[SUBGROUPS * 16u * 33u];  // a subgroup's block, rows padded by a word
shared uint subgroup_largest[SUBGROUPS];            // WHOLE_ROWS: each subgroup's largest magnitude

// This lane's 16 values of the block at rows r0.., k0.. (zero outside the operand), and their
// largest stage_magnitude. Consecutive lanes walk the operand's contiguous axis: k, or 16 rows
// at 2 k a load.
uint load_block(uint r0, uint k0, out float v[16]) {
  const uint lane = gl_SubgroupInvocationID;
  const bool along_k = p.col_stride == 1u || p.row_stride != 1u;
  uint largest = 0u;
  for (uint i = 0u; i < 16u; ++i) {
    uint r = along_k ? i : lane % 16u, k = along_k ? lane : 2u * i + lane / 16u;
    bool inside = r0 + r < p.rows && k0 + k < p.K;
    v[i] = inside ? uintBitsToFloat(src[p.in_offset + (r0 + r) * p.row_stride + (k0 + k) * p.col_stride]) : 0.0f;
    largest = max(largest, stage_magnitude(v[i]));
  }
  return largest;
}

// The block at r0, k0 (load_block's values v) scaled by 2^e into the output, with its exponent.
void store_block(uint r0, uint k0, float v[16], int e) {
  const uint lane = gl_SubgroupInvocationID, base = gl_SubgroupID * 16u * 33u;
  const bool along_k = p.col_stride == 1u || p.row_stride != 1u;
  const float scale = stage_pow2(e);
  for (uint i = 0u; i < 16u; ++i) {
    uint r = along_k ? i : lane % 16u, k = along_k ? lane : 2u * i + lane / 16u;
    block_values[base + r * 33u + k] = v[i] * scale;
  }
  subgroupMemoryBarrierShared();
  subgroupBarrier();
  for (uint w = lane; w < 256u; w += 32u) {  // 16 words a row: two rows a pass
    uint r = w / 16u, kp = 2u * (w % 16u);
    vec2 pair = vec2(block_values[base + r * 33u + kp], block_values[base + r * 33u + kp + 1u]);
    dst[p.out_offset + (r0 + r) * p.row_words + k0 / 2u + w % 16u] = packFloat2x16(f16vec2(pair));
  }
  if (subgroupElect()) dst[p.out_offset + staged_exponent_word(p.padded_rows, p.row_words, r0 / 16u, k0 / 32u)] = uint(e);
  subgroupMemoryBarrierShared();
  subgroupBarrier();  // the block's values are read before the next block's are written
}

void main() {
  const uint k_blocks = p.row_words / 16u, row_blocks = p.padded_rows / 16u;
  const uint first = gl_WorkGroupID.x * SUBGROUPS + gl_SubgroupID, stride = gl_NumWorkGroups.x * SUBGROUPS;
  float v[16];
  if (WHOLE_ROWS != 0u) {
    for (uint rb = gl_WorkGroupID.x; rb < row_blocks; rb += gl_NumWorkGroups.x) {
      uint largest = 0u;
      for (uint kb = gl_SubgroupID; kb < k_blocks; kb += SUBGROUPS)
        largest = max(largest, load_block(rb * 16u, kb * 32u, v));
      subgroupBarrier();  // reconverged after the bounds checks: the reduction sees every lane
      largest = subgroupMax(largest);
      if (subgroupElect()) subgroup_largest[gl_SubgroupID] = largest;
      barrier();
      for (uint s = 0u; s < SUBGROUPS; ++s) largest = max(largest, subgroup_largest[s]);
      barrier();  // every subgroup has read the maxima before the next block of rows writes them
      const int e = stage_exponent(largest, STAGE_EXP_LIMIT);
      for (uint kb = gl_SubgroupID; kb < k_blocks; kb += SUBGROUPS) {
        load_block(rb * 16u, kb * 32u, v);
        store_block(rb * 16u, kb * 32u, v, e);
      }
    }
    return;
  }
  for (uint b = first; b < row_blocks * k_blocks; b += stride) {
    const uint largest = load_block((b / k_blocks) * 16u, (b % k_blocks) * 32u, v);
    subgroupBarrier();  // reconverged after the bounds checks: the reduction sees every lane
    store_block((b / k_blocks) * 16u, (b % k_blocks) * 32u, v, stage_exponent(subgroupMax(largest), STAGE_EXP_LIMIT));
  }
}
