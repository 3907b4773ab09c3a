// A row producer's copy of its rows staged for the tensor-core matmul that reads them next
// (StagedRowsParams, kernel_abi.hpp): StageF16's layout (stage_f16.comp), every block at one
// exponent, so that a workgroup that owns a row can stage it alone. The exponent comes from a
// bound on the norm's output: |x_j - mean| * rstd <= sqrt(dim) (Cauchy-Schwarz), so
// |y_j| <= sqrt(dim) * max |w| + max |b|, which every workgroup computes from the weights. A row's
// values then sit at most a factor sqrt(dim) below the block maximum StageF16 would have chosen
// (values from 2^-29 of the bound keep f16's 11 bits), and none can reach f16's top.
// Include after common.glsl, stage_scale.glsl and a params block with a member
// `StagedRows sr` (struct StagedRows { uint row_words, padded_rows, pad0, pad1; }), with
// STAGED_ROWS_BINDING defined.
layout(std430, set = 0, binding = STAGED_ROWS_BINDING) writeonly buffer StagedOut { uint staged_out[]; };

shared vec3 staged_rows_scratch[WG];

// Over the workgroup: the sum of v.x and the largest v.y and v.z, in one pass of barriers (a
// norm's sum of squares with its weight's and bias's largest magnitudes: the exponent costs the
// row no barrier of its own).
vec3 staged_rows_reduce(vec3 v) {
  const uint t = gl_LocalInvocationID.x;
  staged_rows_scratch[t] = v;
  barrier();
  for (uint half_ = WG / 2u; half_ > 0u; half_ >>= 1u) {
    if (t < half_) {
      const vec3 a = staged_rows_scratch[t], b = staged_rows_scratch[t + half_];
      staged_rows_scratch[t] = vec3(a.x + b.x, max(a.y, b.y), max(a.z, b.z));
    }
    barrier();
  }
  const vec3 r = staged_rows_scratch[0];
  barrier();  // free again on return
  return r;
}

// This invocation's share of the largest finite magnitudes of a norm's weight and bias
// (stage_magnitude's order), for staged_rows_reduce.
float staged_rows_largest(float largest, float v) { return max(largest, uintBitsToFloat(stage_magnitude(v))); }

// The exponent for a norm of `dim` columns whose weight's and bias's largest finite magnitudes
// are largest.x and largest.y (1 and 0 without them).
int staged_rows_exponent(vec2 largest, uint dim) {
  const uint log2_dim = dim <= 1u ? 0u : uint(findMSB(dim - 1u)) + 1u;  // ceil(log2(dim))
  int e = stage_exponent(floatBitsToUint(largest.x), STAGE_EXP_LIMIT) - int((log2_dim + 1u) / 2u);
  if (largest.y > 0.0f) e = min(e, stage_exponent(floatBitsToUint(largest.y), STAGE_EXP_LIMIT)) - 1;  // a sum of two
  return clamp(e, -STAGE_EXP_LIMIT, STAGE_EXP_LIMIT);
}

// Word w of `row`'s staged values: columns 2w and 2w + 1 (zero past the dimension), times 2^e.
// packHalf2x16 rounds as the f16 conversion does and needs no f16 arithmetic on the device.
void staged_rows_store(uint row, uint w, float lo, float hi, float scale) {
  staged_out[row * sr.row_words + w] = packHalf2x16(vec2(lo, hi) * scale);
}

// The exponents of the blocks of 16 rows that start at `row`, written by its workgroup.
void staged_rows_exponents(uint row, int e) {
  if (row % 16u != 0u) return;
  const uint k_blocks = sr.row_words / 16u, at = staged_exponent_word(sr.padded_rows, sr.row_words, row / 16u, 0u);
  for (uint kb = gl_LocalInvocationID.x; kb < k_blocks; kb += WG) staged_out[at + kb] = uint(e);
}

// A padding row past the producer's rows: zeros (the product reads whole tiles).
void staged_rows_pad(uint row, int e) {
  for (uint w = gl_LocalInvocationID.x; w < sr.row_words; w += WG) staged_out[row * sr.row_words + w] = 0u;
  staged_rows_exponents(row, e);
}
