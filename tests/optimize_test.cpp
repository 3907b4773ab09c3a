// The optimizer's rules on real graphs: each before-graph is written from primitives; the
// optimized graph must contain the expected fused op (and not the primitives it replaces), and
// its session must give the unoptimized session's outputs on random inputs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include "meganeura/meganeura.hpp"
#include "optimize/optimize.hpp"
#include "test_util.hpp"

namespace {

using namespace meganeura;
using mntest::Rng;

int count(const Graph& g, Op op) {
  int n = 0;
  for (const Node& node : g.nodes()) n += node.op == op;
  return n;
}

// Runs g and its optimized form on the same random inputs; outputs must agree to 1e-5.
void expect_same_outputs(const Graph& g, const Graph& opt, Rng& rng) {
  Session a = build_inference_session(g), b = build_inference_session(opt);
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
    ASSERT_EQ(x.size(), y.size());
    double scale = 1e-30;
    for (float v : x) scale = std::max(scale, static_cast<double>(std::abs(v)));
    for (size_t i = 0; i < x.size(); ++i)
      ASSERT_NEAR(x[i], y[i], 1e-5 * scale) << "output " << name << " element " << i << ", " << mntest::seed_note(rng.seed());
  }
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
  if (c.fused != Op::Input) EXPECT_GE(count(*opt, c.fused), 1);
  EXPECT_EQ(count(*opt, c.gone), 0);
  Rng rng;
  expect_same_outputs(g, *opt, rng);
}

const RuleCase kCases[] = {
    {"silu", [](Graph& g) { auto x = g.input("x", {7, 33}); g.output("y", x * sigmoid(x)); }, Op::Silu, Op::Sigmoid},
    {"silu_swapped", [](Graph& g) { auto x = g.input("x", {2, 3, 5, 7}); g.output("y", sigmoid(x) * x); }, Op::Silu, Op::Sigmoid},
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
    {"neg_neg", [](Graph& g) { auto x = g.input("x", {9}); g.output("y", exp(-(-x))); }, Op::Input, Op::Neg},
    {"mul_one", [](Graph& g) { auto x = g.input("x", {4, 6}); g.output("y", exp(x * 1.0f)); }, Op::Input, Op::Mul},
    {"add_zero", [](Graph& g) { auto x = g.input("x", {4, 6}); g.output("y", exp(0.0f + x)); }, Op::Input, Op::Add},
    {"transpose_twice", [](Graph& g) { auto x = g.input("x", {4, 6, 3}); g.output("y", exp(transpose(transpose(x, 0, 2), 0, 2))); },
     Op::Input, Op::Permute},
    {"reshape_chain",
     [](Graph& g) {
       auto x = g.input("x", {4, 6});
       g.output("y", exp(reshape(reshape(reshape(x, {24}), {2, 12}), {4, 6})));
     },
     Op::Input, Op::Reshape},
};

INSTANTIATE_TEST_SUITE_P(Rules, RuleTest, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

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

// Inputs and parameters survive with their names, even unused ones; outputs keep their names.
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
