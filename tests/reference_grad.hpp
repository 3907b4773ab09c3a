// A CPU reference of reverse-mode gradients in double: one vector-Jacobian product per
// differentiable op, written from PyTorch's semantics independently of src/autodiff, and a
// whole-graph backward built on the forward reference (reference.hpp). The gradient tests check
// it against central finite differences of the forward reference before trusting it.
#pragma once
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "meganeura/graph.hpp"
#include "reference.hpp"

namespace mntest {

// The cotangents of a node's inputs given the node (op, attrs), its input values, its output
// value and the cotangent of its output. One entry per input; std::nullopt where the input carries
// no gradient (integer operands, masks, conditions, labels). Gradients are f32-typed tensors of
// the input's shape. PyTorch conventions at kinks: relu'(0) = abs'(0) = 0; max splits the gradient
// evenly among tied maxima; maximum/minimum give half to each side of a tie. Throws
// ReferenceError for ops without a gradient rule.
std::vector<std::optional<RefTensor>> reference_vjp(const meganeura::Node& n,
                                                    const std::vector<const RefTensor*>& inputs,
                                                    const RefTensor& output, const RefTensor& cotangent);

// Propagates `cotangent` (the shape of node `output`) back through every node up to `output`,
// given the forward values of every node (evaluate()). Returns d sum(output * cotangent) / d x
// for each node id in `wrt`: an f32 tensor of the node's shape, zeros where x does not reach
// the output.
std::vector<RefTensor> reference_backward(const meganeura::Graph& g, const std::vector<RefTensor>& values, int output,
                                          const RefTensor& cotangent, const std::vector<int>& wrt);

// L = sum(output * cotangent) with the forward reference, for the finite-difference checks.
double reference_objective(const meganeura::Graph& g, const std::map<std::string, meganeura::HostTensor>& feeds,
                           int output, const RefTensor& cotangent);

struct FiniteDifferenceOptions {
  double rel_step = 1e-6;  // h = rel_step * max(|x|, 1)
  double tol = 1e-6;       // |fd - grad| <= tol * max(|grad|, mean |grad|, floor)
  int max_samples = 24;    // elements per tensor (all if the tensor is smaller)
};

// Checks `grads` (reference gradients of the leaves `wrt`, named by node id) against central
// differences of L = sum(output * cotangent) (the forward reference; L(x+h) - L(x-h) is summed
// from per-element output differences to avoid cancellation): each sampled element of each leaf is nudged up and down
// in its feed (an f32 copy of it, so f16/bf16 leaves are nudged finely). Samples are drawn from `rng`. Fails naming the
// leaf, the element, the difference quotient and the gradient.
::testing::AssertionResult check_finite_differences(const meganeura::Graph& g,
                                                    const std::map<std::string, meganeura::HostTensor>& feeds,
                                                    int output, const RefTensor& cotangent, const std::vector<int>& wrt,
                                                    const std::vector<RefTensor>& grads, std::mt19937_64& rng,
                                                    const FiniteDifferenceOptions& o = {});

}  // namespace mntest
