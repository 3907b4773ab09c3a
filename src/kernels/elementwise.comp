#version 450
// Elementwise: unary/binary/compare/where/convert/copy/fill over a strided, broadcast index space.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 1) const uint OP = 0u;
layout(constant_id = 2) const uint DT_IN = 0u;   // input 0 (compares: both inputs; WHERE: cond)
layout(constant_id = 3) const uint DT_IN1 = 0u;  // carried for the ABI; no op reads it today
layout(constant_id = 4) const uint DT_OUT = 0u;  // CONVERT's target

const uint EW_COPY = 0u, EW_CONVERT = 1u, EW_NEG = 2u, EW_ABS = 3u, EW_EXP = 4u, EW_LOG = 5u, EW_SQRT = 6u,
           EW_RSQRT = 7u, EW_RECIPROCAL = 8u, EW_RELU = 9u, EW_GELU = 10u, EW_GELU_TANH = 11u, EW_SILU = 12u,
           EW_SIGMOID = 13u, EW_TANH = 14u, EW_SIN = 15u, EW_COS = 16u, EW_POW = 17u, EW_ADD = 18u, EW_SUB = 19u,
           EW_MUL = 20u, EW_DIV = 21u, EW_MAX = 22u, EW_MIN = 23u, EW_EQ = 24u, EW_NE = 25u, EW_LT = 26u,
           EW_LE = 27u, EW_GT = 28u, EW_GE = 29u, EW_WHERE = 30u, EW_GELU_GRAD = 31u, EW_GELU_TANH_GRAD = 32u,
           EW_SILU_GRAD = 33u, EW_FILL = 34u, EW_SWIGLU = 35u, EW_ERF = 36u;
const uint ARITY = OP == EW_WHERE ? 3u : (OP == EW_FILL ? 0u : (OP >= EW_ADD && OP != EW_ERF ? 2u : 1u));  // FILL reads nothing
const bool IS_COMPARE = OP >= EW_EQ && OP <= EW_GE;

struct ElementwiseParams {
  uint n, rank, out_offset, in_offset[3];
  float scalar;
  uint pad;
  uint shape[8];
  uint out_stride[8];
  uint in_stride[24];
};
layout(std430, set = 0, binding = 0) readonly buffer Params { ElementwiseParams p; };

// Inputs are always bindings 2..4 (unused ones are bound to input 0) and the output binding 5,
// so one descriptor layout serves every arity and inputs stay readonly for the sync checker.
layout(std430, set = 0, binding = 2) readonly buffer T0 { uint t0[]; };
layout(std430, set = 0, binding = 3) readonly buffer T1 { uint t1[]; };
layout(std430, set = 0, binding = 4) readonly buffer T2 { uint t2[]; };
layout(std430, set = 0, binding = 5) writeonly buffer T3 { uint t3[]; };

float unary(float x) {
  switch (OP) {
    case EW_NEG: return -x;
    case EW_ABS: return abs(x);
    case EW_EXP: return exp_p(x);
    case EW_LOG: return log_p(x);
    case EW_SQRT: return sqrt(x);
    case EW_RSQRT: return 1.0f / sqrt(x);  // inversesqrt() may be approximate
    case EW_RECIPROCAL: return 1.0f / x;
    case EW_RELU: return x < 0.0f ? 0.0f : x;  // NaN passes through
    case EW_GELU: return gelu_p(x);
    case EW_GELU_TANH: return gelu_tanh_p(x);
    case EW_SILU: return silu_p(x);
    case EW_SIGMOID: return sigmoid_p(x);
    case EW_TANH: return tanh_p(x);
    case EW_ERF: return erf_p(x);
    case EW_SIN: return sin_p(x);
    case EW_COS: return cos_p(x);
    case EW_POW: return pow_p(x, p.scalar);
  }
  return x;
}

float binary(float a, float b) {
  switch (OP) {
    case EW_ADD: return a + b;
    case EW_SUB: return a - b;
    case EW_MUL: return a * b;
    case EW_DIV: return a / b;
    case EW_MAX: return max_nan(a, b);
    case EW_MIN: return min_nan(a, b);
    // a = x, b = dy
    case EW_GELU_GRAD: return b * gelu_grad_p(a);
    case EW_GELU_TANH_GRAD: return b * gelu_tanh_grad_p(a);
    case EW_SILU_GRAD: return b * silu_grad_p(a);
    // a = g, b = u
    case EW_SWIGLU: return silu_p(a) * b;
  }
  return a;
}

// Ordered compare of two words of dtype DT_IN: -1, 0, 1, or 2 when unordered (a NaN).
int compare(uint a, uint b) {
  if (DT_IN == DT_I32) return int(a) < int(b) ? -1 : (int(a) > int(b) ? 1 : 0);
  if (DT_IN == DT_U32) return a < b ? -1 : (a > b ? 1 : 0);
  float x = uintBitsToFloat(a), y = uintBitsToFloat(b);
  if (is_nan(x) || is_nan(y)) return 2;
  return x < y ? -1 : (x > y ? 1 : 0);
}
bool compare_op(int c) {
  switch (OP) {
    case EW_EQ: return c == 0;
    case EW_NE: return c != 0;
    case EW_LT: return c == -1;
    case EW_LE: return c == -1 || c == 0;
    case EW_GT: return c == 1;
  }
  return c == 1 || c == 0;  // EW_GE
}

uint convert(uint w) {
  if (DT_IN == DT_OUT) return w;
  if (DT_IN != DT_F32 && DT_OUT != DT_F32) return w;  // i32 <-> u32: same bits, like a C++ cast
  return f32_to_word(word_to_f32(w, DT_IN), DT_OUT);
}

void main() {
  for (uint i = gl_GlobalInvocationID.x; i < p.n; i += gl_NumWorkGroups.x * WG) {
    // One unravel serves the output and every input.
    uint o = p.out_offset, i0 = p.in_offset[0], i1 = p.in_offset[1], i2 = p.in_offset[2];
    uint rem = i;
    for (int d = int(p.rank) - 1; d >= 0; --d) {
      uint n_d = p.shape[d];
      uint c = d > 0 ? rem % n_d : rem;
      rem /= n_d;
      o += c * p.out_stride[d];
      i0 += c * p.in_stride[d];
      if (ARITY > 1u) i1 += c * p.in_stride[8 + d];
      if (ARITY > 2u) i2 += c * p.in_stride[16 + d];
    }
    uint a = ARITY > 0u ? t0[i0] : 0u;
    uint r;
    if (OP == EW_FILL) r = floatBitsToUint(p.scalar);
    else if (OP == EW_COPY) r = a;
    else if (OP == EW_CONVERT) r = convert(a);
    else if (OP == EW_WHERE) {
      bool cond = DT_IN == DT_F32 ? uintBitsToFloat(a) != 0.0f : a != 0u;  // -0.0 is zero; NaN is not
      r = cond ? t1[i1] : t2[i2];
    } else if (IS_COMPARE) r = compare_op(compare(a, t1[i1])) ? 1u : 0u;
    else if (ARITY == 2u) r = floatBitsToUint(binary(uintBitsToFloat(a), uintBitsToFloat(t1[i1])));
    else r = floatBitsToUint(unary(uintBitsToFloat(a)));

    t3[o] = r;
  }
}
