#version 450
// rms_norm / layer_norm over the last axis of a contiguous [rows, dim] tensor, one workgroup per
// row (statistics: NORM_ROW_STATS in common.glsl).
#extension GL_GOOGLE_include_directive : require
#define MN_WORKGROUP_REDUCE
#include "common.glsl"

layout(constant_id = 1) const uint KIND = 0u;
layout(constant_id = 2) const uint HAS_WEIGHT = 0u;
layout(constant_id = 3) const uint HAS_BIAS = 0u;
const uint NORM_RMS = 0u, NORM_LAYER = 1u;

struct NormParams { uint rows, dim; float eps; uint pad; };
PARAMS_BLOCK { NormParams p; };
layout(std430, set = 0, binding = 2) readonly buffer X { uint x[]; };
layout(std430, set = 0, binding = 3) readonly buffer W { uint w[]; };
layout(std430, set = 0, binding = 4) readonly buffer Bias { uint bias[]; };
layout(std430, set = 0, binding = 5) writeonly buffer Out { uint y[]; };

void main() {
  uint t = gl_LocalInvocationID.x;
  for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x) {
    uint base = row * p.dim;
    float mean, r;
    NORM_ROW_STATS(mean, r, x, base, p.dim, KIND == NORM_LAYER, p.eps)
    for (uint j = t; j < p.dim; j += WG) {
      float v = (uintBitsToFloat(x[base + j]) - mean) * r;
      if (HAS_WEIGHT != 0u) v *= uintBitsToFloat(w[j]);
      if (HAS_BIAS != 0u) v += uintBitsToFloat(bias[j]);
      y[base + j] = floatBitsToUint(v);
    }
  }
}
