// The optimizer's rules on real graphs: each before-graph is written from primitives; the
// optimized graph must contain the expected fused op (and not the primitives it replaces), and
// its session must give the unoptimized session's outputs on random inputs.
#include "optimize/optimize.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <set>
#include <sstream>

#include "meganeura/meganeura.hpp"
#include "test_util.hpp"

namespace {

using namespace meganeura;
using mntest::Rng;

int count(const Graph& g, Op op) {
  int n = 0;
  for (const Node& node : g.nodes()) n += node.op == op;
  return n;
}

// Runs g as written (optimizer off) and its optimized form (as optimized, no second pass) on the
// same random inputs; outputs must agree to 1e-5. Returns the dispatches per step of each.
std::pair<uint32_t, uint32_t> expect_same_outputs(const Graph& g, const Graph& opt, Rng& rng) {
  Session a = build_inference_session(g, {.optimize = false}), b = build_inference_session(opt, {.optimize = false});
  for (const Node& n : g.nodes())
    if (n.op == Op::Input) {
      HostTensor t = mntest::host_f32(n.shape, rng.floats(numel(n.shape), -2, 2));
      a.set_input(n.name, t);
      b.set_input(n.name, t);
    }
  a.step();
  b.step();
  for (auto& [name, id] : g.outputs()) {
    std::vector<float> x = a.read_output(name).to_f32(), y = b.read_output(name).to_f32();
    EXPECT_EQ(x.size(), y.size());
    double scale = 1e-30;
    for (float v : x) scale = std::max(scale, static_cast<double>(std::abs(v)));
    for (size_t i = 0; i < x.size() && i < y.size(); ++i)
      if (std::abs(x[i] - y[i]) > 1e-5 * scale) {
        ADD_FAILURE() << "output " << name << " element " << i << ": " << x[i] << " vs " << y[i] << ", "
                      << mntest::seed_note(rng.seed());
        break;
      }
  }
  return {a.stats().dispatches, b.stats().dispatches};
}

struct RuleCase {
  const char* name;
  std::function<void(Graph&)> build;  // inputs named freely, one output "y"
  Op fused;                           // must appear (Op::Input: nothing fused)
  Op gone;                            // must not appear any more
};

class RuleTest : public ::testing::TestWithParam<RuleCase> {};

TEST_P(RuleTest, RewritesAndKeepsValues) {
  const RuleCase& c = GetParam();
  Graph g;
  c.build(g);
  optimize::Report report;
  std::unique_ptr<Graph> opt = optimize::optimize(g, &report);
  SCOPED_TRACE(report.to_string() + "\n" + opt->to_string());
  if (c.fused != Op::Input) {
    EXPECT_GE(count(*opt, c.fused), 1);
  }
  EXPECT_EQ(count(*opt, c.gone), 0);
  Rng rng;
  auto [before, after] = expect_same_outputs(g, *opt, rng);
  if (c.gone == Op::Reshape) {  // reshapes are views: removing them saves no dispatch
    EXPECT_LE(after, before);
  } else {
    EXPECT_LT(after, before) << "the rewritten program must run fewer dispatches";
  }
}

const RuleCase kWritten[] = {
    {"silu",
     [](Graph& g) {
       auto x = g.input("x", {7, 33});
       g.output("y", x * sigmoid(x));
     },
     Op::Silu, Op::Sigmoid},
    {"silu_swapped",
     [](Graph& g) {
       auto x = g.input("x", {2, 3, 5, 7});
       g.output("y", sigmoid(x) * x);
     },
     Op::Silu, Op::Sigmoid},
    {"rotary",  // Hugging Face's rotate_half: x*cos + cat(-x2, x1)*sin, rank 4 against [seq, dim] tables
     [](Graph& g) {
       auto x = g.input("x", {2, 3, 5, 8}), cs = g.input("cos", {5, 8}), sn = g.input("sin", {5, 8});
       g.output("y", x * cs + concat({-slice(x, -1, 4, 8), slice(x, 3, 0, 4)}, 3) * sn);
     },
     Op::Rotary, Op::Concat},
    {"rotary_swapped",  // the rotated term first
     [](Graph& g) {
       auto x = g.input("x", {7, 6}), cs = g.input("cos", {7, 6}), sn = g.input("sin", {6});
       g.output("y", concat({-slice(x, -1, 3, 6), slice(x, -1, 0, 3)}, -1) * sn + x * cs);
     },
     Op::Rotary, Op::Concat},
    {"swiglu",  // (g*sigmoid(g))*u: silu first, then swiglu
     [](Graph& g) {
       auto gate = g.input("g", {5, 67}), up = g.input("u", {5, 67});
       g.output("y", gate * sigmoid(gate) * up);
     },
     Op::SwiGlu, Op::Sigmoid},
    {"swiglu_swapped_broadcast",  // u * (sigmoid(g)*g), u broadcast over g's leading axis
     [](Graph& g) {
       auto gate = g.input("g", {2, 3, 5, 7}), up = g.input("u", {3, 1, 7});
       g.output("y", up * (sigmoid(gate) * gate));
     },
     Op::SwiGlu, Op::Sigmoid},
    {"scatter_into",  // x + scatter_add(0, i, u): the updates go straight into x (in place, no copy)
     [](Graph& g) {
       const std::vector<int32_t> idx = {3, 0, 3, 49, 17};
       auto x = g.input("x", {50, 7}), u = g.input("u", {5, 7});
       auto w = g.input("w", {7, 7});
       auto zero = broadcast_to(g.scalar(0.0f), {50, 7});
       g.output("y", matmul(x, w) + scatter_add(zero, g.constant(std::span<const int32_t>(idx), {5}), u));
     },
     Op::ScatterAdd, Op::BroadcastTo},
    {"scatter_into_swapped",
     [](Graph& g) {
       const std::vector<int32_t> idx = {2, 2, 0};
       auto x = g.input("x", {2, 6, 5}), u = g.input("u", {2, 3, 5});
       auto zero = broadcast_to(g.scalar(0.0f), {2, 6, 5});
       g.output("y", scatter_add(zero, g.constant(std::span<const int32_t>(idx), {3}), u, 1) + exp(x));
     },
     Op::ScatterAdd, Op::Add},
    {"linear_bias",
     [](Graph& g) {
       auto x = g.input("x", {63, 65}), w = g.input("w", {65, 130}), b = g.input("b", {130});
       g.output("y", matmul(x, w) + b);
     },
     Op::Linear, Op::Add},
    {"linear_bias_swapped_batch_transpose",
     [](Graph& g) {
       auto x = g.input("x", {2, 3, 33, 17}), w = g.input("w", {7, 17}), b = g.input("b", {7});
       g.output("y", b + matmul(x, w, {.transpose_b = true}));
     },
     Op::Linear, Op::MatMul},
    {"linear_relu",
     [](Graph& g) {
       auto x = g.input("x", {5, 33}), w = g.input("w", {33, 67}), b = g.input("b", {67});
       g.output("y", relu(matmul(x, w) + b));
     },
     Op::Linear, Op::Relu},
    {"linear_gelu_tanh_from_primitives",  // the gelu-tanh fusion first, then the epilogue
     [](Graph& g) {
       auto x = g.input("x", {2, 5, 33}), w = g.input("w", {33, 17}), b = g.input("b", {17});
       auto h = matmul(x, w) + b;
       g.output("y", 0.5f * h * (1.0f + tanh(0.7978845608f * (h + 0.044715f * (h * h * h)))));
     },
     Op::Linear, Op::Tanh},
    {"linear_silu_from_primitives",
     [](Graph& g) {
       auto x = g.input("x", {9, 16}), w = g.input("w", {16, 31}), b = g.input("b", {31});
       auto h = matmul(x, w) + b;
       g.output("y", h * sigmoid(h));
     },
     Op::Linear, Op::Sigmoid},
    {"linear_gelu_residual",  // a transformer MLP block: x + gelu(x·w + b)
     [](Graph& g) {
       auto x = g.input("x", {2, 7, 33}), w = g.input("w", {33, 33}), b = g.input("b", {33});
       g.output("y", x + gelu(matmul(x, w) + b));
     },
     Op::Linear, Op::Gelu},
    {"linear_residual_broadcast",
     [](Graph& g) {
       auto x = g.input("x", {2, 3, 5, 9}), w = g.input("w", {9, 6}), b = g.input("b", {6}),
            r = g.input("r", {3, 1, 6});
       g.output("y", (matmul(x, w) + b) + r);
     },
     Op::Linear, Op::Add},
    {"rms_norm",
     [](Graph& g) {
       auto x = g.input("x", {5, 33});
       auto w = g.input("w", {33});
       g.output("y", x * rsqrt(mean(x * x, {-1}, true) + 1e-6f) * w);
     },
     Op::RmsNorm, Op::Rsqrt},
    {"rms_norm_pow",
     [](Graph& g) {
       auto x = g.input("x", {3, 4, 65});
       g.output("y", x * rsqrt(mean(pow(x, 2.0f), {2}, true) + 1e-5f));
     },
     Op::RmsNorm, Op::Rsqrt},
    {"softmax",
     [](Graph& g) {
       auto x = g.input("x", {5, 9, 11});
       auto e = exp(x - max(x, {1}, true));
       g.output("y", e / sum(e, {1}, true));
     },
     Op::Softmax, Op::Exp},
    {"softmax_unstabilised",
     [](Graph& g) {
       auto x = g.input("x", {4, 17});
       g.output("y", exp(x) / sum(exp(x), {-1}, true));
     },
     Op::Softmax, Op::Exp},
    {"layer_norm",
     [](Graph& g) {
       auto x = g.input("x", {3, 5, 33});
       auto c = x - mean(x, {-1}, true);
       g.output("y", c * rsqrt(mean(c * c, {-1}, true) + 1e-5f));
     },
     Op::LayerNorm, Op::Mean},
    {"layer_norm_pow",
     [](Graph& g) {
       auto x = g.input("x", {2, 3, 5, 17});
       auto c = x - mean(x, {3}, true);
       g.output("y", c * rsqrt(mean(pow(c, 2.0f), {-1}, true) + 1e-6f));
     },
     Op::LayerNorm, Op::Rsqrt},
    {"layer_norm_swapped",
     [](Graph& g) {
       auto x = g.input("x", {7, 3, 9});
       auto c = x - mean(x, {2}, true);
       g.output("y", rsqrt(mean(c * c, {2}, true) + 1e-5f) * c);
     },
     Op::LayerNorm, Op::Rsqrt},
    {"layer_norm_swapped_pow",
     [](Graph& g) {
       auto x = g.input("x", {5, 19});
       auto c = x - mean(x, {1}, true);
       g.output("y", rsqrt(mean(pow(c, 2.0f), {1}, true) + 1e-5f) * c);
     },
     Op::LayerNorm, Op::PowScalar},
    {"layer_norm_div",
     [](Graph& g) {
       auto x = g.input("x", {3, 2, 5, 31});
       auto c = x - mean(x, {-1}, true);
       g.output("y", c / sqrt(mean(c * c, {-1}, true) + 1e-5f));
     },
     Op::LayerNorm, Op::Sqrt},
    {"layer_norm_div_pow",
     [](Graph& g) {
       auto x = g.input("x", {5, 3, 13});
       auto c = x - mean(x, {-1}, true);
       g.output("y", c / sqrt(mean(pow(c, 2.0f), {-1}, true) + 1e-3f));
     },
     Op::LayerNorm, Op::Div},
    {"layer_norm_weight",
     [](Graph& g) {
       auto x = g.input("x", {3, 5, 33});
       auto w = g.input("w", {33});
       auto c = x - mean(x, {-1}, true);
       g.output("y", c * rsqrt(mean(c * c, {-1}, true) + 1e-5f) * w);
     },
     Op::LayerNorm, Op::Mul},
    {"layer_norm_weight_bias",
     [](Graph& g) {
       auto x = g.input("x", {2, 3, 4, 47});
       auto w = g.input("w", {47});
       auto b = g.input("b", {47});
       auto c = x - mean(x, {-1}, true);
       g.output("y", c / sqrt(mean(c * c, {-1}, true) + 1e-5f) * w + b);
     },
     Op::LayerNorm, Op::Add},
    {"layer_norm_weight_bias_swapped",
     [](Graph& g) {
       auto x = g.input("x", {3, 7, 19});
       auto w = g.input("w", {19});
       auto b = g.input("b", {19});
       auto c = x - mean(x, {-1}, true);
       g.output("y", b + w * (c * rsqrt(mean(pow(c, 2.0f), {-1}, true) + 1e-5f)));
     },
     Op::LayerNorm, Op::Mul},
    {"matmul_add",  // a residual block's output projection
     [](Graph& g) {
       auto x = g.input("x", {2, 5, 9}), h = g.input("h", {2, 5, 6}), w = g.input("w", {9, 6});
       g.output("y", matmul(h, w, {.transpose_b = true}) + x);
     },
     Op::MatMulAdd, Op::Add},
    {"matmul_add_swapped",
     [](Graph& g) {
       auto x = g.input("x", {5, 1}), h = g.input("h", {5, 6}), w = g.input("w", {6, 7});
       g.output("y", x + matmul(h, w));
     },
     Op::MatMulAdd, Op::Add},
    {"neg_neg",
     [](Graph& g) {
       auto x = g.input("x", {9});
       g.output("y", exp(-(-x)));
     },
     Op::Input, Op::Neg},
    {"mul_one",
     [](Graph& g) {
       auto x = g.input("x", {4, 6});
       g.output("y", exp(x * 1.0f));
     },
     Op::Input, Op::Mul},
    {"zero_add",
     [](Graph& g) {
       auto x = g.input("x", {4, 6});
       g.output("y", exp(0.0f + x));
     },
     Op::Input, Op::Add},
    {"add_zero",
     [](Graph& g) {
       auto x = g.input("x", {3, 5});
       g.output("y", exp(x + 0.0f));
     },
     Op::Input, Op::Add},
    {"sub_zero",
     [](Graph& g) {
       auto x = g.input("x", {3, 5});
       g.output("y", exp(x - 0.0f));
     },
     Op::Input, Op::Sub},
    {"one_mul",
     [](Graph& g) {
       auto x = g.input("x", {2, 7});
       g.output("y", exp(1.0f * x));
     },
     Op::Input, Op::Mul},
    {"div_one",
     [](Graph& g) {
       auto x = g.input("x", {2, 7});
       g.output("y", exp(x / 1.0f));
     },
     Op::Input, Op::Div},
    {"transpose_twice",
     [](Graph& g) {
       auto x = g.input("x", {4, 6, 3});
       g.output("y", exp(transpose(transpose(x, 0, 2), 0, 2)));
     },
     Op::Input, Op::Permute},
    {"reshape_chain",
     [](Graph& g) {
       auto x = g.input("x", {4, 6});
       g.output("y", exp(reshape(reshape(reshape(x, {24}), {2, 12}), {4, 6})));
     },
     Op::Input, Op::Reshape},
};

// GELU in every spelling the rules know: 0.5*x*(..), x*0.5*(..), 0.5*(x*(..)) around the tanh
// form's three cube spellings and the erf form's three argument spellings.
std::vector<RuleCase> gelu_cases() {
  using Inner = Tensor (*)(Tensor);
  const std::pair<const char*, Inner> inners[] = {
      {"tanh_pow",
       [](Tensor x) {  // PyTorch's reference formula
         const float k = static_cast<float>(std::sqrt(2.0 / 3.14159265358979323846));
         return 1.0f + tanh(k * (x + 0.044715f * pow(x, 3.0f)));
       }},
      {"tanh_cube", [](Tensor x) { return 1.0f + tanh(0.7978845608f * (x + 0.044715f * (x * x * x))); }},
      {"tanh_chain",
       [](Tensor x) {  // sqrt(2/pi) as an expression the optimizer folds
         Tensor k = sqrt(x.graph().scalar(static_cast<float>(2.0 / 3.14159265358979323846)));
         return 1.0f + tanh(k * (x + 0.044715f * x * x * x));
       }},
      {"erf_div", [](Tensor x) { return 1.0f + erf(x / static_cast<float>(std::sqrt(2.0))); }},  // HF GELUActivation
      {"erf_mul", [](Tensor x) { return 1.0f + erf(x * 0.70710678f); }},
      {"erf_mul_swapped", [](Tensor x) { return 1.0f + erf(rsqrt(x.graph().scalar(2.0f)) * x); }},
  };
  using Outer = Tensor (*)(Tensor, Tensor);
  const std::pair<const char*, Outer> outers[] = {
      {"half_x", [](Tensor x, Tensor in) { return 0.5f * x * in; }},
      {"x_half", [](Tensor x, Tensor in) { return x * 0.5f * in; }},
      {"half_outer", [](Tensor x, Tensor in) { return 0.5f * (x * in); }},
  };
  static std::vector<std::string> names;  // RuleCase holds const char*
  names.reserve(std::size(inners) * std::size(outers));
  std::vector<RuleCase> cases;
  for (const auto& [inner_name, inner] : inners)
    for (const auto& [outer_name, outer] : outers) {
      names.push_back(std::string("gelu_") + inner_name + "_" + outer_name);
      const bool is_tanh = std::string(inner_name).starts_with("tanh");
      cases.push_back({names.back().c_str(),
                       [inner = inner, outer = outer](Graph& g) {
                         auto x = g.input("x", {3, 5, 33});
                         g.output("y", outer(x, inner(x)));
                       },
                       is_tanh ? Op::GeluTanh : Op::Gelu, is_tanh ? Op::Tanh : Op::Erf});
    }
  return cases;
}

// A causal mask constant for sq queries and sk keys, aligned to the end (query i sees keys
// j <= i + sk - sq), masked entries `masked` (-inf, or a large negative number).
Tensor causal_mask(Graph& g, int64_t sq, int64_t sk, float masked) {
  std::vector<float> m(static_cast<size_t>(sq * sk), 0.0f);
  for (int64_t i = 0; i < sq; ++i)
    for (int64_t j = std::max<int64_t>(i + sk - sq + 1, 0); j < sk; ++j) m[static_cast<size_t>(i * sk + j)] = masked;
  return g.constant(m, {sq, sk});
}

// Attention from primitives, in every spelling of the scale (none, on the scores, on q) and the
// causal mask (none, scores + mask, mask + scores); kᵀ as a transpose op or the matmul's flag.
std::vector<RuleCase> attention_cases() {
  using Scores = Tensor (*)(Tensor q, Tensor k, float s);  // k: [.., Sk, D]
  const std::pair<const char*, Scores> scores[] = {
      {"unscaled", [](Tensor q, Tensor k, float) { return matmul(q, transpose(k, -2, -1)); }},
      {"scaled", [](Tensor q, Tensor k, float s) { return matmul(q, k, {.transpose_b = true}) * s; }},
      {"scaled_swapped", [](Tensor q, Tensor k, float s) { return s * matmul(q, transpose(k, -1, -2)); }},
      {"divided", [](Tensor q, Tensor k, float s) { return matmul(q, k, {.transpose_b = true}) / (1.0f / s); }},
      {"q_scaled", [](Tensor q, Tensor k, float s) { return matmul(q * s, transpose(k, -2, -1)); }},
      {"q_scaled_swapped", [](Tensor q, Tensor k, float s) { return matmul(s * q, k, {.transpose_b = true}); }},
      {"q_divided", [](Tensor q, Tensor k, float s) { return matmul(q / (1.0f / s), k, {.transpose_b = true}); }},
  };
  static std::vector<std::string> names;
  names.reserve(std::size(scores) * 3);
  std::vector<RuleCase> cases;
  for (const auto& [score_name, score] : scores)
    for (int mask = 0; mask < 3; ++mask) {
      static const char* mask_name[] = {"", "_causal", "_causal_swapped"};
      names.push_back(std::string("attention_") + score_name + mask_name[mask]);
      cases.push_back({names.back().c_str(),
                       [score = score, mask](Graph& g) {
                         // decode-like with the mask: fewer queries than keys; -1e9 on one side
                         const int64_t sq = mask ? 3 : 5, sk = 7;
                         auto q = g.input("q", {2, 3, sq, 8}), k = g.input("k", {2, 3, sk, 8});
                         auto v = g.input("v", {2, 3, sk, 5});
                         Tensor s = score(q, k, 0.35355339f);
                         if (mask == 1) s = s + causal_mask(g, sq, sk, -std::numeric_limits<float>::infinity());
                         if (mask == 2) s = causal_mask(g, sq, sk, -1e9f) + s;
                         g.output("y", matmul(softmax(s, -1), v));
                       },
                       Op::Attention, Op::Softmax});
    }
  // The softmax written out as well: two fusions in a row.
  cases.push_back({"attention_softmax_from_primitives",
                   [](Graph& g) {
                     auto q = g.input("q", {4, 6, 16}), k = g.input("k", {4, 6, 16}), v = g.input("v", {4, 6, 16});
                     auto s = matmul(q, k, {.transpose_b = true}) * 0.25f + causal_mask(g, 6, 6, -1e30f);
                     auto e = exp(s - max(s, {-1}, true));
                     g.output("y", matmul(e / sum(e, {-1}, true), v));
                   },
                   Op::Attention, Op::Exp});
  // Grouped-query heads written with k/v repeated over the group (Hugging Face's repeat_kv).
  cases.push_back({"attention_grouped_query",
                   [](Graph& g) {
                     const int64_t b = 2, kv = 2, groups = 3, n = 5, hd = 8;
                     auto q = g.input("q", {b, kv, groups, n, hd});
                     auto k = g.input("k", {b, kv, n, hd}), v = g.input("v", {b, kv, n, hd});
                     auto k5 = broadcast_to(reshape(k, {b, kv, 1, n, hd}), {b, kv, groups, n, hd});
                     auto v5 = broadcast_to(reshape(v, {b, kv, 1, n, hd}), {b, kv, groups, n, hd});
                     auto s = matmul(q, k5, {.transpose_b = true}) * 0.35f + causal_mask(g, n, n, -1e9f);
                     g.output("y", matmul(softmax(s, -1), v5));
                   },
                   Op::Attention, Op::BroadcastTo});
  cases.push_back({"matmul_transposed_a",
                   [](Graph& g) {
                     auto a = g.input("a", {3, 9, 5}), b = g.input("b", {3, 9, 4});
                     g.output("y", matmul(transpose(a, 1, 2), b));
                   },
                   Op::MatMul, Op::Permute});
  return cases;
}

const std::vector<RuleCase> kCases = [] {
  std::vector<RuleCase> all(std::begin(kWritten), std::end(kWritten));
  for (RuleCase& c : gelu_cases()) all.push_back(std::move(c));
  for (RuleCase& c : attention_cases()) all.push_back(std::move(c));
  return all;
}();

INSTANTIATE_TEST_SUITE_P(Rules, RuleTest, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

// Every rule of the rule set fires in at least one case above (or in a named test below).
TEST(Optimize, EveryRuleHasACase) {
  std::set<std::string> fired;
  for (const RuleCase& c : kCases) {
    Graph g;
    c.build(g);
    optimize::Report report;
    optimize::optimize(g, &report);
    for (const auto& [rule, unions] : report.run.applied)
      if (unions > 0) fired.insert(rule);
  }
  for (const optimize::Rewrite& r : optimize::rules())
    EXPECT_TRUE(fired.count(r.name)) << "no test fires rule " << r.name;
}

// Halves swapped the other way (cat(x2, -x1): the transpose), a split off the middle, or a
// rotation along another axis are not the rotary embedding and stay as written.
TEST(Optimize, RotaryGuards) {
  const std::pair<const char*, std::function<Tensor(Tensor)>> cases[] = {
      {"negated_lower_half",
       [](Tensor x) {
         return concat({slice(x, -1, 4, 8), -slice(x, -1, 0, 4)}, -1);
       }},
      {"off_center_split",
       [](Tensor x) {
         return concat({-slice(x, -1, 3, 8), slice(x, -1, 0, 3)}, -1);
       }},
      {"other_axis",
       [](Tensor x) {
         return concat({-slice(x, 0, 3, 6), slice(x, 0, 0, 3)}, 0);
       }},
  };
  for (const auto& [name, rotate] : cases) {
    Graph g;
    auto x = g.input("x", {6, 8}), cs = g.input("cos", {6, 8}), sn = g.input("sin", {6, 8});
    g.output("y", x * cs + rotate(x) * sn);
    auto opt = optimize::optimize(g);
    EXPECT_EQ(count(*opt, Op::Rotary), 0) << name << "\n" << opt->to_string();
  }
}

// Masks that are not causal, rows that would see no key, a softmax over another axis and a
// broadcast k are left to the primitives.
TEST(Optimize, AttentionGuards) {
  const std::pair<const char*, std::function<void(Graph&)>> cases[] = {
      {"random_mask",
       [](Graph& g) {
         auto q = g.input("q", {2, 5, 8}), k = g.input("k", {2, 5, 8}), v = g.input("v", {2, 5, 8});
         std::vector<float> m(25, 0.0f);
         m[3] = -1e9f;   // (0, 3): above the diagonal, as causal masks are
         m[10] = -1e9f;  // (2, 0): below it, as they are not
         g.output("y", matmul(softmax(matmul(q, k, {.transpose_b = true}) + g.constant(m, {5, 5}), -1), v));
       }},
      {"more_queries_than_keys",
       [](Graph& g) {
         auto q = g.input("q", {1, 6, 4}), k = g.input("k", {1, 3, 4}), v = g.input("v", {1, 3, 4});
         g.output("y", matmul(softmax(matmul(q, k, {.transpose_b = true}) + causal_mask(g, 6, 3, -1e9f), -1), v));
       }},
      {"softmax_over_queries",
       [](Graph& g) {
         auto q = g.input("q", {2, 5, 8}), k = g.input("k", {2, 5, 8}), v = g.input("v", {2, 5, 8});
         g.output("y", matmul(softmax(matmul(q, k, {.transpose_b = true}), 1), v));
       }},
      {"broadcast_k",
       [](Graph& g) {
         auto q = g.input("q", {2, 5, 8}), k = g.input("k", {1, 5, 8}), v = g.input("v", {2, 5, 8});
         g.output("y", matmul(softmax(matmul(q, k, {.transpose_b = true}), -1), v));
       }},
  };
  for (const auto& [name, build] : cases) {
    Graph g;
    build(g);
    auto opt = optimize::optimize(g);
    EXPECT_EQ(count(*opt, Op::Attention), 0) << name << "\n" << opt->to_string();
    Rng rng;
    expect_same_outputs(g, *opt, rng);
  }
}

// A zero that broadcasts x to a larger shape is not an identity: the add must stay.
TEST(Optimize, BroadcastingIdentityIsKept) {
  Graph g;
  auto x = g.input("x", {1, 5});
  std::vector<float> zeros(4, 0.0f);
  g.output("y", x + g.constant(zeros, {4, 1}));
  auto opt = optimize::optimize(g);
  EXPECT_EQ(count(*opt, Op::Add), 1);
  Rng rng;
  expect_same_outputs(g, *opt, rng);
}

// A "layer norm" whose mean and variance reduce different axes is not a layer norm.
TEST(Optimize, LayerNormWithMismatchedAxesIsNotFused) {
  for (int variant = 0; variant < 2; ++variant) {
    Graph g;
    auto x = g.input("x", {3, 5, 7});
    auto c = x - mean(x, {variant == 0 ? 1 : 2}, true);
    g.output("y", c * rsqrt(mean(c * c, {variant == 0 ? 2 : 1}, true) + 1e-5f));
    auto opt = optimize::optimize(g);
    EXPECT_EQ(count(*opt, Op::LayerNorm), 0) << "variant " << variant << "\n" << opt->to_string();
    Rng rng;
    expect_same_outputs(g, *opt, rng);
  }
}

// layer_norm takes x[, w[, b]]: a bias without a weight stays an add after the fused norm.
TEST(Optimize, LayerNormBiasWithoutWeightStaysAnAdd) {
  Graph g;
  auto x = g.input("x", {2, 3, 11});
  auto b = g.input("b", {11});
  auto c = x - mean(x, {-1}, true);
  g.output("y", c * rsqrt(mean(c * c, {-1}, true) + 1e-5f) + b);
  auto opt = optimize::optimize(g);
  EXPECT_EQ(count(*opt, Op::LayerNorm), 1) << opt->to_string();
  EXPECT_EQ(count(*opt, Op::Add), 1) << opt->to_string();
  for (const Node& n : opt->nodes())
    if (n.op == Op::LayerNorm) {
      EXPECT_EQ(n.inputs.size(), 1u);
    }
  Rng rng;
  expect_same_outputs(g, *opt, rng);
}

// Linear's epilogue order is act(matmul + bias) + residual: a full-shape "bias" is a residual
// (matmul_add), not a bias; an activation after the residual stays an op; a residual that
// broadcasts the output up is not taken in.
TEST(Optimize, LinearEpilogueGuards) {
  Graph g;
  auto x = g.input("x", {5, 9}), w = g.input("w", {9, 6}), b = g.input("b", {6});
  auto full = g.input("full", {5, 6}), r = g.input("r", {5, 6}), big = g.input("big", {3, 5, 6});
  g.output("no_bias", matmul(x, w) + full);                 // [5,6] addend: matmul_add
  g.output("act_after_res", relu(matmul(x, w) + b + r));    // linear with residual, then relu
  g.output("res_broadcasts_up", (matmul(x, w) + b) + big);  // [3,5,6]: larger than the linear
  auto opt = optimize::optimize(g);
  SCOPED_TRACE(opt->to_string());
  EXPECT_EQ(count(*opt, Op::Relu), 1);
  EXPECT_EQ(count(*opt, Op::MatMulAdd), 1);
  EXPECT_EQ(count(*opt, Op::Add), 1);  // the [3,5,6] residual
  for (const Node& n : opt->nodes())
    if (n.op == Op::Linear) {
      EXPECT_EQ(n.attrs.count, kLinearNone);
    }
  Rng rng;
  expect_same_outputs(g, *opt, rng);
}

// GELU's constants are matched by value: a different coefficient is not gelu_tanh.
TEST(Optimize, GeluWithOtherConstantsIsNotFused) {
  Graph g;
  auto x = g.input("x", {3, 9});
  g.output("y", 0.5f * x * (1.0f + tanh(0.79f * (x + 0.044715f * pow(x, 3.0f)))));
  auto opt = optimize::optimize(g);
  EXPECT_EQ(count(*opt, Op::GeluTanh), 0) << opt->to_string();
  Rng rng;
  expect_same_outputs(g, *opt, rng);
}

// Inputs and parameters survive with their names, even unused ones; outputs keep their names.
// A scatter_add whose base nothing else reads adds into the base's bytes (no "copy base" pass);
// a base that is also an output, or read again, is copied first. Values as the reference.
TEST(Optimize, ScatterIntoADyingTensorRunsInPlace) {
  for (bool base_read_again : {false, true}) {
    SCOPED_TRACE(base_read_again ? "base read again" : "base dies");
    Graph g;
    const std::vector<int32_t> idx = {3, 0, 3, 9};
    Tensor x = g.input("x", {10, 6}), u = g.input("u", {4, 6});
    Tensor base = exp(x);
    Tensor y = scatter_add(base, g.constant(std::span<const int32_t>(idx), {4}), u);
    g.output("y", base_read_again ? y * base : y);
    Session s = build_inference_session(g);
    EXPECT_EQ(s.listing().find("copy base") != std::string::npos, base_read_again) << s.listing();
    Rng rng;
    const std::vector<float> xv = rng.floats(60, -1, 1), uv = rng.floats(24, -1, 1);
    s.set_input("x", mntest::host_f32({10, 6}, xv));
    s.set_input("u", mntest::host_f32({4, 6}, uv));
    s.step();
    const std::vector<float> got = s.read_output("y").to_f32();
    for (int r = 0; r < 10; ++r)
      for (int c = 0; c < 6; ++c) {
        double b = std::exp(double(xv[r * 6 + c])), want = b;
        for (size_t k = 0; k < idx.size(); ++k)
          if (idx[k] == r) want += uv[k * 6 + c];
        if (base_read_again) want *= b;
        ASSERT_NEAR(got[r * 6 + c], want, 1e-5 * (1 + std::abs(want)))
            << r << "," << c << " " << mntest::seed_note(rng.seed());
      }
  }
}

// A residual block's gradient: d x = d h + norm_backward(...). The norm backward adds d h as it
// stores (one dispatch, labelled "+ %"); gradients as the unfused session's, for rms_norm and
// layer_norm, a row longer than the workgroup.
TEST(Optimize, NormBackwardJoinsTheResidualGradient) {
  for (bool layer : {false, true}) {
    SCOPED_TRACE(layer ? "layer_norm" : "rms_norm");
    Graph g;
    Tensor x = g.parameter("x", {3, 7, 300}), w = g.parameter("w", {300}), v = g.parameter("v", {300, 300});
    Tensor n = layer ? layer_norm(x, w) : rms_norm(x, w);
    Tensor h = x + matmul(n, v);
    Tensor loss = mean(h * h);
    g.output("loss", loss);
    TrainConfig cfg;
    cfg.optimizer = SGD{.lr = 0.0f};
    TrainConfig off = cfg;
    off.optimize = false;
    Session fused = build_session(g, loss, cfg), plain = build_session(g, loss, off);
    EXPECT_NE(fused.listing().find("norm_backward"), std::string::npos);
    EXPECT_NE(fused.listing().find("+ %"), std::string::npos) << fused.listing();
    EXPECT_LT(fused.stats().dispatches, plain.stats().dispatches);
    Rng rng;
    for (const char* name : {"x", "w", "v"}) {
      const Shape shape = std::string(name) == "x"   ? Shape{3, 7, 300}
                          : std::string(name) == "w" ? Shape{300}
                                                     : Shape{300, 300};
      HostTensor t = mntest::host_f32(shape, rng.floats(numel(shape), -1, 1));
      fused.set_parameter(name, t);
      plain.set_parameter(name, t);
    }
    fused.step();
    plain.step();
    const std::vector<float> a = fused.read_grad("x").to_f32(), b = plain.read_grad("x").to_f32();
    double scale = 1e-30;
    for (float e : b) scale = std::max(scale, static_cast<double>(std::abs(e)));
    for (size_t i = 0; i < a.size(); ++i)
      ASSERT_NEAR(a[i], b[i], 1e-4 * scale) << "d x " << i << " " << mntest::seed_note(rng.seed());
  }
}

// sum / mean of a product nothing else reads is one reduction mapping a * b (no mul dispatch):
// over the last axis (16-byte reads), over outer axes (strided), and a product also read
// elsewhere, which stays a dispatch of its own.
TEST(Optimize, ReductionOfAProductMapsIt) {
  Graph g;
  Tensor a = g.input("a", {3, 37, 301}), b = g.input("b", {3, 37, 301}), c = g.input("c", {5, 8}),
         d = g.input("d", {5, 8});
  g.output("rows", sum(a * b, {2}));
  g.output("cols", mean(g.input("e", {4, 6, 9}) * g.input("f", {4, 6, 9}), {0, 2}));
  Tensor cd = c * d;
  g.output("kept", sum(cd, {0}) + cd);
  Session fused = build_inference_session(g), plain = build_inference_session(g, {.optimize = false});
  int muls = 0;
  std::istringstream lines(fused.listing());
  for (std::string line; std::getline(lines, line);)
    muls += line.rfind("dispatch", 0) == 0 && line.find(" mul %") != std::string::npos;
  EXPECT_EQ(muls, 1) << fused.listing();  // only c * d, which the add reads too
  Rng rng;
  mntest::step_both(fused, plain, g, rng, -1, 1);
  for (const char* out : {"rows", "cols", "kept"}) {
    const std::vector<float> x = fused.read_output(out).to_f32(), y = plain.read_output(out).to_f32();
    ASSERT_EQ(x.size(), y.size()) << out;
    for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(x[i], y[i], 1e-5 * (1 + std::abs(y[i]))) << out << " " << i;
  }
}

TEST(Optimize, KeepsNamesOfInputsParametersAndOutputs) {
  Graph g;
  auto x = g.input("x", {3});
  g.parameter("unused", {2});
  auto w = g.parameter("w", {3});
  g.output("first", x * w);
  g.output("second", -(-x));
  auto opt = optimize::optimize(g);
  std::vector<std::string> names;
  for (const Node& n : opt->nodes())
    if (n.op == Op::Input || n.op == Op::Parameter) names.push_back(n.name);
  EXPECT_THAT(names, ::testing::ElementsAre("x", "unused", "w"));
  ASSERT_EQ(opt->outputs().size(), 2u);
  EXPECT_EQ(opt->outputs()[0].first, "first");
  EXPECT_EQ(opt->outputs()[1].first, "second");
}

}  // namespace
