#version 450
// Split-K's second pass for a product whose rows a norm reads next (an o or down projection and
// the rms_norm after it): one workgroup per row adds the partial sums, applies the epilogue and
// stores the row (binding 4), then normalises it (binding 9) -- the norm needs no dispatch of its
// own. Single product, C contiguous [batch * M, N], N <= MAX_DIM (the row is kept in shared memory).
#extension GL_GOOGLE_include_directive : require
#define MN_WORKGROUP_REDUCE
#include "common.glsl"

#include "matmul_common.glsl"

layout(constant_id = 5) const uint NORM_KIND = 0u;  // NORM_RMS or NORM_LAYER, as norm.comp
layout(constant_id = 6) const uint NORM_HAS_WEIGHT = 0u;
layout(constant_id = 7) const uint NORM_HAS_BIAS = 0u;
layout(constant_id = 8) const float NORM_EPS = 1e-5f;
const uint NORM_LAYER = 1u, MAX_DIM = 4096u;

layout(std430, set = 0, binding = 7) readonly buffer NormW { uint norm_w[]; };
layout(std430, set = 0, binding = 8) readonly buffer NormB { uint norm_b[]; };
layout(std430, set = 0, binding = 9) writeonly buffer NormOut { uint norm_y[]; };

shared float row_values[MAX_DIM];
const uint COLS = 4u;  // columns per invocation per pass: their loads are all in flight at once

void main() {
  const uint t = gl_LocalInvocationID.x, N = p.N[0];
  for (uint row = gl_WorkGroupID.x; row < p.batch * p.M; row += gl_NumWorkGroups.x) {
    const uint base = row * N;
    // Each invocation reads back only the columns it wrote, so row_values needs no barrier.
    float s = 0.0f, c = 0.0f;
    for (uint j0 = t; j0 < N; j0 += COLS * WG) {
      float v[COLS];
      for (uint i = 0u; i < COLS; ++i) v[i] = 0.0f;
      for (uint k = 0u; k < p.splits; ++k)
        for (uint i = 0u; i < COLS; ++i)
          if (j0 + i * WG < N) v[i] += uintBitsToFloat(a_data[k * p.split_stride + base + j0 + i * WG]);
      for (uint i = 0u; i < COLS; ++i) {
        const uint j = j0 + i * WG;
        if (j >= N) break;
        const float e = epilogue(v[i], row / p.M, row % p.M, j);
        c_data[base + j] = floatBitsToUint(e);
        row_values[j] = e;
        kahan_add(s, c, e);
      }
    }
    const float mean = NORM_KIND == NORM_LAYER ? wg_sum(s) / float(N) : 0.0f;
    s = 0.0f;
    c = 0.0f;
    for (uint j = t; j < N; j += WG) kahan_add(s, c, (row_values[j] - mean) * (row_values[j] - mean));
    const float rstd = 1.0f / sqrt(wg_sum(s) / float(N) + NORM_EPS);  // inversesqrt() may be approximate
    for (uint j = t; j < N; j += WG) {
      float y = (row_values[j] - mean) * rstd;
      if (NORM_HAS_WEIGHT != 0u) y *= uintBitsToFloat(norm_w[j]);
      if (NORM_HAS_BIAS != 0u) y += uintBitsToFloat(norm_b[j]);
      norm_y[base + j] = floatBitsToUint(y);
    }
  }
}
