#version 450
// Per-row statistics of rms_norm / layer_norm for NormWeightGrad: stats[2r] = mean (0 for rms),
// stats[2r+1] = rstd, exactly as the forward and NormBackward compute them (NORM_ROW_STATS).
#extension GL_GOOGLE_include_directive : require
#define MN_WORKGROUP_REDUCE
#include "common.glsl"

layout(constant_id = 1) const uint KIND = 0u;
const uint NORM_RMS = 0u, NORM_LAYER = 1u;

struct NormParams { uint rows, dim; float eps; uint pad; };
layout(std430, set = 0, binding = 0) readonly buffer Params { NormParams p; };
layout(std430, set = 0, binding = 2) readonly buffer X { uint x[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Stats { uint stats[]; };

void main() {
  for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x) {
    float mean, rstd;
    NORM_ROW_STATS(mean, rstd, x, row * p.dim, p.dim, KIND == NORM_LAYER, p.eps)
    if (gl_LocalInvocationID.x == 0u) {
      stats[2u * row] = floatBitsToUint(mean);
      stats[2u * row + 1u] = floatBitsToUint(rstd);
    }
  }
}
