// Forward cases for the backward ops that autodiff emits (each checked as an op in its own right
// against the reference): activation derivatives (tails, broadcasting), softmax/log-softmax
// backward along any axis, norm backward and weight gradients, fused cross-entropy backward
// (ignored rows, large logits), slice backward (steps, full window, integer dtype).
#include "op_case.hpp"

namespace mntest {
namespace {

using namespace meganeura;

Tensor add_op(Op op, std::vector<Tensor> in, Attrs a = {}) { return in.at(0).graph().add(op, std::move(in), a); }

Attrs with_axis(int64_t axis) {
  Attrs a;
  a.axis = axis;
  return a;
}
Attrs with_eps(double eps) {
  Attrs a;
  a.scalar = eps;
  return a;
}

std::vector<OpCase> activation_cases() {
  std::vector<OpCase> cases;
  for (Op op : {Op::GeluBackward, Op::GeluTanhBackward, Op::SiluBackward}) {
    const struct {
      const char* name;
      Shape x, dy;
    } shapes[] = {
        {"n1", {1}, {1}},
        {"n1001", {1001}, {1001}},
        {"rank4_2x3x5x7", {2, 3, 5, 7}, {2, 3, 5, 7}},
        {"broadcast_dy_33x67_by_67", {33, 67}, {67}},
        {"broadcast_both_7x1x5_3x1", {7, 1, 5}, {3, 1}},
    };
    for (const auto& sh : shapes)
      cases.push_back({op, sh.name, [op, sh](CaseBuilder& b) {
                         if (numel(sh.x) == 1) b.scale = 1;
                         b.output("dx", add_op(op, {b.input("x", sh.x, -10, 10), b.input("dy", sh.dy, -2, 2)}));
                       }});
    // Only the tail: every value is tiny there, so the mean gives no slack (relative accuracy).
    // gelu_tanh's tail is shallower: its inner polynomial in f32 costs |2z| ulp (as in the forward).
    cases.push_back({op, "negative_tail", [op](CaseBuilder& b) {
                       double lo = op == Op::SiluBackward ? -80 : op == Op::GeluBackward ? -12 : -5;
                       b.output("dx", add_op(op, {b.input("x", {257}, lo, -3), b.input("dy", {257}, 0.5, 2)}));
                     }});
    cases.push_back({op, "near_zero", [op](CaseBuilder& b) {
                       b.output("dx", add_op(op, {b.input("x", {67}, -1e-3, 1e-3), b.input("dy", {67}, -2, 2)}));
                     }});
  }
  return cases;
}

// y: probabilities (softmax) or log-probabilities (log_softmax), fed directly or computed.
Tensor row_y(CaseBuilder& b, Op op, const Shape& s) {
  return op == Op::SoftmaxBackward ? b.input("y", s, 0, 1) : b.input("y", s, -6, 0);
}

std::vector<OpCase> softmax_backward_cases() {
  std::vector<OpCase> cases;
  for (Op op : {Op::SoftmaxBackward, Op::LogSoftmaxBackward}) {
    const struct {
      const char* name;
      Shape s;
      int64_t axis;
    } rows[] = {
        {"last_axis_7x33", {7, 33}, -1}, {"rank4_axis1_2x3x5x7", {2, 3, 5, 7}, 1},
        {"one_row_1001", {1001}, 0},     {"long_middle_axis_5x257x3", {5, 257, 3}, 1},
        {"axis0_67x2", {67, 2}, 0},
    };
    for (const auto& r : rows)
      cases.push_back({op, r.name, [op, r](CaseBuilder& b) {
                         b.output("dx", add_op(op, {row_y(b, op, r.s), b.input("dy", r.s, -2, 2)}, with_axis(r.axis)));
                       }});
    // The real chain: y from the forward op on the device.
    cases.push_back({op, "of_forward_output_9x65", [op](CaseBuilder& b) {
                       Tensor x = b.input("x", {9, 65}, -4, 4);
                       Tensor y = op == Op::SoftmaxBackward ? softmax(x, -1) : log_softmax(x, -1);
                       b.output("dx", add_op(op, {y, b.input("dy", {9, 65}, -2, 2)}, with_axis(-1)));
                     }});
  }
  return cases;
}

std::vector<OpCase> norm_backward_cases() {
  std::vector<OpCase> cases;
  for (Op op : {Op::RmsNormBackward, Op::LayerNormBackward}) {
    // rtol: rows of 5 random values include some that nearly agree, whose large 1/sigma multiplies
    // f32's rounding (seed 17599287343239765705: one of 1285 layer-norm values 3.7e-5 off, 2.9x
    // the default 1e-5 of the tensor's mean magnitude).
    const struct {
      const char* name;
      Shape s;
      bool weight;
      double eps, rtol;
    } rows[] = {
        {"7x33_weight", {7, 33}, true, 1e-5, 1e-5},
        {"rank4_2x3x5x67_no_weight", {2, 3, 5, 67}, false, 1e-6, 1e-5},
        {"3x1001_weight", {3, 1001}, true, 1e-5, 1e-5},
        {"257x5_weight", {257, 5}, true, 1e-6, 1e-4},
    };
    for (const auto& r : rows)
      cases.push_back({op, r.name, [op, r](CaseBuilder& b) {
                         b.rtol = r.rtol;
                         std::vector<Tensor> in = {b.input("x", r.s, -3, 3), b.input("dy", r.s, -2, 2)};
                         if (r.weight) in.push_back(b.param("w", {r.s.back()}, 0.5, 1.5));
                         b.output("dx", add_op(op, in, with_eps(r.eps)));
                       }});
  }
  for (Op op : {Op::RmsNormWeightGrad, Op::LayerNormWeightGrad}) {
    const struct {
      const char* name;
      Shape s;
    } rows[] = {
        {"7x33", {7, 33}},
        {"rank4_2x3x5x67", {2, 3, 5, 67}},
        {"many_rows_300x5", {300, 5}},
        {"one_row_1x1001", {1, 1001}},
    };
    for (const auto& r : rows)
      cases.push_back(
          {op, r.name, [op, r](CaseBuilder& b) {
             b.output("dw", add_op(op, {b.input("x", r.s, -3, 3), b.input("dy", r.s, -2, 2)}, with_eps(1e-5)));
           }});
  }
  return cases;
}

// Labels in [0, C) with about `ignored_fraction` of them replaced by `ignore`.
HostTensor labels(Rng& rng, const Shape& s, int64_t C, int32_t ignore, double ignored_fraction) {
  auto v = rng.ints(numel(s), 0, C - 1);
  for (auto& l : v)
    if (rng.uniform(0, 1) < ignored_fraction) l = ignore;
  return host_i32(s, v);
}

std::vector<OpCase> cross_entropy_backward_cases() {
  struct Row {
    const char* name;
    Shape s;
    double lo, hi;
    int32_t ignore;
    double frac;
  };
  const Row rows[] = {
      {"rows7_c33_some_ignored", {7, 33}, -3, 3, -100, 0.3},
      {"batch_2x3_c67_ignore_minus1", {2, 3, 67}, -3, 3, -1, 0.25},
      {"one_row_c1001", {1, 1001}, -10, 10, -100, 0},
      {"rows257_c5_large_logits", {257, 5}, 50, 100, -100, 0.1},
      {"all_rows_ignored_zeros", {4, 7}, -1, 1, -100, 1},
      // At most 1/16 as many labels as a row's logits: the pass counts the labels itself.
      {"rows9_c300_counted_in_the_pass", {9, 300}, -3, 3, -100, 0.4},
      {"batch_2x5_c257_counted_in_the_pass", {2, 5, 257}, -4, 4, -1, 0.3},
      {"all_ignored_counted_in_the_pass", {3, 64}, -1, 1, -100, 1},
  };
  std::vector<OpCase> cases;
  for (const Row& r : rows)
    cases.push_back({Op::CrossEntropyBackward, r.name, [r](CaseBuilder& b) {
                       Shape lab(r.s.begin(), r.s.end() - 1);
                       Attrs a;
                       a.ignore_index = r.ignore;
                       b.output("dx", add_op(Op::CrossEntropyBackward,
                                             {b.input("x", r.s, r.lo, r.hi),
                                              b.input_host("y", labels(b.rng, lab, r.s.back(), r.ignore, r.frac)),
                                              b.input("dloss", {}, 0.5, 2)},
                                             a));
                     }});
  // A confident row: p(label) ~ 1 - 1e-6, the gradient at the label is -(1 - p), not 0.
  cases.push_back({Op::CrossEntropyBackward, "confident_label", [](CaseBuilder& b) {
                     b.output("dx",
                              add_op(Op::CrossEntropyBackward,
                                     {b.input_host("x", host_f32({2, 3}, {20.0f, 5.0f, 6.0f, -3.0f, 1.0f, 16.0f})),
                                      b.input_host("y", host_i32({2}, {0, 2})), b.input("dloss", {}, 0.5, 2)}));
                   }});
  return cases;
}

Attrs slice_attrs(int64_t axis, int64_t start, int64_t end, int64_t step, int64_t count) {
  Attrs a;
  a.axis = axis;
  a.start = start;
  a.end = end;
  a.step = step;
  a.count = count;
  return a;
}

std::vector<OpCase> slice_backward_cases() {
  auto len = [](int64_t start, int64_t end, int64_t step) { return (end - start + step - 1) / step; };
  return {
      {Op::SliceBackward, "7x33_axis1_step4",
       [len](CaseBuilder& b) {
         b.rtol = 0;
         b.output("dx", add_op(Op::SliceBackward, {b.input("dy", {7, len(3, 30, 4)})}, slice_attrs(1, 3, 30, 4, 33)));
       }},
      {Op::SliceBackward, "rank4_axis2",
       [len](CaseBuilder& b) {
         b.rtol = 0;
         b.output("dx",
                  add_op(Op::SliceBackward, {b.input("dy", {2, 3, len(1, 4, 1), 7})}, slice_attrs(2, 1, 4, 1, 5)));
       }},
      {Op::SliceBackward, "full_window_no_fill",
       [](CaseBuilder& b) {
         b.rtol = 0;
         b.output("dx", add_op(Op::SliceBackward, {b.input("dy", {5, 7})}, slice_attrs(0, 0, 5, 1, 5)));
       }},
      {Op::SliceBackward, "axis0_step3_negative_axis_i32",
       [len](CaseBuilder& b) {
         b.rtol = 0;
         b.output("dx", add_op(Op::SliceBackward, {b.input_ints("dy", {len(2, 67, 3), 3}, -50, 50)},
                               slice_attrs(-2, 2, 67, 3, 67)));
       }},
      {Op::SliceBackward, "of_intermediate_then_added",
       [len](CaseBuilder& b) {
         Tensor dy = b.input("dy", {len(0, 1001, 2)}) * 2.0f;
         b.output("dx", add_op(Op::SliceBackward, {dy}, slice_attrs(0, 0, 1001, 2, 1001)) + 1.0f);
       }},
  };
}

Register r1{activation_cases()};
Register r2{softmax_backward_cases()};
Register r3{norm_backward_cases()};
Register r4{cross_entropy_backward_cases()};
Register r5{slice_backward_cases()};

}  // namespace
}  // namespace mntest
