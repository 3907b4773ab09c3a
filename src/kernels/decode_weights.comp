#version 450
// DecodeWeights (decode_step_abi.hpp): the persistent decoding step's weight matrices rounded to
// f16 once, so that a step streams half the bytes (runtime/persistent_decode.cpp; not at matmul
// precision `highest`). Each row is scaled by a power of two from its own largest finite
// magnitude (stage_scale.glsl: into [2^14, 2^15)), so that a row of tiny or huge weights keeps
// f16's 11 significant bits and f32's range — the tensor cores' `high` precision, a row at a time.
// Infinity and NaN pass through. Rows are written as decode_step.comp reads them: 16 bytes that
// start with the row's exponent, then the row's k in pairs (the even k in the low half), zero
// past k to a multiple of 8. A subgroup a row; the rows of every job in one dispatch.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference_uvec2 : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"
#include "stage_scale.glsl"

PARAMS_BLOCK {
  uint jobs, pad0, pad1, pad2;
} p;
// Two words of four a job: (source address, destination address), (rows, k, 0, 0).
layout(std430, set = 0, binding = 2) readonly buffer Jobs { uvec4 job[]; };

layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer Rows4 { vec4 v[]; };
layout(buffer_reference, std430, buffer_reference_align = 8) writeonly buffer Pairs { uvec2 v[]; };

uint largest_of(vec4 v) {
  return max(max(stage_magnitude(v.x), stage_magnitude(v.y)), max(stage_magnitude(v.z), stage_magnitude(v.w)));
}

void main() {
  const uint lane = gl_SubgroupInvocationID, size = gl_SubgroupSize;
  const uint first = gl_WorkGroupID.x * gl_NumSubgroups + gl_SubgroupID, stride = gl_NumWorkGroups.x * gl_NumSubgroups;
  for (uint j = 0u; j < p.jobs; ++j) {
    const uvec4 where = job[2u * j], shape = job[2u * j + 1u];
    Rows4 src = Rows4(where.xy);
    Pairs dst = Pairs(where.zw);
    const uint k4s = shape.y / 4u, chunks = (shape.y + 7u) / 8u;  // 16-byte loads a row: in, out
    for (uint r = first; r < shape.x; r += stride) {  // uniform in the subgroup
      uint largest = 0u;
      for (uint k4 = lane; k4 < k4s; k4 += size) largest = max(largest, largest_of(src.v[r * k4s + k4]));
      const int e = stage_exponent(subgroupMax(largest), STAGE_EXP_LIMIT);
      const float scale = stage_pow2(e);
      const uint row = r * (chunks + 1u) * 2u;  // in pairs of words: the exponent's 16 bytes, then k
      for (uint k4 = lane; k4 < 2u * chunks; k4 += size) {
        const vec4 v = k4 < k4s ? src.v[r * k4s + k4] * scale : vec4(0.0f);
        dst.v[row + 2u + k4] = uvec2(packHalf2x16(v.xy), packHalf2x16(v.zw));
      }
      if (lane == 0u) {
        dst.v[row] = uvec2(uint(e), 0u);
        dst.v[row + 1u] = uvec2(0u);
      }
    }
  }
}
