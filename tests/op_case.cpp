#include "op_case.hpp"

namespace mntest {

using meganeura::HostTensor;
using meganeura::Shape;
using meganeura::Tensor;

Tensor CaseBuilder::input(const std::string& name, const Shape& s, double lo, double hi) {
  return input_host(name, host_f32(s, rng.floats(meganeura::numel(s), lo, hi)));
}

Tensor CaseBuilder::input_away(const std::string& name, const Shape& s, double lo, double hi) {
  return input_host(name, host_f32(s, rng.floats_away(meganeura::numel(s), lo, hi)));
}

Tensor CaseBuilder::input_small_ints(const std::string& name, const Shape& s, int lo, int hi) {
  return input_host(name, host_f32(s, rng.small_ints(meganeura::numel(s), lo, hi)));
}

Tensor CaseBuilder::input_ints(const std::string& name, const Shape& s, int64_t lo, int64_t hi, meganeura::DType t) {
  const int64_t n = meganeura::numel(s);
  return input_host(name, t == meganeura::u32 ? host_u32(s, rng.uints(n, lo, hi)) : host_i32(s, rng.ints(n, lo, hi)));
}

Tensor CaseBuilder::input_host(const std::string& name, const HostTensor& h) {
  feeds[name] = h;
  return g.input(name, h.shape, h.dtype);
}

Tensor CaseBuilder::param_host(const std::string& name, const HostTensor& h) {
  feeds[name] = h;
  return g.parameter(name, h.shape, h.dtype);
}

Tensor CaseBuilder::param(const std::string& name, const Shape& s, double lo, double hi) {
  return param_host(name, host_f32(s, rng.floats(meganeura::numel(s), lo, hi)));
}

std::vector<OpCase>& op_cases() {
  static std::vector<OpCase> cases;
  return cases;
}

Register::Register(std::vector<OpCase> cases) {
  auto& all = op_cases();
  for (auto& c : cases) all.push_back(std::move(c));
}

void feed(meganeura::Session& s, const CaseBuilder& b) {
  for (const auto& n : b.g.nodes()) {
    if (n.op != meganeura::Op::Input && n.op != meganeura::Op::Parameter) continue;
    const HostTensor& h = b.feeds.at(n.name);
    if (n.op == meganeura::Op::Input)
      s.set_input(n.name, h);
    else
      s.set_parameter(n.name, h);
  }
}

void check_outputs(const meganeura::Session& s, const CaseBuilder& b) {
  const auto ref = evaluate(b.g, b.feeds);
  for (const auto& [name, id] : b.g.outputs()) {
    const HostTensor got = s.read_output(name);
    EXPECT_TRUE(compare(ref.at(static_cast<size_t>(id)), got, b.rtol, "output '" + name + "'", b.scale));
  }
}

void run_case(CaseBuilder& b) {
  // The kernel under test runs as written: the optimizer (tested in optimize_test) could rewrite it;
  // the *_optimized runs of the table turn it (and elementwise fusion) on.
  meganeura::Session s = meganeura::build_inference_session(b.g, {.optimize = optimized_run()});
  feed(s, b);
  s.step();
  check_outputs(s, b);
}

}  // namespace mntest
