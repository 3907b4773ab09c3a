// Forward cases for the losses: cross_entropy (ignored labels, custom ignore_index, all rows
// ignored), mse, binary cross-entropy (log clamp) and its logits form, at odd sizes.
#include "op_case.hpp"

namespace mntest {
namespace {

using namespace meganeura;

// Labels in [0, C) with about a quarter replaced by `ignore`.
HostTensor labels(Rng& rng, const Shape& s, int64_t C, int32_t ignore, double ignored_fraction) {
  auto v = rng.ints(numel(s), 0, C - 1);
  for (auto& l : v)
    if (rng.uniform(0, 1) < ignored_fraction) l = ignore;
  return host_i32(s, v);
}

std::vector<OpCase> cross_entropy_cases() {
  return {
      {Op::CrossEntropy, "rows7_c33_some_ignored",
       [](CaseBuilder& b) {
         b.output("loss",
                  cross_entropy(b.input("x", {7, 33}, -3, 3), b.input_host("y", labels(b.rng, {7}, 33, -100, 0.3))));
       }},
      {Op::CrossEntropy, "batch_2x3_c67_ignore_index_minus1",
       [](CaseBuilder& b) {
         b.output("loss", cross_entropy(b.input("x", {2, 3, 67}, -3, 3),
                                        b.input_host("y", labels(b.rng, {2, 3}, 67, -1, 0.25)), -1));
       }},
      {Op::CrossEntropy, "ignore_index_is_a_class",
       [](CaseBuilder& b) {
         // ignore_index 0 (a padding id inside [0, C)): rows labelled 0 drop out.
         b.output("loss",
                  cross_entropy(b.input("x", {33, 10}, -3, 3), b.input_host("y", labels(b.rng, {33}, 10, 0, 0.2)), 0));
       }},
      {Op::CrossEntropy, "one_row_c1001_wide",
       [](CaseBuilder& b) {
         b.output("loss", cross_entropy(b.input("x", {1, 1001}, -10, 10),
                                        b.input_host("y", labels(b.rng, {1}, 1001, -100, 0))));
       }},
      {Op::CrossEntropy, "rows257_c5_large_logits",
       [](CaseBuilder& b) {
         b.output("loss", cross_entropy(b.input("x", {257, 5}, 50, 100),
                                        b.input_host("y", labels(b.rng, {257}, 5, -100, 0.1))));
       }},
      {Op::CrossEntropy, "all_rows_ignored_is_nan",
       [](CaseBuilder& b) {
         b.output("loss",
                  cross_entropy(b.input("x", {4, 7}), b.input_host("y", host_i32({4}, {-100, -100, -100, -100}))));
       }},
  };
}

std::vector<OpCase> pair_loss_cases() {
  std::vector<OpCase> cases;
  const Shape shapes[] = {{1}, {1001}, {2, 3, 5, 7}, {33, 67}, {6, 20}};  // 120: the reduction's 16-byte path
  for (const Shape& s : shapes) {
    const std::string tag = shape_str(s);
    cases.push_back({Op::MseLoss, "shape" + tag, [s](CaseBuilder& b) {
                       b.output("loss", mse_loss(b.input("p", s, -3, 3), b.input("t", s, -3, 3)));
                     }});
    cases.push_back({Op::BinaryCrossEntropy, "shape" + tag, [s](CaseBuilder& b) {
                       b.output("loss", binary_cross_entropy(b.input("p", s, 0.01, 0.99), b.input("t", s, 0, 1)));
                     }});
    cases.push_back({Op::BinaryCrossEntropyWithLogits, "shape" + tag, [s](CaseBuilder& b) {
                       b.output("loss",
                                binary_cross_entropy_with_logits(b.input("x", s, -10, 10), b.input("t", s, 0, 1)));
                     }});
  }
  cases.push_back({Op::BinaryCrossEntropy, "log_clamped_at_minus_100", [](CaseBuilder& b) {
                     // p = 0 or 1 exactly: log(0) = -inf is clamped to -100, so the loss stays finite.
                     b.output("loss", binary_cross_entropy(
                                          b.input_host("p", host_f32({6}, {0.0f, 1.0f, 0.0f, 1.0f, 0.5f, 1e-30f})),
                                          b.input_host("t", host_f32({6}, {1.0f, 0.0f, 0.0f, 1.0f, 0.25f, 0.5f}))));
                   }});
  cases.push_back({Op::BinaryCrossEntropy, "log_clamped_at_minus_100_vec4", [](CaseBuilder& b) {  // 8: 16-byte path
                     b.output("loss",
                              binary_cross_entropy(
                                  b.input_host("p", host_f32({8}, {0.0f, 1.0f, 0.0f, 1.0f, 0.5f, 1e-30f, 1.0f, 0.0f})),
                                  b.input_host("t", host_f32({8}, {1.0f, 0.0f, 0.0f, 1.0f, 0.25f, 0.5f, 0.0f, 1.0f}))));
                   }});
  cases.push_back({Op::BinaryCrossEntropyWithLogits, "large_logits_stable", [](CaseBuilder& b) {
                     b.output("loss", binary_cross_entropy_with_logits(
                                          b.input_host("x", host_f32({4}, {100.0f, -100.0f, 30.0f, -90.0f})),
                                          b.input_host("t", host_f32({4}, {0.0f, 1.0f, 0.5f, 0.25f}))));
                   }});
  cases.push_back({Op::MseLoss, "of_intermediates", [](CaseBuilder& b) {
                     Tensor x = b.input("x", {7, 33});
                     b.output("loss", mse_loss(tanh(x), x * 0.5f));
                   }});
  return cases;
}

Register r1{cross_entropy_cases()};
Register r2{pair_loss_cases()};

}  // namespace
}  // namespace mntest
