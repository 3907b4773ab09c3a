// The attention reference in double: softmax(q·kᵀ·scale [+ causal])·v and its vector-Jacobian
// product, written from the definition (the score matrix is built in full).
#pragma once
#include <vector>

#include "reference.hpp"

namespace mntest {

// out = attention(q, k, v[, position]) with the op's attributes (scale, causal, window) and shapes.
RefTensor attention_reference(const meganeura::Node& n, const RefTensor& q, const RefTensor& k, const RefTensor& v,
                              const RefTensor* position = nullptr);

// d q, d k, d v of sum(out * dout). With `delta` (one value per query row), ds uses it in place of
// rowsum(dout * out) — the backward op's own definition; without, it is computed.
void attention_reference_vjp(const meganeura::Node& n, const RefTensor& q, const RefTensor& k, const RefTensor& v,
                             const RefTensor& dout, const RefTensor* delta, const RefTensor* position, RefTensor& dq,
                             RefTensor& dk, RefTensor& dv);

}  // namespace mntest
