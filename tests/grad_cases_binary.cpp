// Gradient cases for the elementwise binary ops (broadcasting sums the gradient over broadcast
// axes), where (condition gets none, branches masked), cast (16-bit round trips pass the
// gradient through; f16/bf16 parameters get f32 gradients), a parameter used twice and an unused
// parameter.
#include <cmath>

#include "grad_case.hpp"

namespace mntest {
namespace {

using namespace meganeura;

Tensor param_away(GradBuilder& b, const std::string& name, const Shape& s, double lo, double hi) {
  return b.param_host(name, host_f32(s, b.rng.floats_away(numel(s), lo, hi)));
}

struct BinaryOp {
  Op op;
  Tensor (*fn)(Tensor, Tensor);
};

std::vector<GradCase> binary_cases() {
  const BinaryOp ops[] = {{Op::Add, add},         {Op::Sub, sub},         {Op::Mul, mul},      {Op::Div, div},
                          {Op::Maximum, maximum}, {Op::Minimum, minimum}, {Op::SwiGlu, swiglu}};
  std::vector<GradCase> cases;
  for (const BinaryOp& o : ops) {
    // Divisors stay away from zero.
    auto second = [o](GradBuilder& b, const Shape& s) {
      return o.op == Op::Div ? param_away(b, "b", s, 0.5, 2) : b.param("b", s, -1, 1);
    };
    cases.push_back({o.op, "broadcast_5x1x33_with_7x33", [o, second](GradBuilder& b) {
                       Tensor a = b.param("a", {5, 1, 33}, -1, 1);
                       b.out = o.fn(a, second(b, {7, 33}));  // [5,7,33]
                     }});
    cases.push_back({o.op, "rank4_broadcast_both_sides", [o, second](GradBuilder& b) {
                       Tensor a = b.param("a", {2, 3, 1, 5}, -1, 1);
                       b.out = o.fn(a, second(b, {3, 4, 1}));  // [2,3,4,5]
                     }});
    cases.push_back({o.op, "rank0_second_operand", [o, second](GradBuilder& b) {
                       Tensor a = b.param("a", {7, 9}, -1, 1);
                       b.out = o.fn(a, second(b, {}));
                       // d b sums 63 terms of about 0.3 each, which may cancel: its f32 rounding
                       // is relative to their magnitudes, not to what is left of their sum.
                       b.grad_scale = 0.05;
                     }});
  }
  // swiglu with the gate wider than silu's bend, and only the gate or only the up projection
  // needing a gradient.
  cases.push_back({Op::SwiGlu, "gate_only_wide_33x17", [](GradBuilder& b) {
                     Tensor g = b.param("g", {33, 17}, -6, 6);
                     Tensor u = b.input("u", {33, 17});
                     b.out = swiglu(g, u);
                   }});
  cases.push_back({Op::SwiGlu, "up_only_broadcast_gate", [](GradBuilder& b) {
                     Tensor g = b.input("g", {5, 1, 13});
                     Tensor u = b.param("u", {5, 7, 13}, -1, 1);
                     b.out = swiglu(g, u);
                   }});
  // Ties: maximum/minimum give half the gradient to each side (checked by hand: no finite
  // differences at a kink).
  for (const BinaryOp& o : {ops[4], ops[5]}) {
    cases.push_back({o.op, "ties_half_each", [o](GradBuilder& b) {
                       Tensor a = b.param_host("a", host_f32({5, 7}, b.rng.small_ints(35, 0, 2)));
                       Tensor c = b.param_host("b", host_f32({5, 7}, b.rng.small_ints(35, 0, 2)));
                       b.out = o.fn(a, c);
                       b.fd_check = false;
                       const auto av = decode(b.feeds["a"]), cv = decode(b.feeds["b"]);
                       b.hand_check = [o, av, cv](const std::vector<RefTensor>& g, const RefTensor& cot) {
                         for (size_t i = 0; i < av.size(); ++i) {
                           const bool a_wins = o.op == Op::Maximum ? av[i] > cv[i] : av[i] < cv[i];
                           const double ea = av[i] == cv[i] ? 0.5 * cot.v[i] : (a_wins ? cot.v[i] : 0.0);
                           const double eb = av[i] == cv[i] ? 0.5 * cot.v[i] : (a_wins ? 0.0 : cot.v[i]);
                           EXPECT_EQ(g[0].v[i], ea) << "element " << i;
                           EXPECT_EQ(g[1].v[i], eb) << "element " << i;
                         }
                       };
                     }});
  }
  // A parameter used twice: the gradients add (x*x + x: 2x + 1).
  cases.push_back({Op::Mul, "param_used_twice", [](GradBuilder& b) {
                     Tensor x = b.param("x", {7, 33}, -2, 2);
                     b.out = x * x + x;
                   }});
  // An unused parameter: zero gradient of its shape.
  cases.push_back({Op::Add, "unused_param_gets_zeros", [](GradBuilder& b) {
                     Tensor a = b.param("a", {5, 7}, -1, 1);
                     Tensor c = b.param("c", {7}, -1, 1);
                     Tensor unused = b.param("unused", {3, 11}, -1, 1);
                     b.out = a + c;
                     b.wrt = {a, c, unused};
                   }});
  // Operands that are intermediates: a chain of three binary ops with broadcasting.
  cases.push_back({Op::Sub, "chain_div_sub_mul", [](GradBuilder& b) {
                     Tensor x = b.param("x", {3, 1, 17}, -1, 1);
                     Tensor y = param_away(b, "y", {5, 17}, 0.5, 2);
                     Tensor z = b.param("z", {3, 5, 1}, -1, 1);
                     b.out = (x / y - z) * (x + 0.5f);
                   }});
  return cases;
}

std::vector<GradCase> where_cases() {
  return {
      {Op::Where, "u32_cond_broadcast_three_ways",
       [](GradBuilder& b) {
         Tensor cond = b.input_ints("cond", {5, 1, 7}, 0, 1, u32);
         Tensor a = b.param("a", {4, 7}, -1, 1);
         Tensor c = b.param("b", {5, 4, 1}, -1, 1);
         b.out = where(cond, a, c);  // [5,4,7]
       }},
      {Op::Where, "cond_from_comparison",
       [](GradBuilder& b) {
         Tensor u = b.input("u", {7, 33});
         Tensor a = b.param("a", {7, 33}, -1, 1);
         Tensor c = b.param("b", {33}, -1, 1);
         b.out = where(gt(u, b.g.scalar(0.0f)), a * 2.0f, c);
       }},
      {Op::Where, "f32_cond_same_param_both_branches_rank4",
       [](GradBuilder& b) {
         Tensor cond = b.input_small_ints("cond", {2, 3, 4, 5}, 0, 1);
         Tensor x = b.param("x", {3, 1, 5}, -1, 1);
         b.out = where(cond, x, x * x);
       }},
  };
}

std::vector<GradCase> cast_cases() {
  return {
      // f32 -> f16 -> f32: the gradient passes through both casts. Rounding to f16 is a step
      // function, so the reference is checked by hand: d x = cot * w.
      {Op::Cast, "f32_to_f16_and_back",
       [](GradBuilder& b) {
         Tensor x = b.param("x", {7, 33}, -2, 2);
         Tensor w = b.input("w", {33});
         b.out = cast(cast(x, f16), f32) * w;
         b.fd_check = false;
         const auto wv = decode(b.feeds["w"]);
         b.hand_check = [wv](const std::vector<RefTensor>& g, const RefTensor& cot) {
           for (size_t i = 0; i < cot.v.size(); ++i) EXPECT_EQ(g[0].v[i], cot.v[i] * wv[i % 33]) << "element " << i;
         };
       }},
      {Op::Cast, "f32_to_bf16_and_back_rank4",
       [](GradBuilder& b) {
         Tensor x = b.param("x", {2, 3, 5, 7}, -2, 2);
         b.out = cast(cast(x, bf16), f32) * 3.0f;
         b.fd_check = false;
         b.hand_check = [](const std::vector<RefTensor>& g, const RefTensor& cot) {
           for (size_t i = 0; i < cot.v.size(); ++i) EXPECT_EQ(g[0].v[i], cot.v[i] * 3.0) << "element " << i;
         };
       }},
      // An f16 parameter used by an op that computes in f32 (a cast is inserted): its gradient
      // comes back in f32, shape of the parameter.
      {Op::Cast, "f16_param_in_matmul_grad_is_f32",
       [](GradBuilder& b) {
         Tensor x = b.input("x", {5, 17});
         Tensor w = b.param_host("w", host_f16({17, 9}, b.rng.floats(17 * 9, -1, 1)));
         b.out = matmul(x, w);
       }},
      // A bf16 parameter through reshape (keeps 16-bit storage), then mul (casts to f32).
      {Op::Cast, "bf16_param_reshaped_then_mul",
       [](GradBuilder& b) {
         Tensor x = b.param_host("x", host_bf16({6, 35}, b.rng.floats(210, -2, 2)));
         Tensor s = b.param("s", {7}, -1, 1);
         b.out = reshape(x, {5, 6, 7}) * s;
       }},
      // An f16 output: the cotangent is f32 of the output's shape; checked by hand (rounding).
      {Op::Cast, "f16_output",
       [](GradBuilder& b) {
         Tensor x = b.param("x", {5, 13}, -2, 2);
         Tensor w = b.input("w", {13});
         b.out = cast(x * w, f16);
         b.fd_check = false;
         const auto wv = decode(b.feeds["w"]);
         b.hand_check = [wv](const std::vector<RefTensor>& g, const RefTensor& cot) {
           for (size_t i = 0; i < cot.v.size(); ++i) EXPECT_EQ(g[0].v[i], cot.v[i] * wv[i % 13]) << "element " << i;
         };
       }},
      // An integer input cast to f32 carries no gradient; the parameter beside it does.
      {Op::Cast, "i32_input_to_f32",
       [](GradBuilder& b) {
         Tensor k = b.input_ints("k", {7, 9}, -5, 5);
         Tensor w = b.param("w", {9}, -1, 1);
         b.out = cast(k, f32) * w;
       }},
  };
}

RegisterGrad reg_binary{binary_cases()};
RegisterGrad reg_where{where_cases()};
RegisterGrad reg_cast{cast_cases()};

}  // namespace
}  // namespace mntest
