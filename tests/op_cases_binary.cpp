// Forward cases for elementwise binary ops, comparisons and where: same shapes of odd sizes,
// NumPy broadcasting, rank-0 operands, i32 comparisons.
#include "op_case.hpp"

namespace mntest {
namespace {

using namespace meganeura;

struct BinaryOp {
  Op op;
  Tensor (*fn)(Tensor, Tensor);
};

Tensor add_fn(Tensor a, Tensor b) { return add(a, b); }
Tensor sub_fn(Tensor a, Tensor b) { return sub(a, b); }
Tensor mul_fn(Tensor a, Tensor b) { return mul(a, b); }
Tensor div_fn(Tensor a, Tensor b) { return div(a, b); }

// The right operand of div stays away from zero.
Tensor rhs(CaseBuilder& b, Op op, const std::string& name, const Shape& s) {
  return op == Op::Div ? b.input_away(name, s, 0.25, 4) : b.input(name, s, -4, 4);
}

std::vector<OpCase> binary_cases() {
  const BinaryOp ops[] = {{Op::Add, add_fn},      {Op::Sub, sub_fn},      {Op::Mul, mul_fn},   {Op::Div, div_fn},
                          {Op::Maximum, maximum}, {Op::Minimum, minimum}, {Op::SwiGlu, swiglu}};
  std::vector<OpCase> cases;
  for (const BinaryOp& o : ops) {
    cases.push_back({o.op, "same_shape_1001", [o](CaseBuilder& b) {
                       b.output("y", o.fn(b.input("a", {1001}, -4, 4), rhs(b, o.op, "b", {1001})));
                     }});
    cases.push_back({o.op, "broadcast_2x1x5x7_3x1x7", [o](CaseBuilder& b) {
                       b.output("y", o.fn(b.input("a", {2, 1, 5, 7}, -4, 4), rhs(b, o.op, "b", {3, 1, 7})));
                     }});
    cases.push_back({o.op, "broadcast_lhs_257x1_1x129", [o](CaseBuilder& b) {
                       b.output("y", o.fn(b.input("a", {1, 129}, -4, 4), rhs(b, o.op, "b", {257, 1})));
                     }});
    cases.push_back({o.op, "rank0_rhs_33x67", [o](CaseBuilder& b) {
                       b.output("y", o.fn(b.input("a", {33, 67}, -4, 4), rhs(b, o.op, "b", {})));
                     }});
    cases.push_back({o.op, "rank0_lhs_const_7",
                     [o](CaseBuilder& b) { b.output("y", o.fn(b.g.scalar(1.75f), rhs(b, o.op, "b", {7}))); }});
    cases.push_back({o.op, "one_element_1",
                     [o](CaseBuilder& b) { b.output("y", o.fn(b.input("a", {1}, -4, 4), rhs(b, o.op, "b", {1}))); }});
  }
  // maximum/minimum on ties and on operands where both sides win somewhere.
  cases.push_back({Op::Maximum, "ties_small_ints", [](CaseBuilder& b) {
                     b.output("y", maximum(b.input_small_ints("a", {67}, -2, 2), b.input_small_ints("b", {67}, -2, 2)));
                   }});
  // swiglu over silu's wide range (saturated gate on both sides), rank 4 with broadcasting.
  cases.push_back({Op::SwiGlu, "wide_gate_rank4_2x3x5x7_3x1x7", [](CaseBuilder& b) {
                     b.output("y", swiglu(b.input("g", {2, 3, 5, 7}, -30, 30), b.input("u", {3, 1, 7}, -4, 4)));
                   }});
  // The scalar operators of ops.hpp build the same nodes.
  cases.push_back({Op::Sub, "operators_float", [](CaseBuilder& b) {
                     Tensor x = b.input("x", {7, 33});
                     b.output("y", (2.0f - x) * 3.0f / 1.5f + (x - 0.5f) + (x / 4.0f) + -x + 1.0f / (x + 3.0f));
                   }});
  return cases;
}

struct CompareOp {
  Op op;
  Tensor (*fn)(Tensor, Tensor);
};

std::vector<OpCase> compare_cases() {
  const CompareOp ops[] = {{Op::Equal, eq},     {Op::NotEqual, ne}, {Op::Less, lt},
                           {Op::LessEqual, le}, {Op::Greater, gt},  {Op::GreaterEqual, ge}};
  std::vector<OpCase> cases;
  for (const CompareOp& o : ops) {
    cases.push_back({o.op, "f32_ties_1001", [o](CaseBuilder& b) {
                       b.output("m",
                                o.fn(b.input_small_ints("a", {1001}, -2, 2), b.input_small_ints("b", {1001}, -2, 2)));
                     }});
    cases.push_back(
        {o.op, "f32_broadcast_2x1x5x7_3x1x7", [o](CaseBuilder& b) {
           b.output("m", o.fn(b.input_small_ints("a", {2, 1, 5, 7}, -2, 2), b.input_small_ints("b", {3, 1, 7}, -2, 2)));
         }});
    cases.push_back({o.op, "i32_257", [o](CaseBuilder& b) {
                       b.output("m", o.fn(b.input_ints("a", {257}, -3, 3), b.input_ints("b", {257}, -3, 3)));
                     }});
    cases.push_back({o.op, "f32_vs_scalar_33", [o](CaseBuilder& b) {
                       b.output("m", o.fn(b.input_small_ints("a", {33}, -2, 2), b.g.scalar(0.0f)));
                     }});
    cases.push_back({o.op, "f32_random_fraction_rank4", [o](CaseBuilder& b) {
                       b.output("m", o.fn(b.input("a", {2, 3, 5, 7}), b.input("b", {2, 3, 5, 7})));
                     }});
  }
  return cases;
}

std::vector<OpCase> where_cases() {
  std::vector<OpCase> cases;
  cases.push_back({Op::Where, "u32_mask_from_compare_broadcast", [](CaseBuilder& b) {
                     Tensor c = gt(b.input("c", {5, 1}), b.g.scalar(0.0f));  // [5,1] u32
                     b.output("y", where(c, b.input("a", {5, 7}), b.input("b", {7})));
                   }});
  cases.push_back({Op::Where, "u32_input_cond_rank4", [](CaseBuilder& b) {
                     Tensor c = b.input_ints("c", {2, 1, 5, 1}, 0, 1, u32);
                     b.output("y", where(c, b.input("a", {2, 3, 5, 7}), b.input("b", {3, 1, 7})));
                   }});
  cases.push_back({Op::Where, "i32_cond_1001", [](CaseBuilder& b) {
                     Tensor c = b.input_ints("c", {1001}, -2, 2, i32);
                     b.output("y", where(c, b.input("a", {1001}), b.input("b", {1001})));
                   }});
  cases.push_back({Op::Where, "f32_cond_with_neg_zero", [](CaseBuilder& b) {
                     b.rtol = 0;  // a pure select
                     Tensor c = b.input_host("c", host_f32({7}, {0.0f, -0.0f, 1.0f, -2.5f, 0.0f, 1e-20f, NAN}));
                     b.output("y", where(c, b.input("a", {7}), b.input("b", {7})));
                   }});
  cases.push_back({Op::Where, "scalar_branches_33x67", [](CaseBuilder& b) {
                     Tensor x = b.input("x", {33, 67});
                     b.output("y", where(lt(x, b.g.scalar(0.0f)), b.g.scalar(-1.0f), x));
                   }});
  cases.push_back({Op::Where, "i32_values", [](CaseBuilder& b) {
                     Tensor c = b.input_ints("c", {67}, 0, 1, u32);
                     b.output("y", where(c, b.input_ints("a", {67}, -100, 100), b.input_ints("b", {1}, -100, 100)));
                   }});
  return cases;
}

Register reg_binary{binary_cases()};
Register reg_compare{compare_cases()};
Register reg_where{where_cases()};

}  // namespace
}  // namespace mntest
