#version 450
// d weight of rms_norm / layer_norm: dw[d] = sum over rows r of dy[r,d] * (x[r,d] - mean_r) * rstd_r,
// in one pass. A workgroup owns COLS columns and walks the rows SLICES at a time: the COLS
// invocations of slice s first work out row s's mean and rstd together (adjacent invocations
// read adjacent words), then each adds its column's term of that row. Each workgroup works out
// the statistics of every row again -- cheaper than a dispatch of its own, whose scratch also
// ordered the norm weight gradients behind barriers. The slices' sums meet in shared memory.
// READ_STATS: the norm backward of the same x and dy wrote the statistics (binding 5), and the
// pass is a plain column sum (an H100: 4 us against 30-40 for [128, 576]).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 1) const uint KIND = 0u;
const uint NORM_RMS = 0u, NORM_LAYER = 1u;

struct NormParams { uint rows, dim; float eps; uint pad; };
PARAMS_BLOCK { NormParams p; };
layout(std430, set = 0, binding = 2) readonly buffer X { uint x[]; };
layout(std430, set = 0, binding = 3) readonly buffer DY { uint dy[]; };
layout(std430, set = 0, binding = 4) writeonly buffer DW { uint dw[]; };
// READ_STATS: each row's (mean, rstd) as norm_backward.comp wrote them for the same x and dy.
layout(constant_id = 2) const uint READ_STATS = 0u;
layout(std430, set = 0, binding = 5) readonly buffer Stats { uint stats[]; };

const uint COLS = 16u, SLICES = WG / COLS;
shared float partial[WG];

// The sum over the COLS invocations of this slice (every one of them gets it).
float slice_sum(float v) {
  const uint t = gl_LocalInvocationID.x, first = t - t % COLS;
  partial[t] = v;
  barrier();
  float total = 0.0f;
  for (uint k = 0u; k < COLS; ++k) total += partial[first + k];
  barrier();
  return total;
}

void main() {
  const uint col = gl_LocalInvocationID.x % COLS, slice = gl_LocalInvocationID.x / COLS;
  for (uint d0 = gl_WorkGroupID.x * COLS; d0 < p.dim; d0 += gl_NumWorkGroups.x * COLS) {
    const uint d = d0 + col;
    float s = 0.0f, c = 0.0f;
    if (READ_STATS != 0u && d < p.dim) {  // no statistics to work out: a plain column sum
      for (uint r = slice; r < p.rows; r += SLICES) {
        const uint i = r * p.dim + d;
        const float mean = uintBitsToFloat(stats[2u * r]), rstd = uintBitsToFloat(stats[2u * r + 1u]);
        kahan_add(s, c, uintBitsToFloat(dy[i]) * ((uintBitsToFloat(x[i]) - mean) * rstd));
      }
    }
    for (uint r0 = 0u; READ_STATS == 0u && r0 < p.rows; r0 += SLICES) {
      const uint r = r0 + slice, base = r * p.dim;
      const bool row_in = r < p.rows;
      float mean = 0.0f;
      if (KIND == NORM_LAYER) {
        float m = 0.0f, mc = 0.0f;
        if (row_in)
          for (uint l = col; l < p.dim; l += COLS) kahan_add(m, mc, uintBitsToFloat(x[base + l]));
        mean = slice_sum(m) / float(p.dim);
      }
      float ss = 0.0f, sc = 0.0f;
      if (row_in)
        for (uint l = col; l < p.dim; l += COLS) {
          float v = uintBitsToFloat(x[base + l]) - mean;
          kahan_add(ss, sc, v * v);
        }
      const float rstd = norm_rstd(slice_sum(ss), p.dim, p.eps);
      if (row_in && d < p.dim)
        kahan_add(s, c, uintBitsToFloat(dy[base + d]) * ((uintBitsToFloat(x[base + d]) - mean) * rstd));
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
