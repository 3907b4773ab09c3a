#version 450
// Softmax / log-softmax along one axis of a contiguous [outer, len, inner] tensor, one workgroup
// per row: max, then sum of exp(x - max), then the write. A NaN anywhere in a row makes it NaN.
#extension GL_GOOGLE_include_directive : require
#define MN_WORKGROUP_REDUCE
#include "common.glsl"

layout(constant_id = 1) const uint LOG = 0u;

struct SoftmaxParams { uint outer, len, inner, pad; };
PARAMS_BLOCK { SoftmaxParams p; };
layout(std430, set = 0, binding = 2) readonly buffer In { uint x[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Out { uint y[]; };

void main() {
  uint t = gl_LocalInvocationID.x;
  uint rows = p.outer * p.inner;
  for (uint row = gl_WorkGroupID.x; row < rows; row += gl_NumWorkGroups.x) {
    uint o = row / p.inner, i = row % p.inner;
    uint base = o * p.len * p.inner + i, step = p.inner;

    float m, ones, rest;
    ROW_MAX_LSE(m, ones, rest, x, base, step, p.len)
    float s = ones + rest;
    float log_s = LOG != 0u ? log1p_p((ones - 1.0f) + rest) : 0.0f;
    for (uint l = t; l < p.len; l += WG) {
      float v = uintBitsToFloat(x[base + l * step]);
      float r;
      if (LOG != 0u) {
        ff d = diff_ff(v, m);
        r = (d.hi - log_s) + d.lo;
      } else {
        r = exp_diff(v, m) / s;
      }
      y[base + l * step] = floatBitsToUint(r);
    }
  }
}
