// Gradient cases for the losses (rank-0 outputs: the cotangent is a rank-0 input).
// cross_entropy: d logits only, mean over non-ignored rows; mse/bce/bce_with_logits w.r.t.
// prediction and target.
#include "grad_case.hpp"

namespace mntest {
namespace {

using namespace meganeura;

std::vector<GradCase> loss_cases() {
  return {
      {Op::CrossEntropy, "7x11",
       [](GradBuilder& b) {
         Tensor labels = b.input_ints("labels", {7}, 0, 10);
         b.out = cross_entropy(b.param("logits", {7, 11}, -3, 3), labels);
       }},
      {Op::CrossEntropy, "ignore_index_rows",
       [](GradBuilder& b) {
         std::vector<int32_t> lv = b.rng.ints(9, 0, 12);
         lv[1] = lv[4] = lv[8] = -100;
         Tensor labels = b.input_host("labels", host_i32({9}, lv));
         Tensor logits = b.param("logits", {9, 13}, -3, 3);
         b.out = cross_entropy(logits, labels);
         b.wrt = {logits, labels};  // integer labels: no gradient (zeros)
       }},
      {Op::CrossEntropy, "rank3_custom_ignore",
       [](GradBuilder& b) {
         std::vector<int32_t> lv = b.rng.ints(10, 0, 66);
         lv[3] = 5;
         lv[7] = 5;  // ignore_index 5: these rows do not count (others may hit 5 too)
         Tensor labels = b.input_host("labels", host_i32({2, 5}, lv));
         b.out = cross_entropy(b.param("logits", {2, 5, 67}, -3, 3), labels, 5);
       }},
      {Op::CrossEntropy, "chain_matmul_plus_bias",
       [](GradBuilder& b) {
         Tensor x = b.input("x", {6, 19});
         Tensor labels = b.input_ints("labels", {6}, 0, 12);
         b.out = cross_entropy(matmul(x, b.param("w", {19, 13})) + b.param("bias", {13}), labels);
       }},
      {Op::CrossEntropy, "loss_api_gradients_of_mlp",
       [](GradBuilder& b) {
         // The training entry point: gradients(loss, params), seeded with 1.
         Tensor x = b.input("x", {8, 15});
         Tensor labels = b.input_ints("labels", {8}, 0, 6);
         Tensor h = relu(matmul(x, b.param("w1", {15, 23}, -0.5, 0.5)) + b.param("b1", {23}, -0.1, 0.1));
         b.out = cross_entropy(matmul(h, b.param("w2", {23, 7}, -0.5, 0.5)), labels);
         b.loss_api = true;
       }},
      {Op::MseLoss, "7x33",
       [](GradBuilder& b) {
         b.out = mse_loss(b.param("p", {7, 33}), b.param("t", {7, 33}));
       }},
      {Op::MseLoss, "rank4_target_input",
       [](GradBuilder& b) {
         b.out = mse_loss(b.param("p", {2, 3, 4, 5}), b.input("t", {2, 3, 4, 5}));
       }},
      {Op::BinaryCrossEntropy, "7x33",
       [](GradBuilder& b) {
         b.out = binary_cross_entropy(b.param("p", {7, 33}, 0.05, 0.95), b.param("t", {7, 33}, 0, 1));
       }},
      {Op::BinaryCrossEntropy, "of_sigmoid_rank3",
       [](GradBuilder& b) {
         Tensor t = b.input_small_ints("t", {3, 5, 7}, 0, 1);
         b.out = binary_cross_entropy(sigmoid(b.param("z", {3, 5, 7}, -3, 3)), t);
       }},
      {Op::BinaryCrossEntropyWithLogits, "7x33",
       [](GradBuilder& b) {
         b.out = binary_cross_entropy_with_logits(b.param("x", {7, 33}, -4, 4), b.param("t", {7, 33}, 0, 1));
       }},
      {Op::BinaryCrossEntropyWithLogits, "target_input_257",
       [](GradBuilder& b) {
         b.out = binary_cross_entropy_with_logits(b.param("x", {257}, -4, 4), b.input("t", {257}, 0, 1));
       }},
  };
}

RegisterGrad reg_loss{loss_cases()};

}  // namespace
}  // namespace mntest
