// Gradient rules of data movement and indexing: each is the inverse movement of dy.
#include "autodiff/rules.hpp"

namespace meganeura::autodiff {

void grad_reshape(GradContext& c) { c.add(0, reshape(c.dy(), c.in(0).shape())); }

void grad_permute(GradContext& c) {
  const auto& perm = c.attrs().axes;
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  c.add(0, permute(c.dy(), inverse));
}

void grad_slice(GradContext& c) {
  Attrs a = c.attrs();
  a.count = c.in(0).shape()[static_cast<size_t>(a.axis)];
  c.add(0, c.graph().add(Op::SliceBackward, {c.dy()}, a));
}

void grad_concat(GradContext& c) {
  int64_t at = 0, axis = c.attrs().axis;
  for (size_t i = 0; i < c.inputs(); ++i) {
    int64_t len = c.in(i).shape()[static_cast<size_t>(axis)];
    if (c.needs(i)) c.add(i, slice(c.dy(), axis, at, at + len));
    at += len;
  }
}

void grad_broadcast_to(GradContext& c) { c.add(0, c.dy()); }  // add() sums the broadcast axes

// Each other's gradient, with the same axis and window map (padding taps add nothing, and as a
// gradient read 0 whatever the forward's fill).
namespace {
Attrs index_gradient_attrs(const GradContext& c) {
  Attrs a = c.attrs();
  a.scalar = 0;
  return a;
}
}  // namespace

void grad_gather(GradContext& c) {
  Tensor x = c.in(0);
  c.add(0, c.graph().add(Op::ScatterAdd, {c.zeros(x.shape()), c.in(1), c.dy()}, index_gradient_attrs(c)));
}

void grad_scatter_add(GradContext& c) {
  if (c.needs(0)) c.add(0, c.dy());
  if (c.needs(2)) c.add(2, c.graph().add(Op::Gather, {c.dy(), c.in(1)}, index_gradient_attrs(c)));
}

}  // namespace meganeura::autodiff
