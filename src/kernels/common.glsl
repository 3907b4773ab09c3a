// Shared declarations of the meganeura kernels; the contract is src/kernels/kernel_abi.hpp.
// Each kernel declares its params block (binding 0) and tensors (bindings 2..) itself, enables
// GL_GOOGLE_include_directive and includes this file first.
//
// Assumptions every kernel makes: the workgroup size (spec constant 0) is a power of two, and
// 256 for MatMul (its tile mapping needs exactly 256 invocations).

#extension GL_EXT_scalar_block_layout : require

layout(local_size_x_id = 0) in;

// Binding 0: the kernel's params block, a uniform buffer in std430 layout (Vulkan 1.2's
// uniformBufferStandardLayout), so that its reads go through the constant cache rather than
// global memory: small kernels wait on them before anything else. On a device without that
// feature the runtime rewrites the block into a storage buffer (spirv.hpp, params_as_storage).
#define PARAMS_BLOCK layout(std430, set = 0, binding = 0) uniform Params

const uint DT_F32 = 0u, DT_I32 = 1u, DT_U32 = 2u;
const uint STATUS_INDEX_OUT_OF_RANGE = 1u, STATUS_SUBGROUP_SIZE = 2u;
const uint WG = gl_WorkGroupSize.x;

// Binding 1: the first failure wins; only its winner fills in the details.
layout(std430, set = 0, binding = 1) buffer StatusBlock { uint code; uint node; int value; uint limit; } status;
void report(uint code, uint node, int value, uint limit) {
  if (atomicCompSwap(status.code, 0u, code) == 0u) {
    status.node = node;
    status.value = value;
    status.limit = limit;
  }
}

#include "math.glsl"

