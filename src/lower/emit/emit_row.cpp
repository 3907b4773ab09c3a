// Row ops: softmax, log_softmax, rms_norm and layer_norm, a workgroup per row.
#include <algorithm>

#include "lower/emit/emitters.hpp"

namespace meganeura::lower {

using namespace kernels;

SoftmaxParams softmax_params(const Shape& s, int64_t axis) {
  auto ax = static_cast<size_t>(axis);
  SoftmaxParams p{};
  p.outer = u32(numel(Shape(s.begin(), s.begin() + axis)), "softmax outer");
  p.len = u32(s[ax], "softmax length");
  p.inner = u32(numel(Shape(s.begin() + axis + 1, s.end())), "softmax inner");
  return p;
}

NormParams norm_params(const Shape& x, double eps) {
  NormParams p{};
  p.dim = u32(x.back(), "normalised dimension");
  p.rows = u32(numel(x) / x.back(), "rows");
  p.eps = static_cast<float>(eps);
  return p;
}

void emit_row(Emitter& e, int id) {
  const Node& n = e.node(id);
  if (n.op == Op::Softmax || n.op == Op::LogSoftmax) {
    SoftmaxParams p = softmax_params(n.shape, n.attrs.axis);
    KernelCall& c = e.call(Kernel::Softmax, id, "");
    c.spec = {n.op == Op::LogSoftmax ? 1u : 0u};
    c.tensors = {{n.inputs[0], false}, {id, true}};
    c.groups = {std::min<uint32_t>(p.outer * p.inner, kMaxGroups), 1, 1};
    Emitter::set_params(c, p);
    return;
  }
  NormCallParams p{norm_params(n.shape, n.attrs.scalar), {}};
  const int staged = stage_rows_for_products(e, id, p.staged, true);  // before the call: it may add a scratch
  int x = n.inputs[0];
  bool has_w = n.inputs.size() > 1, has_b = n.inputs.size() > 2;
  KernelCall& c = e.call(Kernel::Norm, id, staged >= 0 ? "staged for the product" : "");
  c.spec = {n.op == Op::RmsNorm ? NORM_RMS : NORM_LAYER, has_w ? 1u : 0u, has_b ? 1u : 0u, staged >= 0 ? 1u : 0u};
  c.tensors = {{x, false},
               {has_w ? n.inputs[1] : x, false},
               {has_b ? n.inputs[2] : x, false},
               {id, true},
               {staged >= 0 ? staged : id, staged >= 0}};
  c.groups = {std::min<uint32_t>(staged >= 0 ? p.staged.padded_rows : p.norm.rows, kMaxGroups), 1, 1};
  Emitter::set_params(c, p);
}

}  // namespace meganeura::lower
