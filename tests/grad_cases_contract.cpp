// Gradient cases for matmul (transposes, batch broadcasting: the broadcast operand's gradient
// sums over the batch), reductions (several axes, keepdim, max with ties split evenly) and the
// row ops (softmax, log_softmax along any axis; rms_norm/layer_norm w.r.t. x, weight and bias).
#include <algorithm>

#include "grad_case.hpp"

namespace mntest {
namespace {

using namespace meganeura;

std::vector<GradCase> matmul_cases() {
  return {
      {Op::MatMul, "33x17_by_17x65",
       [](GradBuilder& b) {
         b.out = matmul(b.param("a", {33, 17}), b.param("b", {17, 65}));
       }},
      {Op::MatMul, "transpose_a_and_b",
       [](GradBuilder& b) {
         // a [17,33]ᵀ × b [65,17]ᵀ = [33,65]
         b.out = matmul(b.param("a", {17, 33}), b.param("b", {65, 17}), {.transpose_a = true, .transpose_b = true});
       }},
      {Op::MatMul, "transpose_b_batch_broadcast_rank4",
       [](GradBuilder& b) {
         // a [2,1,5,7] × b [3,9,7]ᵀ = [2,3,5,9]: both operands broadcast over a batch dim.
         b.out = matmul(b.param("a", {2, 1, 5, 7}), b.param("b", {3, 9, 7}), {.transpose_b = true});
       }},
      {Op::MatMul, "rank3_by_shared_weight",
       [](GradBuilder& b) {
         // x [4,5,7] × w [7,3]: w's gradient sums over the batch of 4.
         b.out = matmul(b.param("x", {4, 5, 7}), b.param("w", {7, 3}));
       }},
      {Op::MatMul, "wrt_input_and_intermediate",
       [](GradBuilder& b) {
         // Gradients w.r.t. an input (not a parameter) and an intermediate tensor.
         Tensor x = b.input("x", {6, 10});
         Tensor w = b.param("w", {10, 7});
         Tensor h = matmul(x, w);
         b.out = softmax(h * 2.0f);
         b.wrt = {x, w, h};
       }},
      {Op::MatMul, "transpose_a_rank3",
       [](GradBuilder& b) {
         b.out = matmul(b.param("a", {3, 11, 6}), b.param("b", {3, 11, 5}), {.transpose_a = true});  // [3,6,5]
       }},
  };
}

// linear: a, b and the bias as parameters; the bias is kept away from 0 and the products small,
// so that every pre-activation keeps its sign within finite differences (relu's kink).
GradCase lin(std::string name, Shape a, Shape w, bool ta, bool tb, LinearAct act, Shape r = {}) {
  return {Op::Linear, std::move(name), [a, w, ta, tb, act, r](GradBuilder& b) {
            Tensor x = b.param("a", a, -0.2, 0.2), y = b.param("b", w, -0.2, 0.2);
            int64_t n = tb ? w[w.size() - 2] : w.back();
            Tensor bias = b.input_away("bias", {n}, 0.5, 1.5);
            MatMulOptions o{.transpose_a = ta, .transpose_b = tb};
            std::vector<Tensor> wrt = {x, y, bias};
            if (r.empty()) {
              b.out = linear(x, y, bias, o, act);
            } else {
              Tensor res = b.param("r", r);
              b.out = linear(x, y, bias, res, o, act);
              wrt.push_back(res);
            }
            b.wrt = wrt;
          }};
}

std::vector<GradCase> linear_cases() {
  return {
      lin("bias_5x4_by_4x7", {5, 4}, {4, 7}, false, false, kLinearNone),
      lin("bias_transpose_b_batch_broadcast", {2, 1, 5, 4}, {3, 6, 4}, false, true, kLinearNone),
      lin("bias_transpose_a_rank3_shared_weight", {3, 4, 6}, {4, 5}, true, false, kLinearNone),
      lin("relu_transpose_both", {4, 5}, {7, 4}, true, true, kLinearRelu),
      lin("gelu_batch", {2, 5, 4}, {4, 7}, false, false, kLinearGelu),
      lin("gelu_tanh_transpose_b", {5, 4}, {7, 4}, false, true, kLinearGeluTanh),
      lin("silu_rank4_bcast", {2, 1, 3, 4}, {3, 4, 5}, false, false, kLinearSilu),
      lin("residual_full", {5, 4}, {4, 7}, false, false, kLinearNone, {5, 7}),
      lin("residual_bcast_relu", {2, 3, 5, 4}, {4, 7}, false, false, kLinearRelu, {3, 1, 7}),
      lin("residual_gelu_transpose_a", {3, 4, 6}, {3, 4, 5}, true, false, kLinearGelu, {6, 1}),
  };
}

// Values in [-1, 1] at least 1/n apart, shuffled: a max's winner stays the winner under the
// finite differences' steps (1e-6), where uniform draws tie within a step now and then.
Tensor spaced(GradBuilder& b, const Shape& s) {
  const int64_t n = numel(s);
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = static_cast<float>(-1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(n));
  std::shuffle(v.begin(), v.end(), b.rng.engine());
  return b.param_host("x", host_f32(s, v));
}

std::vector<GradCase> reduce_cases() {
  std::vector<GradCase> cases;
  for (Op op : {Op::Sum, Op::Mean, Op::Max}) {
    auto fn = [op](Tensor x, std::vector<int64_t> axes, bool keepdim) {
      return op == Op::Sum ? sum(x, axes, keepdim) : op == Op::Mean ? mean(x, axes, keepdim) : max(x, axes, keepdim);
    };
    // A sum (or mean) of 35 to 231 values in [-1, 1] may cancel to almost nothing: its f32
    // rounding is relative to the values' magnitudes, not to what is left, so the comparison's
    // scale has that floor. A max draws spaced values.
    auto x_of = [op](GradBuilder& b, const Shape& s) {
      if (op == Op::Sum) b.scale = 1.0;
      if (op == Op::Mean) b.scale = 0.01;
      return op == Op::Max ? spaced(b, s) : b.param("x", s);
    };
    cases.push_back({op, "all_axes_7x33", [fn, x_of](GradBuilder& b) { b.out = fn(x_of(b, {7, 33}), {}, false); }});
    cases.push_back({op, "axes_0_2_keepdim_5x7x9", [fn, x_of](GradBuilder& b) {
                       b.out = fn(x_of(b, {5, 7, 9}), {0, 2}, true);  // [1,7,1]
                     }});
    cases.push_back({op, "rank4_negative_axes", [fn, x_of](GradBuilder& b) {
                       b.out = fn(x_of(b, {2, 3, 5, 7}), {-1, -3}, false);  // [2,5]
                     }});
    cases.push_back({op, "axis1_keepdim_then_broadcast_sub", [fn, x_of](GradBuilder& b) {
                       Tensor x = x_of(b, {7, 33});
                       b.out = x - fn(x, {1}, true);  // x used twice, through the reduction and directly
                     }});
  }
  // Ties: the gradient of max splits evenly among the tied maxima (checked by hand).
  cases.push_back({Op::Max, "ties_split_evenly", [](GradBuilder& b) {
                     Tensor x = b.param_host("x", host_f32({5, 7}, b.rng.small_ints(35, 0, 2)));
                     b.out = max(x, {1});
                     b.fd_check = false;
                     const auto xv = decode(b.feeds["x"]);
                     b.hand_check = [xv](const std::vector<RefTensor>& g, const RefTensor& cot) {
                       for (int r = 0; r < 5; ++r) {
                         double m = -1e30;
                         int ties = 0;
                         for (int k = 0; k < 7; ++k) m = std::max(m, xv[r * 7 + k]);
                         for (int k = 0; k < 7; ++k) ties += xv[r * 7 + k] == m;
                         for (int k = 0; k < 7; ++k)
                           EXPECT_DOUBLE_EQ(g[0].v[r * 7 + k], xv[r * 7 + k] == m ? cot.v[r] / ties : 0.0)
                               << "row " << r << " col " << k;
                       }
                     };
                   }});
  return cases;
}

std::vector<GradCase> row_cases() {
  std::vector<GradCase> cases;
  for (Op op : {Op::Softmax, Op::LogSoftmax}) {
    auto fn = [op](Tensor x, int64_t axis) { return op == Op::Softmax ? softmax(x, axis) : log_softmax(x, axis); };
    cases.push_back({op, "last_axis_7x33", [fn](GradBuilder& b) { b.out = fn(b.param("x", {7, 33}, -3, 3), -1); }});
    cases.push_back({op, "middle_axis_3x5x7", [fn](GradBuilder& b) { b.out = fn(b.param("x", {3, 5, 7}, -3, 3), 1); }});
    cases.push_back({op, "rank4_axis0", [fn](GradBuilder& b) { b.out = fn(b.param("x", {3, 2, 5, 4}, -3, 3), 0); }});
    cases.push_back({op, "rows_of_257", [fn](GradBuilder& b) { b.out = fn(b.param("x", {3, 257}, -3, 3), -1); }});
  }
  cases.push_back({Op::RmsNorm, "no_weight_7x33", [](GradBuilder& b) { b.out = rms_norm(b.param("x", {7, 33})); }});
  cases.push_back({Op::RmsNorm, "weight_3x5x65", [](GradBuilder& b) {
                     b.out = rms_norm(b.param("x", {3, 5, 65}), b.param("w", {65}, 0.5, 1.5));
                   }});
  cases.push_back({Op::RmsNorm, "weight_rank4_eps", [](GradBuilder& b) {
                     b.out = rms_norm(b.param("x", {2, 3, 4, 17}), b.param("w", {17}, -1.5, 1.5), 1e-3f);
                   }});
  cases.push_back({Op::LayerNorm, "no_weight_7x33", [](GradBuilder& b) { b.out = layer_norm(b.param("x", {7, 33})); }});
  cases.push_back({Op::LayerNorm, "weight_5x65", [](GradBuilder& b) {
                     b.out = layer_norm(b.param("x", {5, 65}), b.param("w", {65}, 0.5, 1.5));
                   }});
  cases.push_back(
      {Op::LayerNorm, "weight_bias_rank4", [](GradBuilder& b) {
         b.out = layer_norm(b.param("x", {2, 3, 4, 17}), b.param("w", {17}, -1.5, 1.5), b.param("bias", {17}));
       }});
  cases.push_back(
      {Op::LayerNorm, "weight_bias_rows_of_257", [](GradBuilder& b) {
         b.out = layer_norm(b.param("x", {3, 257}, -2, 2), b.param("w", {257}, 0.5, 1.5), b.param("bias", {257}));
       }});
  return cases;
}

// Compositions: the gradient flows through several archetypes.
std::vector<GradCase> chain_cases() {
  return {
      {Op::Softmax, "chain_mean_log_softmax_of_matmul_plus_bias",
       [](GradBuilder& b) {
         Tensor x = b.input("x", {5, 17});
         Tensor w = b.param("w", {17, 11});
         Tensor bias = b.param("bias", {11});
         b.out = mean(log(softmax(matmul(x, w) + bias)));  // rank 0
       }},
      {Op::Tanh, "chain_two_layer_mlp_sum",
       [](GradBuilder& b) {
         Tensor x = b.input("x", {9, 13});
         Tensor w1 = b.param("w1", {13, 21}, -0.5, 0.5);
         Tensor w2 = b.param("w2", {21, 5}, -0.5, 0.5);
         b.out = sum(matmul(tanh(matmul(x, w1)), w2), {0});  // [5]
       }},
      {Op::LayerNorm, "chain_residual_gelu_layer_norm",
       [](GradBuilder& b) {
         Tensor x = b.param("x", {2, 5, 19});
         Tensor w = b.param("w", {19, 19}, -0.5, 0.5);
         Tensor g = b.param("g", {19}, 0.5, 1.5);
         Tensor bias = b.param("bias", {19});
         b.out = layer_norm(x + gelu(matmul(x, w)), g, bias);
       }},
  };
}

// attention w.r.t. q, k and v: causal and not, grouped-query heads (k/v gradients sum over the
// query heads of their group), fewer queries than keys.
std::vector<GradCase> attention_cases() {
  auto att = [](std::string name, Shape q, Shape k, Shape v, bool causal) {
    return GradCase{Op::Attention, std::move(name), [q, k, v, causal](GradBuilder& b) {
                      b.out = attention(b.param("q", q), b.param("k", k), b.param("v", v), {.causal = causal});
                    }};
  };
  return {
      att("mha_2x2x5x6_causal", {2, 2, 5, 6}, {2, 2, 5, 6}, {2, 2, 5, 6}, true),
      att("gqa_4_heads_on_2_keys7_dv3", {1, 4, 3, 5}, {1, 2, 7, 5}, {1, 2, 7, 3}, false),
      att("gqa_causal_fewer_queries", {1, 4, 3, 4}, {1, 2, 6, 4}, {1, 2, 6, 4}, true),
      att("rank3_3x4x9", {3, 4, 9}, {3, 4, 9}, {3, 4, 9}, false),
      {Op::Attention, "sliding_window_2_gqa",
       [](GradBuilder& b) {
         b.out = attention(b.param("q", {1, 4, 6, 4}), b.param("k", {1, 2, 6, 4}), b.param("v", {1, 2, 6, 4}),
                           {.causal = true, .window = 2});
       }},
      {Op::Attention, "cache_position_3",
       [](GradBuilder& b) {  // keys past 3 + 2 are not seen
         Tensor pos = b.input_host("position", host_i32({1}, {3}));
         b.out = attention(b.param("q", {1, 2, 2, 4}), b.param("k", {1, 2, 8, 4}), b.param("v", {1, 2, 8, 4}), pos,
                           {.causal = true});
       }},
      {Op::Attention, "seq_major_gqa_causal_batch_2",
       [](GradBuilder& b) {  // [B, S, H, D]
         b.out = attention(b.param("q", {2, 5, 4, 6}), b.param("k", {2, 5, 2, 6}), b.param("v", {2, 5, 2, 3}),
                           {.causal = true, .seq_major = true});
       }},
  };
}

std::vector<GradCase> matmul_add_cases() {
  return {
      {Op::MatMulAdd, "transpose_b_residual_broadcast_rows",
       [](GradBuilder& b) {
         b.out = matmul_add(b.param("a", {2, 5, 7}), b.param("w", {9, 7}), b.param("r", {5, 1}), {.transpose_b = true});
       }},
      {Op::MatMulAdd, "full_residual_transpose_a",
       [](GradBuilder& b) {
         b.out = matmul_add(b.param("a", {6, 4}), b.param("w", {6, 3}), b.param("r", {4, 3}), {.transpose_a = true});
       }},
  };
}

// rotary w.r.t. x (the transposed rotation), cos and sin (broadcast tables summed back).
std::vector<GradCase> rotary_cases() {
  return {
      {Op::Rotary, "x_cos_sin_rank4_tables",
       [](GradBuilder& b) {
         b.out = rotary(b.param("x", {2, 3, 5, 6}), b.param("cos", {5, 6}), b.param("sin", {5, 6}));
       }},
      {Op::Rotary, "x_only_unequal_sin_halves",
       [](GradBuilder& b) {
         b.out = rotary(b.param("x", {4, 7, 8}), b.input("cos", {7, 8}), b.input("sin", {1, 8}));
       }},
      {Op::Rotary, "q_and_k_pair_seq_major",
       [](GradBuilder& b) {  // forward and backward in pairs
         Tensor c = b.input("cos", {5, 1, 6}), s = b.input("sin", {5, 1, 6});
         b.out = rotary(b.param("q", {2, 5, 3, 6}), c, s) * rotary(b.param("k", {2, 5, 3, 6}), c, s);
       }},
  };
}

RegisterGrad reg_matmul{matmul_cases()};
RegisterGrad reg_rotary{rotary_cases()};
RegisterGrad reg_matmul_add{matmul_add_cases()};
RegisterGrad reg_attention{attention_cases()};
RegisterGrad reg_linear{linear_cases()};
RegisterGrad reg_reduce{reduce_cases()};
RegisterGrad reg_row{row_cases()};
RegisterGrad reg_chain{chain_cases()};

}  // namespace
}  // namespace mntest
