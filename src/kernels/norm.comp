#version 450
// rms_norm / layer_norm over the last axis of a contiguous [rows, dim] tensor, one workgroup per
// row (statistics: NORM_ROW_STATS in common.glsl). STAGE_ROWS (spec 4): the rows also staged as
// scaled f16 for the tensor-core matmul that reads them next (stage_rows.glsl).
#extension GL_GOOGLE_include_directive : require
#define MN_WORKGROUP_REDUCE
#include "common.glsl"
#include "stage_scale.glsl"

layout(constant_id = 1) const uint KIND = 0u;
layout(constant_id = 2) const uint HAS_WEIGHT = 0u;
layout(constant_id = 3) const uint HAS_BIAS = 0u;
layout(constant_id = 4) const uint STAGE_ROWS = 0u;
const uint NORM_RMS = 0u, NORM_LAYER = 1u;

struct NormParams { uint rows, dim; float eps; uint pad; };
struct StagedRows { uint row_words, padded_rows, pad0, pad1; };
#define STAGED_ROWS_BINDING 6
PARAMS_BLOCK { NormParams p; StagedRows sr; };
layout(std430, set = 0, binding = 2) readonly buffer X { uint x[]; };
layout(std430, set = 0, binding = 3) readonly buffer W { uint w[]; };
layout(std430, set = 0, binding = 4) readonly buffer Bias { uint bias[]; };
layout(std430, set = 0, binding = 5) writeonly buffer Out { uint y[]; };
#include "stage_rows.glsl"

float normalised(uint base, uint j, float mean, float r) {
  float v = (uintBitsToFloat(x[base + j]) - mean) * r;
  if (HAS_WEIGHT != 0u) v *= uintBitsToFloat(w[j]);
  if (HAS_BIAS != 0u) v += uintBitsToFloat(bias[j]);
  return v;
}

void main() {
  uint t = gl_LocalInvocationID.x;
  // STAGE_ROWS: this invocation's share of the weight's and bias's largest magnitudes.
  float w_max = HAS_WEIGHT != 0u || STAGE_ROWS == 0u ? 0.0f : 1.0f, b_max = 0.0f;
  if (STAGE_ROWS != 0u)
    for (uint j = t; j < p.dim; j += WG) {
      if (HAS_WEIGHT != 0u) w_max = staged_rows_largest(w_max, uintBitsToFloat(w[j]));
      if (HAS_BIAS != 0u) b_max = staged_rows_largest(b_max, uintBitsToFloat(bias[j]));
    }
  const uint rows = STAGE_ROWS != 0u ? sr.padded_rows : p.rows;
  for (uint row = gl_WorkGroupID.x; row < rows; row += gl_NumWorkGroups.x) {
    if (row >= p.rows) {  // STAGE_ROWS only: a padding row of the staged copy
      staged_rows_pad(row, staged_rows_exponent(staged_rows_reduce(vec3(0.0f, w_max, b_max)).yz, p.dim));
      continue;
    }
    uint base = row * p.dim;
    float mean, r;
    if (STAGE_ROWS == 0u) {
      NORM_ROW_STATS(mean, r, x, base, p.dim, KIND == NORM_LAYER, p.eps)
      for (uint j = t; j < p.dim; j += WG) y[base + j] = floatBitsToUint(normalised(base, j, mean, r));
      continue;
    }
    mean = 0.0f;
    if (KIND == NORM_LAYER) {
      ROW_SUM(mean, p.dim, uintBitsToFloat(x[base + l_]))
      mean /= float(p.dim);
    }
    float ss = 0.0f, c = 0.0f;
    for (uint j = t; j < p.dim; j += WG) {
      const float d = uintBitsToFloat(x[base + j]) - mean;
      kahan_add(ss, c, d * d);
    }
    const vec3 stats = staged_rows_reduce(vec3(ss, w_max, b_max));
    r = norm_rstd(stats.x, p.dim, p.eps);
    const int e = staged_rows_exponent(stats.yz, p.dim);
    const float scale = stage_pow2(e);
    for (uint wd = t; wd < sr.row_words; wd += WG) {  // two columns a word, both copies
      const uint j = 2u * wd;
      const float lo = j < p.dim ? normalised(base, j, mean, r) : 0.0f;
      const float hi = j + 1u < p.dim ? normalised(base, j + 1u, mean, r) : 0.0f;
      if (j < p.dim) y[base + j] = floatBitsToUint(lo);
      if (j + 1u < p.dim) y[base + j + 1u] = floatBitsToUint(hi);
      staged_rows_store(row, wd, lo, hi, scale);
    }
    staged_rows_exponents(row, e);
  }
}
