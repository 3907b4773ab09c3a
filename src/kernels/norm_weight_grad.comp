#version 450
// d weight of rms_norm / layer_norm: dw[d] = sum over rows r of dy[r,d] * (x[r,d] - mean_r) * rstd_r,
// with the row statistics from NormRowStats. A workgroup owns COLS columns; its invocations split
// the rows into WG / COLS interleaved slices (adjacent invocations read adjacent words of a row),
// and the slices' sums meet in shared memory: a few long serial walks would leave the GPU idle.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

struct NormParams { uint rows, dim; float eps; uint pad; };
layout(std430, set = 0, binding = 0) readonly buffer Params { NormParams p; };
layout(std430, set = 0, binding = 2) readonly buffer X { uint x[]; };
layout(std430, set = 0, binding = 3) readonly buffer DY { uint dy[]; };
layout(std430, set = 0, binding = 4) readonly buffer Stats { uint stats[]; };
layout(std430, set = 0, binding = 5) writeonly buffer DW { uint dw[]; };

const uint COLS = 16u, SLICES = WG / COLS;
shared float partial[WG];

void main() {
  uint col = gl_LocalInvocationID.x % COLS, slice = gl_LocalInvocationID.x / COLS;
  for (uint d0 = gl_WorkGroupID.x * COLS; d0 < p.dim; d0 += gl_NumWorkGroups.x * COLS) {
    uint d = d0 + col;
    float s = 0.0f, c = 0.0f;
    if (d < p.dim) {
      for (uint r = slice; r < p.rows; r += SLICES) {
        uint e = r * p.dim + d;
        float xhat = (uintBitsToFloat(x[e]) - uintBitsToFloat(stats[2u * r])) * uintBitsToFloat(stats[2u * r + 1u]);
        kahan_add(s, c, uintBitsToFloat(dy[e]) * xhat);
      }
    }
    partial[gl_LocalInvocationID.x] = s;
    barrier();
    if (slice == 0u && d < p.dim) {
      float total = 0.0f, comp = 0.0f;
      for (uint k = 0u; k < SLICES; ++k) kahan_add(total, comp, partial[k * COLS + col]);
      dw[d] = floatBitsToUint(total);
    }
    barrier();
  }
}