// ---- dtypes: tensors are uint words; these convert a word of `dtype` to and from f32 ----------
float word_to_f32(uint w, uint dtype) {
  if (dtype == DT_I32) return float(int(w));
  if (dtype == DT_U32) return float(w);
  return uintBitsToFloat(w);
}
// f32 -> int truncates toward zero like a C++ cast (out of range is undefined there too).
uint f32_to_word(float v, uint dtype) {
  if (dtype == DT_I32) return uint(int(v));
  if (dtype == DT_U32) return v < 0.0f ? uint(int(v)) : uint(v);
  return floatBitsToUint(v);
}
// f32 bits to bf16 bits, rounded to nearest even; NaN stays a (quiet) NaN, overflow gives inf.
uint f32_to_bf16(uint x) {
  if ((x & 0x7fffffffu) > 0x7f800000u) return (x | 0x00400000u) >> 16;
  return (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
}
// An index word of `dtype` (DT_I32 or DT_U32) checked against [-len, len), negatives wrapped once.
// Returns the wrapped index, or 0xffffffff when out of range.
const uint BAD_INDEX = 0xffffffffu;
uint checked_index(uint w, uint dtype, uint len) {
  if (dtype == DT_U32) return w < len ? w : BAD_INDEX;
  int v = int(w);
  if (v >= 0) return uint(v) < len ? uint(v) : BAD_INDEX;
  return uint(-(v + 1)) < len ? uint(v + int(len)) : BAD_INDEX;  // -(v+1): no overflow at INT_MIN
}

// max/min that propagate NaN like PyTorch (GLSL max()/min() leave NaN handling undefined).
float max_nan(float a, float b) { return (is_nan(a) || is_nan(b)) ? F_NAN : max(a, b); }
float min_nan(float a, float b) { return (is_nan(a) || is_nan(b)) ? F_NAN : min(a, b); }

// ---- strided addressing -----------------------------------------------------------------------
// result = sum_d idx[d] * STRIDE[d], idx = row-major unravel of i over SHAPE[0..rank). The
// outermost index needs no modulo (i < prod(SHAPE)), so rank 1 costs no division.
#define STRIDED_OFFSET(result, i, rank, SHAPE, STRIDE)          \
  {                                                             \
    uint rem_ = (i);                                            \
    result = 0u;                                                \
    for (int d_ = int(rank) - 1; d_ > 0; --d_) {                \
      uint n_ = SHAPE[d_];                                      \
      result += (rem_ % n_) * STRIDE[d_];                       \
      rem_ /= n_;                                               \
    }                                                           \
    if (rank > 0u) result += rem_ * STRIDE[0];                  \
  }

// Kahan-compensated running sum: per-thread partial sums stay close to the double reference.
// An infinite term leaves a NaN compensation; dropping it keeps inf + finite = inf.
void kahan_add(inout float s, inout float c, float x) {
  precise float y = x - c;
  precise float t = s + y;
  precise float nc = (t - s) - y;
  c = is_nan(nc) ? 0.0f : nc;
  s = t;
}

// A norm's 1/sqrt(mean square + eps) from the row's sum of squares (of x, or of x - mean), in
// one place for every kernel that normalises. inversesqrt() may be approximate.
float norm_rstd(float sum_squares, uint dim, float eps) { return 1.0f / sqrt(sum_squares / float(dim) + eps); }

// ---- workgroup reductions (call from uniform control flow; every invocation gets the result) --
// log-sum-exp over a row, given its max m: sum_l exp(x_l - m) = ones + rest, where `ones` counts
// the terms with x_l == m (each exactly 1) and `rest` sums the others (all < 1). Then
// log(sum) = log1p((ones - 1) + rest) keeps full relative precision when one term dominates and
// log(sum) is small, which log(ones + rest) would round away (1e-5 relative at rest ~ 1e-2).
void lse_add(inout float ones, inout float rest, inout float c, float x, float m) {
  if (x == m) ones += 1.0f;
  else kahan_add(rest, c, exp_diff(x, m));
}

#ifdef MN_WORKGROUP_REDUCE
// Workgroup reductions in three barriers rather than a tree's log2(WG) + 1: every invocation
// stores its value, WG_GROUPS invocations each reduce a run of WG / WG_GROUPS, and every
// invocation reads the WG_GROUPS results (the same words: broadcasts). Every invocation gets the
// result; call from uniform control flow.
const uint WG_GROUPS = WG < 16u ? WG : 16u, WG_RUN = WG / WG_GROUPS;
shared float wg_scratch[WG];
shared float wg_runs[WG_GROUPS];
float wg_sum(float v) {
  const uint t = gl_LocalInvocationID.x;
  wg_scratch[t] = v;
  barrier();
  if (t < WG_GROUPS) {
    float s = 0.0f;
    for (uint i = 0u; i < WG_RUN; ++i) s += wg_scratch[t * WG_RUN + i];
    wg_runs[t] = s;
  }
  barrier();
  float r = 0.0f;
  for (uint g = 0u; g < WG_GROUPS; ++g) r += wg_runs[g];
  barrier();  // wg_scratch and wg_runs are free again on return
  return r;
}
float wg_max(float v) {
  const uint t = gl_LocalInvocationID.x;
  wg_scratch[t] = v;
  barrier();
  if (t < WG_GROUPS) {
    float m = wg_scratch[t * WG_RUN];
    for (uint i = 1u; i < WG_RUN; ++i) m = max_nan(m, wg_scratch[t * WG_RUN + i]);
    wg_runs[t] = m;
  }
  barrier();
  float r = wg_runs[0];
  for (uint g = 1u; g < WG_GROUPS; ++g) r = max_nan(r, wg_runs[g]);
  barrier();
  return r;
}

// The rows below are read by the whole workgroup, element l of the row at X[base + l*step]
// (call from uniform control flow; every invocation gets the results).

// Row max m (NaN propagates) and sum_l exp(x_l - m) as ones + rest (see lse_add).
#define ROW_MAX_LSE(m, ones, rest, X, base, step, len)                                      \
  {                                                                                         \
    m = -F_INF;                                                                             \
    for (uint l_ = gl_LocalInvocationID.x; l_ < (len); l_ += WG)                            \
      m = max_nan(m, uintBitsToFloat(X[(base) + l_ * (step)]));                             \
    m = wg_max(m);                                                                          \
    ones = 0.0f;                                                                            \
    rest = 0.0f;                                                                            \
    float c_ = 0.0f;                                                                        \
    for (uint l_ = gl_LocalInvocationID.x; l_ < (len); l_ += WG)                            \
      lse_add(ones, rest, c_, uintBitsToFloat(X[(base) + l_ * (step)]), m);                 \
    ones = wg_sum(ones);                                                                    \
    rest = wg_sum(rest);                                                                    \
  }

// Row sum of EXPR, an expression of the row index l_ (Kahan per invocation, then wg_sum).
#define ROW_SUM(result, len, EXPR)                                                          \
  {                                                                                         \
    float s_ = 0.0f, c_ = 0.0f;                                                             \
    for (uint l_ = gl_LocalInvocationID.x; l_ < (len); l_ += WG) kahan_add(s_, c_, (EXPR)); \
    result = wg_sum(s_);                                                                    \
  }

// rms_norm / layer_norm statistics of a contiguous row X[base .. base+dim): mean (0 for rms)
// and rstd = 1/sqrt(mean((x - mean)^2) + eps). Layer norm is two-pass: no E[x^2] - E[x]^2.
#define NORM_ROW_STATS(mean, rstd, X, base, dim, layer, eps)                                \
  {                                                                                         \
    mean = 0.0f;                                                                            \
    if (layer) {                                                                            \
      ROW_SUM(mean, dim, uintBitsToFloat(X[(base) + l_]))                                   \
      mean /= float(dim);                                                                   \
    }                                                                                       \
    float ss_;                                                                              \
    ROW_SUM(ss_, dim, (uintBitsToFloat(X[(base) + l_]) - mean) * (uintBitsToFloat(X[(base) + l_]) - mean)) \
    rstd = norm_rstd(ss_, dim, eps);                                                        \
  }
#endif
