// Reverse-mode differentiation as a graph transform: one gradient rule per op (declared in the
// op table beside the op), applied from the loss back to the leaves.
#pragma once
#include <vector>

#include "meganeura/graph.hpp"

namespace meganeura {

// Appends to loss's graph the nodes computing d loss / d x for every x in `wrt` and returns
// them (same shape as x; f32). `loss` must be a rank-0 f32 tensor. An x the loss does not
// depend on gets a zero tensor. Integer and mask paths carry no gradient.
std::vector<Tensor> gradients(Tensor loss, const std::vector<Tensor>& wrt);

// The vector-Jacobian product: like gradients, but seeded with `cotangent` (shape of `output`)
// instead of 1: returns sum(output * cotangent)'s gradient w.r.t. each x.
std::vector<Tensor> vjp(Tensor output, Tensor cotangent, const std::vector<Tensor>& wrt);

// Whether the op has a gradient rule: false for leaves, integer/mask outputs (comparisons,
// argmax, one_hot) and the backward ops themselves (no second derivatives yet).
bool has_gradient(Op op);

}  // namespace meganeura
