#include "grad_case.hpp"

#include "meganeura/autodiff.hpp"

namespace mntest {

using meganeura::HostTensor;
using meganeura::Op;
using meganeura::Tensor;

std::vector<GradCase>& grad_cases() {
  static std::vector<GradCase> cases;
  return cases;
}

RegisterGrad::RegisterGrad(std::vector<GradCase> cases) {
  auto& all = grad_cases();
  for (auto& c : cases) all.push_back(std::move(c));
}

void run_grad_case(GradBuilder& b) {
  ASSERT_TRUE(b.out.valid()) << "the case names no output";
  if (b.wrt.empty())
    for (const auto& n : b.g.nodes())
      if (n.op == Op::Parameter && meganeura::is_float(n.dtype))
        b.wrt.emplace_back(&b.g, static_cast<int>(&n - b.g.nodes().data()));
  ASSERT_FALSE(b.wrt.empty()) << "the case differentiates nothing";
  const int out = b.out.id();
  std::vector<int> wrt_ids;
  for (const Tensor& t : b.wrt) wrt_ids.push_back(t.id());

  // The reference, on the forward graph alone (before vjp appends its nodes).
  const std::vector<RefTensor> vals = evaluate(b.g, b.feeds);
  const meganeura::Shape out_shape = b.out.shape();
  std::vector<float> cot = b.cotangent.empty() ? b.rng.floats(meganeura::numel(out_shape), -1, 1) : b.cotangent;
  if (b.loss_api) {
    ASSERT_TRUE(out_shape.empty()) << "gradients() takes a rank-0 loss";
    cot = {1.0f};
  }
  ASSERT_EQ(static_cast<int64_t>(cot.size()), meganeura::numel(out_shape));
  RefTensor cot_ref;
  cot_ref.shape = out_shape;
  cot_ref.v.assign(cot.begin(), cot.end());
  const std::vector<RefTensor> ref = reference_backward(b.g, vals, out, cot_ref, wrt_ids);
  if (b.fd_check)
    EXPECT_TRUE(check_finite_differences(b.g, b.feeds, out, cot_ref, wrt_ids, ref, b.rng.engine(), b.fd))
        << "(the reference gradient is wrong: fix tests/reference_grad.cpp before trusting the GPU comparison)";
  else {
    ASSERT_TRUE(static_cast<bool>(b.hand_check)) << "a case without the finite-difference check needs a hand check";
    b.hand_check(ref, cot_ref);
  }

  // The device: cotangent as an input, gradients as outputs.
  const std::vector<Tensor> grads = b.loss_api
                                        ? meganeura::gradients(b.out, b.wrt)
                                        : meganeura::vjp(b.out, b.input_host("cot", host_f32(out_shape, cot)), b.wrt);
  ASSERT_EQ(grads.size(), b.wrt.size());
  b.g.output("y", b.out);
  std::vector<std::string> names;
  for (size_t i = 0; i < grads.size(); ++i) {
    const auto& leaf = b.wrt[i].node();
    names.push_back(std::string("d_").append(leaf.name.empty() ? b.g.label(b.wrt[i].id()) : leaf.name));
    b.g.output(names.back(), grads[i]);
  }
  // The kernel under test runs as written: the optimizer (tested in optimize_test) could rewrite it;
  // the *_optimized runs of the table turn it (and elementwise fusion) on.
  meganeura::Session s = meganeura::build_inference_session(b.g, {.optimize = optimized_run()});
  feed(s, b);
  s.step();
  EXPECT_TRUE(compare(vals.at(static_cast<size_t>(out)), s.read_output("y"), b.rtol, "forward output", b.scale));
  for (size_t i = 0; i < grads.size(); ++i)
    EXPECT_TRUE(compare(ref[i], s.read_output(names[i]), b.grad_rtol, "gradient " + names[i], b.grad_scale));
}

}  // namespace mntest
