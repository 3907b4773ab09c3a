#version 450
// d weight of rms_norm / layer_norm: dw[d] = sum over rows r of dy[r,d] * (x[r,d] - mean_r) * rstd_r,
// with the row statistics from NormRowStats. Each invocation owns one column and walks the rows
// (adjacent invocations read adjacent words of a row).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

struct NormParams { uint rows, dim; float eps; uint pad; };
layout(std430, set = 0, binding = 0) readonly buffer Params { NormParams p; };
layout(std430, set = 0, binding = 2) readonly buffer X { uint x[]; };
layout(std430, set = 0, binding = 3) readonly buffer DY { uint dy[]; };
layout(std430, set = 0, binding = 4) readonly buffer Stats { uint stats[]; };
layout(std430, set = 0, binding = 5) writeonly buffer DW { uint dw[]; };

void main() {
  for (uint d = gl_GlobalInvocationID.x; d < p.dim; d += gl_NumWorkGroups.x * WG) {
    float s = 0.0f, c = 0.0f;
    for (uint r = 0u; r < p.rows; ++r) {
      uint e = r * p.dim + d;
      float xhat = (uintBitsToFloat(x[e]) - uintBitsToFloat(stats[2u * r])) * uintBitsToFloat(stats[2u * r + 1u]);
      kahan_add(s, c, uintBitsToFloat(dy[e]) * xhat);
    }
    dw[d] = floatBitsToUint(s);
  }
}
