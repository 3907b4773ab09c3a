// The elementwise ops, shared by elementwise.comp (one op per dispatch, picked by a spec constant)
// and the fused pointwise kernels generated at session build (src/kernels/pointwise_source.cpp),
// so that a fused chain computes every op exactly as the unfused kernel does. Include it after
// common.glsl. The codes mirror EW_* in kernel_abi.hpp.
//
// Every float result is `precise`: in a fused kernel an op must not be contracted with the next
// one (a*b + c into one fma), which would round differently from the unfused kernels that store
// each result. A lone op has nothing to contract with, so elementwise.comp is unaffected.

const uint EW_COPY = 0u, EW_CONVERT = 1u, EW_NEG = 2u, EW_ABS = 3u, EW_EXP = 4u, EW_LOG = 5u, EW_SQRT = 6u,
           EW_RSQRT = 7u, EW_RECIPROCAL = 8u, EW_RELU = 9u, EW_GELU = 10u, EW_GELU_TANH = 11u, EW_SILU = 12u,
           EW_SIGMOID = 13u, EW_TANH = 14u, EW_SIN = 15u, EW_COS = 16u, EW_POW = 17u, EW_ADD = 18u, EW_SUB = 19u,
           EW_MUL = 20u, EW_DIV = 21u, EW_MAX = 22u, EW_MIN = 23u, EW_EQ = 24u, EW_NE = 25u, EW_LT = 26u,
           EW_LE = 27u, EW_GT = 28u, EW_GE = 29u, EW_WHERE = 30u, EW_GELU_GRAD = 31u, EW_GELU_TANH_GRAD = 32u,
           EW_SILU_GRAD = 33u, EW_FILL = 34u, EW_SWIGLU = 35u, EW_ERF = 36u,
           EW_ASSIGN = 37u;

float ew_unary(uint op, float x, float scalar) {
  precise float r = x;
  switch (op) {
    case EW_NEG: r = -x; break;
    case EW_ABS: r = abs(x); break;
    case EW_EXP: r = exp_p(x); break;
    case EW_LOG: r = log_p(x); break;
    case EW_SQRT: r = sqrt(x); break;
    case EW_RSQRT: r = 1.0f / sqrt(x); break;  // inversesqrt() may be approximate
    case EW_RECIPROCAL: r = 1.0f / x; break;
    case EW_RELU: r = x < 0.0f ? 0.0f : x; break;  // NaN passes through
    case EW_GELU: r = gelu_p(x); break;
    case EW_GELU_TANH: r = gelu_tanh_p(x); break;
    case EW_SILU: r = silu_p(x); break;
    case EW_SIGMOID: r = sigmoid_p(x); break;
    case EW_TANH: r = tanh_p(x); break;
    case EW_ERF: r = erf_p(x); break;
    case EW_SIN: r = sin_p(x); break;
    case EW_COS: r = cos_p(x); break;
    case EW_POW: r = pow_p(x, scalar); break;
  }
  return r;
}

float ew_binary(uint op, float a, float b) {
  precise float r = a;
  switch (op) {
    case EW_ADD: r = a + b; break;
    case EW_SUB: r = a - b; break;
    case EW_MUL: r = a * b; break;
    case EW_DIV: r = a / b; break;
    case EW_MAX: r = max_nan(a, b); break;
    case EW_MIN: r = min_nan(a, b); break;
    // a = x, b = dy
    case EW_GELU_GRAD: r = b * gelu_grad_p(a); break;
    case EW_GELU_TANH_GRAD: r = b * gelu_tanh_grad_p(a); break;
    case EW_SILU_GRAD: r = b * silu_grad_p(a); break;
    // a = g, b = u
    case EW_SWIGLU: r = silu_p(a) * b; break;
    case EW_ASSIGN: r = b; break;  // a: the target's old value
  }
  return r;
}

// Ordered compare of two words of `dtype`: -1, 0, 1, or 2 when unordered (a NaN).
int ew_order(uint a, uint b, uint dtype) {
  if (dtype == DT_I32) return int(a) < int(b) ? -1 : (int(a) > int(b) ? 1 : 0);
  if (dtype == DT_U32) return a < b ? -1 : (a > b ? 1 : 0);
  float x = uintBitsToFloat(a), y = uintBitsToFloat(b);
  if (is_nan(x) || is_nan(y)) return 2;
  return x < y ? -1 : (x > y ? 1 : 0);
}
// EW_EQ .. EW_GE on two words of `dtype`; the result is a u32 mask word (0 or 1).
uint ew_compare(uint op, uint a, uint b, uint dtype) {
  int c = ew_order(a, b, dtype);
  bool r;
  switch (op) {
    case EW_EQ: r = c == 0; break;
    case EW_NE: r = c != 0; break;
    case EW_LT: r = c == -1; break;
    case EW_LE: r = c == -1 || c == 0; break;
    case EW_GT: r = c == 1; break;
    default: r = c == 1 || c == 0; break;  // EW_GE
  }
  return r ? 1u : 0u;
}

// WHERE's condition: nonzero selects the first branch (f32 -0.0 is zero; NaN is not).
bool ew_truthy(uint w, uint dtype) { return dtype == DT_F32 ? uintBitsToFloat(w) != 0.0f : w != 0u; }

// CONVERT a word of dtype `from` to dtype `to` (f32 -> int truncates toward zero, like C++).
uint ew_convert(uint w, uint from, uint to) {
  if (from == to) return w;
  if (from != DT_F32 && to != DT_F32) return w;  // i32 <-> u32: same bits, like a C++ cast
  return f32_to_word(word_to_f32(w, from), to);
}
