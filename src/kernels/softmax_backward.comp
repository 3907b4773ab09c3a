#version 450
// Softmax / log-softmax backward along one axis of a contiguous [outer, len, inner] tensor, one
// workgroup per row, from the forward output y:
//   softmax:     dx = y * (dy - sum_l dy*y)
//   log-softmax: dx = dy - exp(y) * sum_l dy
#extension GL_GOOGLE_include_directive : require
#define MN_WORKGROUP_REDUCE
#include "common.glsl"

layout(constant_id = 1) const uint LOG = 0u;

struct SoftmaxParams { uint outer, len, inner, pad; };
PARAMS_BLOCK { SoftmaxParams p; };
layout(std430, set = 0, binding = 2) readonly buffer Y { uint y[]; };
layout(std430, set = 0, binding = 3) readonly buffer DY { uint dy[]; };
layout(std430, set = 0, binding = 4) writeonly buffer DX { uint dx[]; };

void main() {
  uint t = gl_LocalInvocationID.x;
  uint rows = p.outer * p.inner;
  for (uint row = gl_WorkGroupID.x; row < rows; row += gl_NumWorkGroups.x) {
    uint o = row / p.inner, i = row % p.inner;
    uint base = o * p.len * p.inner + i, step = p.inner;
    float s;
    if (LOG != 0u) {
      ROW_SUM(s, p.len, uintBitsToFloat(dy[base + l_ * step]))
    } else {
      ROW_SUM(s, p.len, uintBitsToFloat(dy[base + l_ * step]) * uintBitsToFloat(y[base + l_ * step]))
    }
    for (uint l = t; l < p.len; l += WG) {
      uint e = base + l * step;
      float yv = uintBitsToFloat(y[e]), g = uintBitsToFloat(dy[e]);
      float r = LOG != 0u ? g - exp_p(yv) * s : yv * (g - s);
      dx[e] = floatBitsToUint(r);
    }
  }
}
