// Every op of the op table against the CPU reference (cases in op_cases_*.cpp), plus a chain
// of ops that exercises memory reuse and barriers over two steps.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "op_case.hpp"

namespace mntest {
namespace {

using namespace meganeura;

class OpForward : public ::testing::TestWithParam<size_t> {};

TEST_P(OpForward, MatchesReference) {
  const OpCase& c = op_cases().at(GetParam());
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  SCOPED_TRACE(std::string(op_name(c.op)) + " / " + c.name);
  CaseBuilder b(rng);
  c.build(b);
  run_case(b);
}

std::string case_name(const ::testing::TestParamInfo<size_t>& info) {
  const OpCase& c = op_cases().at(info.param);
  return test_name(std::string(op_name(c.op)) + "_" + c.name) + "_" + std::to_string(info.param);
}

INSTANTIATE_TEST_SUITE_P(Table, OpForward, ::testing::Range<size_t>(0, op_cases().size()), case_name);

TEST(OpTable, EveryOpHasForwardCases) {
  std::map<Op, int> n;
  for (const auto& c : op_cases()) ++n[c.op];
  std::vector<std::string> missing;
  for (int i = 0; i < op_count(); ++i) {
    const Op op = op_at(i);
    if (op == Op::Input || op == Op::Parameter || op == Op::Constant) continue;  // leaves: every case
    if (op_kind(op) == OpKind::Train) continue;  // against the host trainer: tests/train_*_test.cpp
    if (n[op] < 3) missing.push_back(std::string(op_name(op)) + " (" + std::to_string(n[op]) + " cases)");
  }
  EXPECT_TRUE(missing.empty()) << "ops with fewer than 3 forward cases: " << ::testing::PrintToString(missing);
}

TEST(OpLeaves, InputParameterConstantScalar) {
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  CaseBuilder b(rng);
  auto x = b.input("x", {7, 33});
  auto w = b.param("w", {33});
  const std::vector<float> cv = rng.floats(33, -2, 2);
  auto c = b.g.constant(std::span<const float>(cv), {33});
  const std::vector<int32_t> iv = rng.ints(5, -9, 9);
  auto ci = b.g.constant(std::span<const int32_t>(iv), {5});
  b.output("x", x);  // an input read straight back
  b.output("w", w);  // a parameter read straight back
  b.output("c", c);
  b.output("ci", ci);
  b.output("y", (x * w + c) * 0.5f + b.g.scalar(1.25f));
  run_case(b);
}

// A chain of ops of several archetypes with branches: intermediates die early, so the planner
// reuses their bytes; two steps with different inputs must both match the reference.
TEST(OpChain, SeveralOpsTwoSteps) {
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  CaseBuilder b(rng);
  auto x = b.input("x", {5, 33, 67});
  auto w = b.param("w", {67, 65}, -0.2, 0.2);
  auto gamma = b.param("gamma", {65}, 0.5, 1.5);
  auto h = matmul(x, w);                 // [5,33,65]
  auto a = gelu(h) + sigmoid(h) * 0.5f;  // branch and join
  auto n = layer_norm(a, gamma);
  auto p = softmax(n, -1);
  auto s = sum(p * n, {1});          // [5,65]
  auto t = permute(n, {2, 0, 1});    // [65,5,33]
  auto sl = slice(t, 0, 1, 64, 3);   // [21,5,33]
  auto r = sl - max(sl, {2}, true);  // minus [21,5,1]
  b.output("s", s);
  b.output("r", relu(r) + exp(neg(abs(r))));
  b.output("mean", mean(h * h));  // no cancellation: a mean near 0 has no relative accuracy
  Session sess = build_inference_session(b.g);
  feed(sess, b);
  sess.step();
  check_outputs(sess, b);
  // Second step: new input values; parameters stay.
  b.feeds["x"] = host_f32({5, 33, 67}, rng.floats(5 * 33 * 67, -2, 2));
  sess.set_input("x", b.feeds["x"]);
  sess.step();
  check_outputs(sess, b);
}

}  // namespace
}  // namespace mntest
