#version 450
// Split-K's second pass for a product whose rows a norm reads next (an o or down projection and
// the rms_norm after it): one workgroup per row adds the partial sums, applies the epilogue and
// stores the row (binding 4), then normalises it (binding 9) -- the norm needs no dispatch of its
// own -- and with STAGE_ROWS (spec 9) stages it for the tensor-core matmul that reads it next
// (binding 10, stage_rows.glsl). Single product, C contiguous [batch * M, N], N <= MAX_DIM (the
// row is kept in shared memory).
#extension GL_GOOGLE_include_directive : require
#define MN_WORKGROUP_REDUCE
#include "common.glsl"
#include "stage_scale.glsl"

struct StagedRows { uint row_words, padded_rows, pad0, pad1; };
#define MATMUL_PARAMS_TAIL StagedRows sr;
#include "matmul_common.glsl"

layout(constant_id = 5) const uint NORM_KIND = 0u;  // NORM_RMS or NORM_LAYER, as norm.comp
layout(constant_id = 6) const uint NORM_HAS_WEIGHT = 0u;
layout(constant_id = 7) const uint NORM_HAS_BIAS = 0u;
layout(constant_id = 8) const float NORM_EPS = 1e-5f;
layout(constant_id = 9) const uint STAGE_ROWS = 0u;
const uint NORM_LAYER = 1u, MAX_DIM = 4096u;

layout(std430, set = 0, binding = 7) readonly buffer NormW { uint norm_w[]; };
layout(std430, set = 0, binding = 8) readonly buffer NormB { uint norm_b[]; };
layout(std430, set = 0, binding = 9) writeonly buffer NormOut { uint norm_y[]; };
#define STAGED_ROWS_BINDING 10
#include "stage_rows.glsl"

shared float row_values[MAX_DIM];
const uint COLS = 4u;  // columns per invocation per pass: their loads are all in flight at once

float normalised(uint j, float mean, float rstd) {
  float y = (row_values[j] - mean) * rstd;
  if (NORM_HAS_WEIGHT != 0u) y *= uintBitsToFloat(norm_w[j]);
  if (NORM_HAS_BIAS != 0u) y += uintBitsToFloat(norm_b[j]);
  return y;
}

void main() {
  const uint t = gl_LocalInvocationID.x, N = p.N[0];
  // STAGE_ROWS: this invocation's share of the norm's weight's and bias's largest magnitudes.
  float w_max = NORM_HAS_WEIGHT != 0u || STAGE_ROWS == 0u ? 0.0f : 1.0f, b_max = 0.0f;
  if (STAGE_ROWS != 0u)
    for (uint j = t; j < N; j += WG) {
      if (NORM_HAS_WEIGHT != 0u) w_max = staged_rows_largest(w_max, uintBitsToFloat(norm_w[j]));
      if (NORM_HAS_BIAS != 0u) b_max = staged_rows_largest(b_max, uintBitsToFloat(norm_b[j]));
    }
  const uint rows = STAGE_ROWS != 0u ? sr.padded_rows : p.batch * p.M;
  for (uint row = gl_WorkGroupID.x; row < rows; row += gl_NumWorkGroups.x) {
    if (row >= p.batch * p.M) {  // STAGE_ROWS only: a padding row of the staged copy
      staged_rows_pad(row, staged_rows_exponent(staged_rows_reduce(vec3(0.0f, w_max, b_max)).yz, N));
      continue;
    }
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
        const float value = epilogue(v[i], row / p.M, row % p.M, j);
        c_data[base + j] = floatBitsToUint(value);
        row_values[j] = value;
        kahan_add(s, c, value);
      }
    }
    const float mean = NORM_KIND == NORM_LAYER ? wg_sum(s) / float(N) : 0.0f;
    s = 0.0f;
    c = 0.0f;
    for (uint j = t; j < N; j += WG) kahan_add(s, c, (row_values[j] - mean) * (row_values[j] - mean));
    if (STAGE_ROWS == 0u) {
      const float rstd = norm_rstd(wg_sum(s), N, NORM_EPS);
      for (uint j = t; j < N; j += WG) norm_y[base + j] = floatBitsToUint(normalised(j, mean, rstd));
      continue;
    }
    // The weight's bound rides the sum of squares' reduction, whose barriers also order the
    // columns that other invocations wrote (a word pairs two).
    const vec3 stats = staged_rows_reduce(vec3(s, w_max, b_max));
    const float rstd = norm_rstd(stats.x, N, NORM_EPS);
    const int e = staged_rows_exponent(stats.yz, N);
    const float scale = stage_pow2(e);
    for (uint wd = t; wd < sr.row_words; wd += WG) {  // two columns a word, both copies
      const uint j = 2u * wd;
      const float lo = j < N ? normalised(j, mean, rstd) : 0.0f, hi = j + 1u < N ? normalised(j + 1u, mean, rstd) : 0.0f;
      if (j < N) norm_y[base + j] = floatBitsToUint(lo);
      if (j + 1u < N) norm_y[base + j + 1u] = floatBitsToUint(hi);
      staged_rows_store(row, wd, lo, hi, scale);
    }
    staged_rows_exponents(row, e);
    barrier();  // the next row's values overwrite row_values
  }
}
