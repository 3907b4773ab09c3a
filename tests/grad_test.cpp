// Every differentiable op's gradient on the device against the CPU reference gradient in double
// (tests/reference_grad.cpp), itself checked against central finite differences; cases in
// grad_cases_*.cpp. The table is checked against the op table: an op with a gradient rule and
// no case fails the suite.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "grad_case.hpp"
#include "meganeura/autodiff.hpp"

namespace mntest {
namespace {

using namespace meganeura;

class OpGrad : public ::testing::TestWithParam<size_t> {};

TEST_P(OpGrad, MatchesReference) {
  const GradCase& c = grad_cases().at(GetParam());
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  SCOPED_TRACE(std::string(op_name(c.op)) + " / " + c.name);
  GradBuilder b(rng);
  c.build(b);
  bool has_op = false;
  for (const auto& n : b.g.nodes()) has_op = has_op || n.op == c.op;
  ASSERT_TRUE(has_op) << "the case's graph does not contain " << op_name(c.op);
  run_grad_case(b);
}

std::string case_name(const ::testing::TestParamInfo<size_t>& info) {
  const GradCase& c = grad_cases().at(info.param);
  return test_name(std::string(op_name(c.op)) + "_" + c.name) + "_" + std::to_string(info.param);
}

INSTANTIATE_TEST_SUITE_P(Table, OpGrad, ::testing::Range<size_t>(0, grad_cases().size()), case_name);

TEST(GradTable, EveryDifferentiableOpHasGradientCases) {
  std::map<Op, int> n;
  for (const auto& c : grad_cases()) ++n[c.op];
  std::vector<std::string> missing;
  for (int i = 0; i < op_count(); ++i) {
    const Op op = op_at(i);
    if (has_gradient(op) && n[op] < 2)
      missing.push_back(std::string(op_name(op)) + " (" + std::to_string(n[op]) + " cases)");
  }
  EXPECT_TRUE(missing.empty()) << "differentiable ops with fewer than 2 gradient cases: "
                               << ::testing::PrintToString(missing);
}

// The gradient-rule column of the op table, as written in op_list.hpp.
std::map<Op, std::string> gradient_rules() {
  std::map<Op, std::string> m;
#define MN_GRAD_RULE(e, name, kind, lo, hi, rule, grad, lowering) m[Op::e] = #grad;
  MN_OP_LIST(MN_GRAD_RULE)
#undef MN_GRAD_RULE
  return m;
}

bool is_backward_op(Op op) {
  const std::string_view n = op_name(op);
  auto ends = [&](std::string_view s) { return n.size() >= s.size() && n.substr(n.size() - s.size()) == s; };
  return ends("_backward") || ends("_weight_grad");
}

TEST(GradTable, HasGradientFalseExactlyForLeavesMasksIndicesAndBackwardOps) {
  const auto rules = gradient_rules();
  ASSERT_EQ(static_cast<int>(rules.size()), op_count());
  std::vector<std::string> wrong;
  for (int i = 0; i < op_count(); ++i) {
    const Op op = op_at(i);
    const bool none = op_kind(op) == OpKind::Leaf || op_kind(op) == OpKind::Train || op_kind(op) == OpKind::Compare ||
                      op == Op::ArgMax || op == Op::OneHot || op == Op::CacheWrite || op == Op::Assign ||
                      is_backward_op(op);  // cache_write, assign: state written in place
    if (has_gradient(op) == none)
      wrong.push_back(std::string(op_name(op)) +
                      (none ? ": has_gradient true, expected false" : ": has_gradient false, expected true"));
    const std::string& rule = rules.at(op);
    const bool rule_none = rule == "grad_none" || rule == "grad_unsupported";
    if (rule_none != none) wrong.push_back(std::string(op_name(op)) + ": the table's gradient rule is " + rule);
    if (is_backward_op(op) && rule != "grad_unsupported")
      wrong.push_back(std::string(op_name(op)) + ": a backward op should be grad_unsupported, is " + rule);
  }
  EXPECT_TRUE(wrong.empty()) << ::testing::PrintToString(wrong);
}

// A dedicated check of the reference's tie conventions on hand-computed values (the tie cases
// cannot be checked by finite differences).
TEST(ReferenceGrad, TieConventionsByHand) {
  Graph g;
  auto a = g.parameter("a", {4});
  auto b = g.parameter("b", {4});
  auto m = maximum(a, b);
  auto n = minimum(a, b);
  auto x = g.parameter("x", {2, 3});
  auto mx = max(x, {1});
  std::map<std::string, HostTensor> feeds;
  feeds["a"] = host_f32({4}, {1, 2, 3, -2});
  feeds["b"] = host_f32({4}, {1, 0, 3, 5});
  feeds["x"] = host_f32({2, 3}, {1, 3, 3, 2, 2, 2});
  const auto vals = evaluate(g, feeds);
  RefTensor c4{{4}, f32, {1, 1, 1, 1}};
  auto gm = reference_backward(g, vals, m.id(), c4, {a.id(), b.id()});
  EXPECT_EQ(gm[0].v, (std::vector<double>{0.5, 1, 0.5, 0}));
  EXPECT_EQ(gm[1].v, (std::vector<double>{0.5, 0, 0.5, 1}));
  auto gn = reference_backward(g, vals, n.id(), c4, {a.id(), b.id()});
  EXPECT_EQ(gn[0].v, (std::vector<double>{0.5, 0, 0.5, 1}));
  EXPECT_EQ(gn[1].v, (std::vector<double>{0.5, 1, 0.5, 0}));
  RefTensor c2{{2}, f32, {6, 3}};
  auto gx = reference_backward(g, vals, mx.id(), c2, {x.id()});
  EXPECT_EQ(gx[0].v, (std::vector<double>{0, 3, 3, 1, 1, 1}));
  // relu'(0) = abs'(0) = 0
  auto z = g.parameter("z", {3});
  feeds["z"] = host_f32({3}, {0.0f, -0.0f, 2.0f});
  auto r = relu(z);
  auto s = abs(z);
  const auto v2 = evaluate(g, feeds);
  RefTensor c3{{3}, f32, {1, 1, 1}};
  EXPECT_EQ(reference_backward(g, v2, r.id(), c3, {z.id()})[0].v, (std::vector<double>{0, 0, 1}));
  EXPECT_EQ(reference_backward(g, v2, s.id(), c3, {z.id()})[0].v, (std::vector<double>{0, 0, 1}));
}

}  // namespace
}  // namespace mntest
