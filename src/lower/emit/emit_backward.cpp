// The fused backward ops that autodiff emits: each is one kernel (or a statistics pass plus one
// kernel) where the unfused form would need a big temporary. gelu/gelu_tanh/silu_backward are
// plain elementwise binaries and lower through emit_elementwise.
#include <algorithm>

#include "lower/emit/emitters.hpp"
#include "meganeura/error.hpp"

namespace meganeura::lower {

using namespace kernels;

static uint32_t row_groups(uint32_t rows) { return std::clamp<uint32_t>(rows, 1, kMaxGroups); }

// (y, dy) -> dx along attrs.axis; y is the forward output.
static void emit_softmax_backward(Emitter& e, int id) {
  const Node& n = e.node(id);
  SoftmaxParams p = softmax_params(n.shape, n.attrs.axis);
  KernelCall& c = e.call(Kernel::SoftmaxBackward, id, "");
  c.spec = {n.op == Op::LogSoftmaxBackward ? 1u : 0u};
  c.tensors = {{n.inputs[0], false}, {n.inputs[1], false}, {id, true}};
  c.groups = {row_groups(p.outer * p.inner), 1, 1};
  Emitter::set_params(c, p);
}

// (x, dy[, w]) -> dx; with `add` >= 0, the add node reading dx and another tensor: dx + that,
// written as the add's tensor (dx itself is never stored).
void emit_norm_backward(Emitter& e, int id, int add) {
  const Node& n = e.node(id);
  NormParams p = norm_params(n.shape, n.attrs.scalar);
  int x = n.inputs[0];
  bool has_w = n.inputs.size() > 2;
  const int out = add >= 0 ? add : id;
  int addend = x;
  if (add >= 0) addend = e.node(add).inputs[0] == id ? e.node(add).inputs[1] : e.node(add).inputs[0];
  KernelCall& c =
      e.call(Kernel::NormBackward, id, add >= 0 ? "+ %" + std::to_string(addend) + " -> %" + std::to_string(add) : "");
  c.spec = {n.op == Op::RmsNormBackward ? NORM_RMS : NORM_LAYER, has_w ? 1u : 0u, add >= 0 ? 1u : 0u};
  // The row statistics, for the weight gradient of the same x and dy where it is emitted later.
  const int stats = e.scratch(uint64_t{p.rows} * 8);
  e.set_norm_stats(x, n.inputs[1], n.op == Op::RmsNormBackward, stats);
  c.spec.push_back(1u);  // WRITE_STATS
  c.tensors = {{x, false},   {has_w ? n.inputs[2] : x, false}, {n.inputs[1], false}, {out, true}, {addend, false},
               {stats, true}};
  c.groups = {row_groups(p.rows), 1, 1};
  Emitter::set_params(c, p);
}

// (x, dy) -> dw [D]: sums dy * xhat per column, with the row statistics the norm backward of the
// same x and dy wrote, or (none emitted before it) working them out in the same pass.
static void emit_norm_weight_grad(Emitter& e, int id) {
  const Node& n = e.node(id);
  int x = n.inputs[0];
  NormParams p = norm_params(e.node(x).shape, n.attrs.scalar);
  const int stats = e.norm_stats(x, n.inputs[1], n.op == Op::RmsNormWeightGrad);
  KernelCall& c = e.call(Kernel::NormWeightGrad, id, stats >= 0 ? "row statistics from the backward" : "");
  c.spec = {n.op == Op::RmsNormWeightGrad ? NORM_RMS : NORM_LAYER, stats >= 0 ? 1u : 0u};
  c.tensors = {{x, false}, {n.inputs[1], false}, {id, true}, {stats >= 0 ? stats : x, false}};
  c.groups = {groups_for(p.dim, 16), 1, 1};  // 16 columns per workgroup (norm_weight_grad.comp)
  Emitter::set_params(c, p);
}

// (logits, labels, dloss) -> dlogits: the count of labels that are not ignored, then one pass;
// where the labels are few against a row (at most 1/16 of its logits), every workgroup of the
// pass counts them itself and the counting dispatch goes.
static void emit_cross_entropy_backward(Emitter& e, int id) {
  const Node& n = e.node(id);
  const Shape& logits = e.node(n.inputs[0]).shape;
  CrossEntropyParams p{};
  p.classes = u32(logits.back(), "classes");
  p.rows = u32(numel(logits) / logits.back(), "rows");
  p.ignore_index = static_cast<int32_t>(n.attrs.ignore_index);
  p.node = static_cast<uint32_t>(id);
  const bool count_here = uint64_t{p.rows} * 16 <= p.classes;
  int count = n.inputs[1];  // not read where the pass counts
  if (!count_here) {
    count = e.scratch(4);
    KernelCall& k = e.call(Kernel::CrossEntropyCount, id, "count");
    k.tensors = {{n.inputs[1], false}, {count, true}};
    Emitter::set_params(k, p);
  }
  KernelCall& c = e.call(Kernel::CrossEntropyBackward, id, count_here ? "counts the labels" : "");
  c.spec = {count_here ? 1u : 0u};
  c.tensors = {{n.inputs[0], false}, {n.inputs[1], false}, {n.inputs[2], false}, {count, false}, {id, true}};
  c.groups = {row_groups(p.rows), 1, 1};
  Emitter::set_params(c, p);
}

// dy -> zeros of the full shape with dy copied into the slice's strided window.
static void emit_slice_backward(Emitter& e, int id) {
  const Node& n = e.node(id);
  int dy = n.inputs[0];
  const Shape& dy_shape = e.node(dy).shape;
  auto ax = static_cast<size_t>(n.attrs.axis);
  Strides out = contiguous_strides(n.shape);
  std::vector<uint32_t> bits = {DT_U32, DT_U32, DT_U32};
  if (dy_shape[ax] != n.shape[ax])  // some of the output lies outside the window
    e.elementwise(id, EW_FILL, n.shape, {{dy, 0, Strides(n.shape.size(), 0)}}, {id, 0, out}, {DT_F32, DT_F32, DT_F32},
                  0.0f, "zeros");
  if (numel(dy_shape) == 0) return;
  int64_t offset = n.attrs.start * out[ax];
  out[ax] *= n.attrs.step;
  e.elementwise(id, EW_COPY, dy_shape, {{dy, 0, contiguous_strides(dy_shape)}}, {id, offset, out}, bits, 0, "window");
}

void emit_backward(Emitter& e, int id) {
  switch (e.node(id).op) {
    case Op::SoftmaxBackward:
    case Op::LogSoftmaxBackward: return emit_softmax_backward(e, id);
    case Op::RmsNormBackward:
    case Op::LayerNormBackward: return emit_norm_backward(e, id);
    case Op::RmsNormWeightGrad:
    case Op::LayerNormWeightGrad: return emit_norm_weight_grad(e, id);
    case Op::CrossEntropyBackward: return emit_cross_entropy_backward(e, id);
    case Op::SliceBackward: return emit_slice_backward(e, id);
    default: throw Error("internal: " + std::string(op_name(e.node(id).op)) + " is not a fused backward op");
  }
}

}  // namespace meganeura::lower
