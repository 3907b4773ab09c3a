// Forward cases for reductions (sum, mean, max, argmax), softmax/log_softmax and the norms:
// single, several and all axes, keepdim, first/middle/last axis, odd row lengths.
#include "op_case.hpp"

namespace mntest {
namespace {

using namespace meganeura;

using ReduceFn = Tensor (*)(Tensor, std::vector<int64_t>, bool);

std::vector<OpCase> reduce_cases() {
  const struct {
    Op op;
    ReduceFn fn;
  } ops[] = {{Op::Sum, sum}, {Op::Mean, mean}, {Op::Max, max}};
  std::vector<OpCase> cases;
  for (const auto& o : ops) {
    auto fn = o.fn;
    const bool is_max = o.op == Op::Max;
    // Values in [-1, 2): mostly positive, so sums of many terms do not cancel to near zero.
    cases.push_back({o.op, "middle_axis_7x33x5", [fn](CaseBuilder& b) {
                       b.output("y", fn(b.input("x", {7, 33, 5}, -1, 2), {1}, false));
                     }});
    cases.push_back({o.op, "first_axis_1001x3", [fn](CaseBuilder& b) {
                       b.output("y", fn(b.input("x", {1001, 3}, -1, 2), {0}, false));
                     }});
    cases.push_back({o.op, "last_axis_keepdim_33x67", [fn](CaseBuilder& b) {
                       b.output("y", fn(b.input("x", {33, 67}, -1, 2), {-1}, true));
                     }});
    cases.push_back({o.op, "axes_0_2_rank4", [fn](CaseBuilder& b) {
                       b.output("y", fn(b.input("x", {2, 3, 5, 7}, -1, 2), {2, 0}, false));
                     }});
    cases.push_back({o.op, "axes_1_3_keepdim_rank4", [fn](CaseBuilder& b) {
                       b.output("y", fn(b.input("x", {3, 17, 2, 9}, -1, 2), {-1, 1}, true));
                     }});
    // Rows of whole 16-byte words: the kernel's vector path (a row of logits).
    cases.push_back({o.op, "last_axis_rows_of_4100_vec4", [fn](CaseBuilder& b) {
                       b.output("y", fn(b.input("x", {3, 4100}, -1, 2), {-1}, false));
                     }});
    // Rows of many words: the vector path's four loads at a time, and its remainder.
    cases.push_back({o.op, "last_axis_rows_of_12300_vec4", [fn](CaseBuilder& b) {
                       b.output("y", fn(b.input("x", {2, 12300}, -1, 2), {-1}, false));
                     }});
    // Of |x| (with the optimizer on, one reduction mapping abs; values mostly negative).
    cases.push_back({o.op, "of_abs_rows_of_4100_vec4", [fn](CaseBuilder& b) {
                       b.output("y", fn(abs(b.input("x", {3, 4100}, -2, 1)), {-1}, false));
                     }});
    cases.push_back({o.op, "of_abs_middle_axis_7x33x5", [fn](CaseBuilder& b) {
                       b.output("y", fn(abs(b.input("x", {7, 33, 5}, -2, 1)), {1}, false));
                     }});
    cases.push_back({o.op, "all_axes_rank4_vec4", [fn](CaseBuilder& b) {
                       b.output("y", fn(b.input("x", {2, 3, 4, 44}, -1, 2), {}, false));
                     }});
    cases.push_back(
        {o.op, "all_axes_1001", [fn](CaseBuilder& b) { b.output("y", fn(b.input("x", {1001}, -1, 2), {}, false)); }});
    cases.push_back({o.op, "all_axes_keepdim_rank4_large", [fn](CaseBuilder& b) {
                       b.output("y", fn(b.input("x", {3, 5, 67, 33}, -1, 2), {}, true));
                     }});
    cases.push_back({o.op, "one_element", [fn](CaseBuilder& b) {
                       b.output("y", fn(b.input("x", {1, 1}, -1, 2), {0, 1}, false));
                     }});
    if (is_max)
      cases.push_back({o.op, "negative_values_only", [fn](CaseBuilder& b) {
                         b.output("y", fn(b.input("x", {5, 257}, -9, -1), {1}, false));
                       }});
  }
  // argmax: ties resolve to the first index; first, middle and last axis.
  cases.push_back({Op::ArgMax, "ties_last_axis_33x67", [](CaseBuilder& b) {
                     b.output("i", argmax(b.input_small_ints("x", {33, 67}, -3, 3), -1));
                   }});
  cases.push_back({Op::ArgMax, "ties_first_axis_keepdim", [](CaseBuilder& b) {
                     b.output("i", argmax(b.input_small_ints("x", {257, 3}, -5, 5), 0, true));
                   }});
  cases.push_back({Op::ArgMax, "middle_axis_rank4", [](CaseBuilder& b) {
                     b.output("i", argmax(b.input("x", {2, 3, 5, 7}), 2));
                   }});
  cases.push_back({Op::ArgMax, "negative_values_1001", [](CaseBuilder& b) {
                     b.output("i", argmax(b.input("x", {1, 1001}, -10, -1), 1));
                   }});
  return cases;
}

using RowFn = Tensor (*)(Tensor, int64_t);

std::vector<OpCase> softmax_cases() {
  std::vector<OpCase> cases;
  const struct {
    Op op;
    RowFn fn;
  } ops[] = {{Op::Softmax, softmax}, {Op::LogSoftmax, log_softmax}};
  for (const auto& o : ops) {
    auto fn = o.fn;
    cases.push_back({o.op, "last_axis_33x67", [fn](CaseBuilder& b) {
                       b.output("y", fn(b.input("x", {33, 67}, -3, 3), -1));
                     }});
    cases.push_back({o.op, "first_axis_67x5", [fn](CaseBuilder& b) {
                       b.output("y", fn(b.input("x", {67, 5}, -3, 3), 0));
                     }});
    cases.push_back({o.op, "middle_axis_rank4", [fn](CaseBuilder& b) {
                       b.output("y", fn(b.input("x", {2, 7, 3, 5}, -3, 3), 1));
                     }});
    cases.push_back({o.op, "long_row_1001_wide", [fn](CaseBuilder& b) {
                       b.output("y", fn(b.input("x", {3, 1001}, -10, 10), 1));
                     }});
    cases.push_back({o.op, "large_logits_stable", [fn](CaseBuilder& b) {
                       // exp(100) overflows f32: only a max-subtracting kernel gets this right.
                       b.output("y", fn(b.input("x", {7, 257}, 50, 100), -1));
                     }});
    cases.push_back({o.op, "row_of_one", [fn](CaseBuilder& b) { b.output("y", fn(b.input("x", {5, 1}), -1)); }});
  }
  return cases;
}

std::vector<OpCase> norm_cases() {
  std::vector<OpCase> cases;
  cases.push_back({Op::RmsNorm, "weight_7x33", [](CaseBuilder& b) {
                     b.output("y", rms_norm(b.input("x", {7, 33}, -2, 2), b.param("w", {33}, 0.5, 1.5)));
                   }});
  cases.push_back({Op::RmsNorm, "no_weight_rank4", [](CaseBuilder& b) {
                     b.output("y", rms_norm(b.input("x", {2, 3, 5, 67}, -2, 2)));
                   }});
  cases.push_back({Op::RmsNorm, "eps_1e-2_long_row_1001", [](CaseBuilder& b) {
                     b.output("y", rms_norm(b.input("x", {3, 1001}, -0.2, 0.2), b.param("w", {1001}), 1e-2f));
                   }});
  cases.push_back({Op::RmsNorm, "rank1_257",
                   [](CaseBuilder& b) { b.output("y", rms_norm(b.input("x", {257}, -2, 2), b.param("w", {257}))); }});
  cases.push_back(
      {Op::LayerNorm, "weight_bias_7x33_offset_mean", [](CaseBuilder& b) {
         // A mean far from 0 makes E[x^2]-E[x]^2 lose digits; a two-pass variance does not.
         b.output("y", layer_norm(b.input("x", {7, 33}, 3, 5), b.param("w", {33}, 0.5, 1.5), b.param("b", {33})));
       }});
  cases.push_back({Op::LayerNorm, "no_affine_rank4", [](CaseBuilder& b) {
                     b.output("y", layer_norm(b.input("x", {2, 3, 5, 67}, -2, 2)));
                   }});
  cases.push_back({Op::LayerNorm, "weight_only_1001_eps", [](CaseBuilder& b) {
                     b.output("y", layer_norm(b.input("x", {2, 1001}, -1, 1), b.param("w", {1001}), {}, 1e-3f));
                   }});
  cases.push_back({Op::LayerNorm, "row_of_one", [](CaseBuilder& b) {
                     b.output("y", layer_norm(b.input("x", {5, 1}), b.param("w", {1}), b.param("b", {1})));
                   }});
  return cases;
}

Register reg_reduce{reduce_cases()};
Register reg_softmax{softmax_cases()};
Register reg_norm{norm_cases()};

}  // namespace
}  // namespace mntest
