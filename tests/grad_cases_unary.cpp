// Gradient cases for the elementwise unary ops: each op on an odd 2-d parameter, and on a rank-4
// parameter scaled by a broadcast parameter (the gradient flows through mul to both). Inputs stay
// inside the op's domain and away from kinks (relu/abs: |x| >= 0.01).
#include "grad_case.hpp"

namespace mntest {
namespace {

using namespace meganeura;

enum class Range { Signed2, Signed3, Signed4, Positive, Away };

Tensor make_param(GradBuilder& b, const std::string& name, const Shape& s, Range r) {
  const int64_t n = numel(s);
  switch (r) {
    case Range::Signed2: return b.param(name, s, -2, 2);
    case Range::Signed3: return b.param(name, s, -3, 3);
    case Range::Signed4: return b.param(name, s, -4, 4);
    case Range::Positive: return b.param(name, s, 0.2, 3);
    case Range::Away: return b.param_host(name, host_f32(s, b.rng.floats_away(n, 0.01, 2)));
  }
  return {};
}

struct UnaryOp {
  Op op;
  Tensor (*fn)(Tensor);
  Range range;
};

Tensor pow_2_5(Tensor x) { return pow(x, 2.5f); }

std::vector<GradCase> unary_cases() {
  const UnaryOp ops[] = {
      {Op::Neg, neg, Range::Signed2},
      {Op::Abs, abs, Range::Away},
      {Op::Exp, exp, Range::Signed2},
      {Op::Log, log, Range::Positive},
      {Op::Sqrt, sqrt, Range::Positive},
      {Op::Rsqrt, rsqrt, Range::Positive},
      {Op::Reciprocal, reciprocal, Range::Away},
      {Op::Relu, relu, Range::Away},
      {Op::Gelu, gelu, Range::Signed3},
      {Op::GeluTanh, gelu_tanh, Range::Signed3},
      {Op::Silu, silu, Range::Signed4},
      {Op::Sigmoid, sigmoid, Range::Signed4},
      {Op::Tanh, tanh, Range::Signed2},
      {Op::Sin, sin, Range::Signed3},
      {Op::Cos, cos, Range::Signed3},
      {Op::PowScalar, pow_2_5, Range::Positive},
      {Op::Erf, erf, Range::Signed2},
  };
  std::vector<GradCase> cases;
  for (const UnaryOp& u : ops) {
    cases.push_back({u.op, "param_7x33", [u](GradBuilder& b) { b.out = u.fn(make_param(b, "x", {7, 33}, u.range)); }});
    // Reciprocal and abs/relu keep |x * s| >= 0.005 with s in [0.5, 1.5].
    cases.push_back({u.op, "rank4_scaled_by_broadcast_param", [u](GradBuilder& b) {
                       Tensor x = make_param(b, "x", {2, 3, 5, 7}, u.range);
                       Tensor s = b.param("s", {5, 1}, 0.5, 1.5);
                       b.out = u.fn(x * s);
                     }});
  }
  // pow by other exponents: integer exponents take negative bases.
  cases.push_back({Op::PowScalar, "signed_base_exp3", [](GradBuilder& b) {
                     b.out = pow(b.param_host("x", host_f32({67}, b.rng.floats_away(67, 0.25, 2))), 3.0f);
                   }});
  cases.push_back({Op::PowScalar, "positive_base_exp_minus1_5", [](GradBuilder& b) {
                     b.out = pow(b.param("x", {5, 13}, 0.3, 3), -1.5f);
                   }});
  cases.push_back(
      {Op::PowScalar, "exp2_signed_257", [](GradBuilder& b) { b.out = pow(b.param("x", {257}, -2, 2), 2.0f); }});
  // A chain of unary ops: exp(-sqrt(x)) * sin(x).
  cases.push_back({Op::Sqrt, "chain_exp_neg_sqrt_times_sin", [](GradBuilder& b) {
                     Tensor x = b.param("x", {9, 17}, 0.2, 3);
                     b.out = exp(neg(sqrt(x))) * sin(x);
                   }});
  return cases;
}

RegisterGrad reg{unary_cases()};

}  // namespace
}  // namespace mntest
