// What a gradient rule sees, and the table of rules (one per op-table row).
#pragma once
#include <vector>

#include "meganeura/graph.hpp"
#include "meganeura/ops.hpp"

namespace meganeura::autodiff {

class GradContext {
 public:
  GradContext(Graph& g, int node, Tensor dy, std::vector<Tensor>& cotangents, const std::vector<bool>& needed)
      : g_(g), node_(node), dy_(dy), ct_(cotangents), needed_(needed) {}

  Graph& graph() const { return g_; }
  const Node& node() const { return g_.node(node_); }
  const Attrs& attrs() const { return node().attrs; }
  Tensor out() const { return {&g_, node_}; }  // the forward output
  Tensor dy() const { return dy_; }            // its cotangent (f32, the output's shape)
  Tensor in(size_t i) const { return {&g_, node().inputs.at(i)}; }
  size_t inputs() const { return node().inputs.size(); }
  // Whether input i leads to a tensor we differentiate for (else its gradient is not built).
  bool needs(size_t i) const { return i < inputs() && needed_[static_cast<size_t>(node().inputs[i])]; }
  // Adds grad to input i's cotangent, first summing over the axes along which the input was
  // broadcast to grad's shape.
  void add(size_t i, Tensor grad);

  Tensor scalar(float v) const { return g_.scalar(v); }
  Tensor zeros(const Shape& s) const { return broadcast_to(g_.scalar(0.0f), s); }

 private:
  Graph& g_;
  int node_;
  Tensor dy_;
  std::vector<Tensor>& ct_;
  const std::vector<bool>& needed_;
};

using GradRule = void (*)(GradContext&);

#define MN_DECLARE_GRAD(e, name, kind, lo, hi, rule, grad, lowering) void grad(GradContext&);
MN_OP_LIST(MN_DECLARE_GRAD)
#undef MN_DECLARE_GRAD

GradRule grad_rule(Op op);

}  // namespace meganeura::autodiff
