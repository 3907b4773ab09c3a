#version 450
// StageF16 (kernel_abi.hpp): an f32 operand of the tensor-core matmul staged once, before the
// product, as scaled f16 in the layout the kernel copies from (matmul_coop.glsl, STAGED), instead
// of once per tile that reads it inside the product. Element (r, k) of the operand, r < rows,
// k < K, is in[in_offset + r * row_stride + k * col_stride]; the output holds padded_rows rows of
// row_words words (2 f16 values a word, K padded with zeros to 2 * row_words), then one int
// exponent per block of 16 rows x 32 k (rows / 16 major). Each block is scaled by 2^e from its own
// largest finite magnitude (stage_scale.glsl, no cap: the product caps as it sums), rounded to
// f16 as the product's own staging does, so a product of staged blocks equals one staged inside.
// One subgroup a block; the values pass through shared memory to be paired along k.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#include "common.glsl"
#include "stage_scale.glsl"

struct StageF16Params {
  uint rows, K, in_offset, row_stride;
  uint col_stride, out_offset, row_words, padded_rows;
};
PARAMS_BLOCK { StageF16Params p; };
layout(std430, set = 0, binding = 2) readonly buffer In { uint src[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Out { uint dst[]; };

const uint SUBGROUPS = WG / 32u;
shared float block_values[SUBGROUPS * 16u * 33u];  // a subgroup's block, rows padded by a word

void main() {
  const uint lane = gl_SubgroupInvocationID, sg = gl_SubgroupID;
  const uint k_blocks = p.row_words / 16u, blocks = (p.padded_rows / 16u) * k_blocks;
  const uint exp_offset = p.out_offset + p.padded_rows * p.row_words;
  // Consecutive lanes walk the operand's contiguous axis: k, or 16 rows at 2 k a load.
  const bool along_k = p.col_stride == 1u || p.row_stride != 1u;
  const uint base = sg * 16u * 33u;
  for (uint b = gl_WorkGroupID.x * SUBGROUPS + sg; b < blocks; b += gl_NumWorkGroups.x * SUBGROUPS) {
    uint r0 = (b / k_blocks) * 16u, k0 = (b % k_blocks) * 32u;
    float v[16];
    uint largest = 0u;
    for (uint i = 0u; i < 16u; ++i) {
      uint r = along_k ? i : lane % 16u, k = along_k ? lane : 2u * i + lane / 16u;
      bool inside = r0 + r < p.rows && k0 + k < p.K;
      v[i] = inside ? uintBitsToFloat(src[p.in_offset + (r0 + r) * p.row_stride + (k0 + k) * p.col_stride]) : 0.0f;
      largest = max(largest, stage_magnitude(v[i]));
    }
    subgroupBarrier();  // reconverged after the bounds checks: the reduction sees every lane
    int e = stage_exponent(subgroupMax(largest), STAGE_EXP_LIMIT);
    float scale = stage_pow2(e);
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
    if (subgroupElect()) dst[exp_offset + b] = uint(e);
    subgroupMemoryBarrierShared();
    subgroupBarrier();  // the block's values are read before the next block's are written
  }
}
