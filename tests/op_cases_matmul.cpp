// Forward cases for matmul: M, N, K around tile edges (1, 63, 65, 130), broadcast batch dims,
// transposed operands, shapes that pick split-K and many tiles; linear (matmul with a bias, activation and residual
// epilogue).
#include "op_case.hpp"

namespace mntest {
namespace {

using namespace meganeura;

OpCase mm(std::string name, Shape a, Shape b, bool ta = false, bool tb = false) {
  return {Op::MatMul, std::move(name), [a, b, ta, tb](CaseBuilder& c) {
            c.output("y", matmul(c.input("a", a), c.input("b", b), {.transpose_a = ta, .transpose_b = tb}));
            // A sum of K products can cancel to far below its terms, while f32 rounding scales
            // with the terms: floor the scale at their typical size (inputs are O(1)). A wrong
            // element is off by O(1) and still fails.
            c.scale = 1;
          }};
}

std::vector<OpCase> matmul_cases() {
  return {
      mm("m1_n1_k1", {1, 1}, {1, 1}),
      mm("m1_n1_k130_dot", {1, 130}, {130, 1}),
      mm("m63_k65_n130", {63, 65}, {65, 130}),
      mm("m65_k63_n1", {65, 63}, {63, 1}),
      mm("m130_k1_n63_outer", {130, 1}, {1, 63}),
      mm("batch_2x3_bcast_rhs_rank2", {2, 3, 33, 17}, {17, 7}),
      mm("batch_1x3_vs_2x1", {1, 3, 5, 9}, {2, 1, 9, 6}),
      mm("batch_lhs_rank2_rhs_rank3", {7, 65}, {3, 65, 5}),
      mm("transpose_a_k65_m63", {3, 65, 63}, {3, 65, 1}, true, false),
      mm("transpose_b_n63_k130", {7, 130}, {63, 130}, false, true),
      mm("transpose_both_bcast", {2, 1, 17, 33}, {3, 7, 17}, true, true),
      // Rows whose length is a multiple of 4: the kernels' 16-byte vector loads.
      mm("aligned_transpose_b_m3_k132_n67", {3, 132}, {67, 132}, false, true),
      // GEMV's unrolled loads (4 a lane, 32 lanes a column) and the vec4s after them
      mm("aligned_transpose_b_m2_k1100_n37", {2, 1100}, {37, 1100}, false, true),
      mm("aligned_m65_k64_n132", {2, 65, 64}, {64, 132}),
      // Few output tiles and a long K: split-K on its own on a GPU (lower/matmul_tiers.cpp; never
      // on lavapipe, where matmul_tiers_test forces it).
      mm("m5_k2100_n70_split_k", {5, 2100}, {2100, 70}),
      // Many tiles over a broadcast batch (a row tile past a multiple of 128).
      mm("batch26_m129_k33_n513_many_tiles", {26, 129, 33}, {33, 513}),
      {Op::MatMul, "chained_with_bias",
       [](CaseBuilder& c) {
         Tensor h = matmul(c.input("x", {4, 33}), c.param("w1", {33, 65}, -0.3, 0.3)) + c.param("b1", {65});
         c.output("y", matmul(relu(h), c.param("w2", {63, 65}, -0.3, 0.3), {.transpose_b = true}));
       }},
      {Op::MatMul, "permuted_operand",
       [](CaseBuilder& c) {
         // A permuted (strided) operand: q·kᵀ as attention computes it.
         Tensor q = permute(c.input("q", {2, 5, 3, 16}), {0, 2, 1, 3});  // [2,3,5,16]
         Tensor k = permute(c.input("k", {2, 7, 3, 16}), {0, 2, 1, 3});  // [2,3,7,16]
         c.output("s", matmul(q, k, {.transpose_b = true}));
       }},
  };
}

// linear(a, b, bias[, residual]) with the activation `act`; residual shape `r` (empty: none).
OpCase lin(std::string name, Shape a, Shape b, bool ta, bool tb, LinearAct act, Shape r = {}) {
  return {Op::Linear, std::move(name), [a, b, ta, tb, act, r](CaseBuilder& c) {
            Tensor x = c.input("a", a), w = c.input("b", b);
            int64_t n = tb ? b[b.size() - 2] : b.back();
            Tensor bias = c.input("bias", {n});
            MatMulOptions o{.transpose_a = ta, .transpose_b = tb};
            c.output("y", r.empty() ? linear(x, w, bias, o, act) : linear(x, w, bias, c.input("r", r), o, act));
            c.scale = 1;  // as for matmul: cancellation in the sum of products
          }};
}

std::vector<OpCase> linear_cases() {
  return {
      lin("bias_m63_k65_n130", {63, 65}, {65, 130}, false, false, kLinearNone),
      lin("bias_m1_n1_k1", {1, 1}, {1, 1}, false, false, kLinearNone),
      lin("bias_batch_2x3_transpose_b_n7", {2, 3, 33, 17}, {7, 17}, false, true, kLinearNone),
      lin("bias_transpose_both_bcast", {2, 1, 17, 33}, {3, 7, 17}, true, true, kLinearNone),
      lin("relu_m65_k63_n67", {65, 63}, {63, 67}, false, false, kLinearRelu),
      lin("gelu_batch_transpose_a", {3, 65, 63}, {3, 65, 5}, true, false, kLinearGelu),
      lin("gelu_tanh_m5_k130_n63", {5, 130}, {63, 130}, false, true, kLinearGeluTanh),
      lin("silu_batch_bcast", {1, 3, 5, 9}, {2, 1, 9, 6}, false, false, kLinearSilu),
      lin("residual_full_m63_n130", {63, 65}, {65, 130}, false, false, kLinearNone, {63, 130}),
      lin("residual_bcast_rows_batch", {2, 3, 33, 17}, {17, 7}, false, false, kLinearNone, {3, 1, 7}),
      lin("residual_bcast_cols_relu", {2, 3, 33, 17}, {7, 17}, false, true, kLinearRelu, {2, 1, 33, 1}),
      lin("residual_silu_transpose_a", {3, 65, 63}, {3, 65, 67}, true, false, kLinearSilu, {3, 63, 67}),
      // Weights shared by the batch, rows following on: lowered as one product of 3 x 33 rows.
      lin("residual_full_batch_as_rows", {3, 33, 17}, {17, 7}, false, false, kLinearNone, {3, 33, 7}),
  };
}

// matmul_add(a, b, r): the residual full, broadcast over rows, columns or the batch.
std::vector<OpCase> matmul_add_cases() {
  auto mma = [](std::string name, Shape a, Shape b, Shape r, bool ta, bool tb) {
    return OpCase{Op::MatMulAdd, std::move(name), [a, b, r, ta, tb](CaseBuilder& c) {
                    c.output("y", matmul_add(c.input("a", a), c.input("b", b), c.input("r", r),
                                             {.transpose_a = ta, .transpose_b = tb}));
                    c.scale = 1;  // as for matmul: cancellation in the sum of products
                  }};
  };
  return {
      mma("full_m63_k65_n130", {63, 65}, {65, 130}, {63, 130}, false, false),
      // The residual shared by the batch: its rows do not follow on, so the batch stays a batch.
      mma("batch_residual_shared", {3, 33, 17}, {17, 7}, {33, 7}, false, false),
      mma("row_broadcast_transpose_b_batch", {2, 3, 33, 17}, {7, 17}, {3, 1, 7}, false, true),
      mma("column_broadcast_transpose_a", {3, 65, 63}, {3, 65, 5}, {3, 63, 1}, true, false),
      mma("scalar_residual_m1", {1, 130}, {130, 67}, {}, false, false),
  };
}

Register reg{matmul_cases()};
Register reg_matmul_add{matmul_add_cases()};
Register reg_linear{linear_cases()};

}  // namespace
}  // namespace mntest
