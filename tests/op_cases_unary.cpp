// Forward cases for the elementwise unary ops: odd sizes, rank 4, and each op's natural range.
#include "op_case.hpp"

namespace mntest {
namespace {

using namespace meganeura;

enum class Range { Signed, Positive, AwayFromZero, Wide };

struct UnaryOp {
  Op op;
  Tensor (*fn)(Tensor);
  Range range;
};

Tensor pow_2_5(Tensor x) { return pow(x, 2.5f); }

Tensor make_input(CaseBuilder& b, const Shape& s, Range r) {
  switch (r) {
    case Range::Signed: return b.input("x", s, -3, 3);
    case Range::Positive: return b.input("x", s, 0.01, 10);
    case Range::AwayFromZero: return b.input_away("x", s, 0.1, 10);
    case Range::Wide: return b.input("x", s, -10, 10);
  }
  return {};
}

std::vector<OpCase> unary_cases() {
  const UnaryOp ops[] = {
      {Op::Neg, neg, Range::Signed},
      {Op::Abs, abs, Range::Signed},
      {Op::Exp, exp, Range::Wide},
      {Op::Log, log, Range::Positive},
      {Op::Sqrt, sqrt, Range::Positive},
      {Op::Rsqrt, rsqrt, Range::Positive},
      {Op::Reciprocal, reciprocal, Range::AwayFromZero},
      {Op::Relu, relu, Range::Signed},
      {Op::Gelu, gelu, Range::Wide},
      {Op::GeluTanh, gelu_tanh, Range::Wide},
      {Op::Silu, silu, Range::Wide},
      {Op::Sigmoid, sigmoid, Range::Wide},
      {Op::Tanh, tanh, Range::Wide},
      {Op::Sin, sin, Range::Wide},
      {Op::Cos, cos, Range::Wide},
      {Op::Erf, erf, Range::Wide},
      {Op::PowScalar, pow_2_5, Range::Positive},
  };
  std::vector<OpCase> cases;
  for (const UnaryOp& u : ops) {
    const struct {
      const char* name;
      Shape shape;
    } shapes[] = {{"n1", {1}}, {"n1001", {1001}}, {"odd2d_33x67", {33, 67}}, {"rank4_2x3x5x7", {2, 3, 5, 7}}};
    for (const auto& sh : shapes) {
      cases.push_back({u.op, sh.name, [u, shape = sh.shape](CaseBuilder& b) {
                         if (numel(shape) == 1) b.scale = 1;  // one element: no mean to scale by
                         b.output("y", u.fn(make_input(b, shape, u.range)));
                       }});
    }
    // The op applied to a computed tensor (x*2 - 1): the kernel reads an intermediate.
    cases.push_back({u.op, "of_intermediate_257", [u](CaseBuilder& b) {
                       Tensor x = make_input(b, {257}, u.range);
                       b.output("y", u.fn(x * 1.5f) - 0.25f);
                     }});
  }
  // pow by other exponents: integer exponents take negative bases (PyTorch: (-2)^3 = -8).
  for (float e : {2.0f, 3.0f, -1.0f}) {
    cases.push_back({Op::PowScalar, "signed_base_exp" + std::to_string(static_cast<int>(e)),
                     [e](CaseBuilder& b) { b.output("y", pow(b.input_away("x", {67}, 0.25, 4), e)); }});
  }
  for (float e : {0.5f, -1.5f, 0.0f}) {
    cases.push_back({Op::PowScalar, "positive_base_exp" + std::to_string(e), [e](CaseBuilder& b) {
                       b.output("y", pow(b.input("x", {7, 33}, 0.1, 5), e));
                     }});
  }
  // Negative zero and exact zero through abs/relu/neg; tanh/sigmoid saturate at +-30.
  cases.push_back({Op::Abs, "special_values", [](CaseBuilder& b) {
                     b.rtol = 0;  // abs is exact
                     b.output("y", abs(b.input_host("x", host_f32({6}, {-0.0f, 0.0f, -1e-30f, 3.5e4f, -3.5f, 7.0f}))));
                   }});
  cases.push_back(
      {Op::Tanh, "saturated_pm30", [](CaseBuilder& b) { b.output("y", tanh(b.input("x", {1001}, -30, 30))); }});
  cases.push_back(
      {Op::Sigmoid, "saturated_pm30", [](CaseBuilder& b) { b.output("y", sigmoid(b.input("x", {1001}, -30, 30))); }});
  return cases;
}

Register reg{unary_cases()};

}  // namespace
}  // namespace mntest
