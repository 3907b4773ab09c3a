// An attention's d k and d v (two attention_backward nodes reading the same operands): one
// dispatch of the per-row kernel computes both.
#include "kernels/kernel_abi.hpp"
#include "lower/fuse/pass.hpp"

namespace meganeura::lower {

namespace {

bool dk_and_dv(const Graph& g, int a, int b) {
  const Node &x = g.node(a), &y = g.node(b);
  if (x.op != Op::AttentionBackward || y.op != Op::AttentionBackward || x.inputs != y.inputs) return false;
  Attrs ax = x.attrs, ay = y.attrs;
  using kernels::ATT_GRAD_K, kernels::ATT_GRAD_Q, kernels::ATT_GRAD_V;
  if (ax.axis + ay.axis != ATT_GRAD_K + ATT_GRAD_V || ax.axis == ATT_GRAD_Q || ay.axis == ATT_GRAD_Q) return false;
  ay.axis = ax.axis;
  return ax == ay;
}

}  // namespace

void attention_grad_pairs(PassContext& c, Grouping& groups) { pair_nodes(c, groups, Op::AttentionBackward, dk_and_dv); }

}  // namespace meganeura::lower
