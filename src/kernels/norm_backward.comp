#version 450
// rms_norm / layer_norm backward (d x) over the last axis of a contiguous [rows, dim] tensor,
// one workgroup per row. With xhat = (x - mean) * rstd (mean = 0 for rms) and g = dy * w:
//   rms:   dx = rstd * (g - xhat * mean(g * xhat))
//   layer: dx = rstd * (g - mean(g) - xhat * mean(g * xhat))
// HAS_ADD: dx + R (binding 6, the same layout): the residual branch's gradient joined in the
// same pass (an `add` of this result that nothing else reads; lowering binds x there otherwise).
// WRITE_STATS: the row statistics go to binding 7 too, so that norm_weight_grad.comp need not
// work them out again.
#extension GL_GOOGLE_include_directive : require
#define MN_WORKGROUP_REDUCE
#include "common.glsl"

layout(constant_id = 1) const uint KIND = 0u;
layout(constant_id = 2) const uint HAS_WEIGHT = 0u;
layout(constant_id = 3) const uint HAS_ADD = 0u;
const uint NORM_RMS = 0u, NORM_LAYER = 1u;

struct NormParams { uint rows, dim; float eps; uint pad; };
PARAMS_BLOCK { NormParams p; };
layout(std430, set = 0, binding = 2) readonly buffer X { uint x[]; };
layout(std430, set = 0, binding = 3) readonly buffer W { uint w[]; };
layout(std430, set = 0, binding = 4) readonly buffer DY { uint dy[]; };
layout(std430, set = 0, binding = 5) writeonly buffer DX { uint dx[]; };
layout(std430, set = 0, binding = 6) readonly buffer R { uint addend[]; };
// WRITE_STATS: each row's (mean, rstd), for the norm weight gradient of the same x and dy.
layout(constant_id = 4) const uint WRITE_STATS = 0u;
layout(std430, set = 0, binding = 7) writeonly buffer Stats { uint stats[]; };

float grad_at(uint base, uint j) {
  float g = uintBitsToFloat(dy[base + j]);
  return HAS_WEIGHT != 0u ? g * uintBitsToFloat(w[j]) : g;
}

void main() {
  uint t = gl_LocalInvocationID.x;
  bool layer = KIND == NORM_LAYER;
  for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x) {
    uint base = row * p.dim;
    float mean, rstd;
    NORM_ROW_STATS(mean, rstd, x, base, p.dim, layer, p.eps)
    if (WRITE_STATS != 0u && t == 0u) {
      stats[2u * row] = floatBitsToUint(mean);
      stats[2u * row + 1u] = floatBitsToUint(rstd);
    }
    float mean_g = 0.0f, mean_gx;
    if (layer) {
      ROW_SUM(mean_g, p.dim, grad_at(base, l_))
      mean_g /= float(p.dim);
    }
    ROW_SUM(mean_gx, p.dim, grad_at(base, l_) * ((uintBitsToFloat(x[base + l_]) - mean) * rstd))
    mean_gx /= float(p.dim);
    for (uint j = t; j < p.dim; j += WG) {
      float xhat = (uintBitsToFloat(x[base + j]) - mean) * rstd;
      float v = rstd * ((grad_at(base, j) - mean_g) - xhat * mean_gx);
      if (HAS_ADD != 0u) v += uintBitsToFloat(addend[base + j]);
      dx[base + j] = floatBitsToUint(v);
    }
  }
}
