// The gradient test table: each case builds a small forward graph around one op, names the
// tensor whose vector-Jacobian product is tested and the leaves to differentiate; the harness
// checks the CPU reference gradient against finite differences, then the GPU's vjp against it.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "op_case.hpp"
#include "reference_grad.hpp"

namespace mntest {

struct GradBuilder : CaseBuilder {
  explicit GradBuilder(Rng& rng) : CaseBuilder(rng) { rtol = 1e-4; }  // forward output: a sanity check

  meganeura::Tensor out;               // the tensor whose VJP is tested
  std::vector<meganeura::Tensor> wrt;  // leaves to differentiate; empty: every float parameter
  double grad_rtol = 1e-4;             // GPU gradient vs reference (the bound)
  double grad_scale = 0;               // floor of the gradient comparison's scale (see compare())
  FiniteDifferenceOptions fd;          // reference vs central differences
  bool fd_check = true;                // false: the case checks its reference by hand instead
  std::vector<float> cotangent;        // fixed cotangent values; empty: uniform in [-1, 1)
  bool loss_api = false;               // rank-0 out: use gradients(out, wrt) (seed 1), not vjp
  // Where fd_check is false (ties, 16-bit rounding): checks the reference gradients by hand.
  std::function<void(const std::vector<RefTensor>& grads, const RefTensor& cot)> hand_check;
};

struct GradCase {
  meganeura::Op op;  // the op under test: the table must hold cases for every differentiable op
  std::string name;
  std::function<void(GradBuilder&)> build;
};

std::vector<GradCase>& grad_cases();

struct RegisterGrad {
  explicit RegisterGrad(std::vector<GradCase> cases);
};

// Builds the case, checks the reference (finite differences or hand check), appends vjp to the
// graph, runs it on the device and compares the forward output and every gradient.
void run_grad_case(GradBuilder& b);

}  // namespace mntest
