// A fusion group as one generated pointwise kernel: its expression (kernels::PointwiseExpr), its
// params block (sizes and strides, so the source stays the same for every size) and its call.
#include <map>

#include "kernels/pointwise_source.hpp"
#include "lower/emit/emitters.hpp"
#include "meganeura/error.hpp"

namespace meganeura::lower {

using kernels::PointwiseValue;

namespace {

PointwiseValue member_value(const Node& n, const Graph& g, const std::map<int, int>& value_of) {
  PointwiseValue v;
  v.dtype = dtype_code(n.dtype);
  v.what = std::string(op_name(n.op));
  for (size_t k = 0; k < n.inputs.size(); ++k) v.args[k] = value_of.at(n.inputs[k]);
  const DType first = g.node(n.inputs[0]).dtype;
  switch (op_kind(n.op)) {
    case OpKind::Unary:
      v.kind = PointwiseValue::Unary;
      v.op = ew_op(n.op);
      v.scalar = static_cast<float>(n.attrs.scalar);  // as the Elementwise kernel gets it
      break;
    case OpKind::Binary:
      v.kind = PointwiseValue::Binary;
      v.op = ew_op(n.op);
      break;
    case OpKind::Compare:
      v.kind = PointwiseValue::Compare;
      v.op = ew_op(n.op);
      v.operand_dtype = dtype_code(first);
      break;
    case OpKind::Select:
      v.kind = PointwiseValue::Where;
      v.operand_dtype = dtype_code(first);
      break;
    case OpKind::Convert:
      v.kind = PointwiseValue::Convert;
      v.operand_dtype = dtype_code(first);
      break;
    default: throw Error("internal: " + v.what + " in a fused elementwise group");
  }
  return v;
}

std::string label(const Graph& g, const DispatchGroup& grp, const std::string& name) {
  std::string s = name + " %" + std::to_string(grp.anchor);
  for (size_t k = 0; k < grp.reads.size(); ++k) s.append(k ? "," : " ").append(shape_str(g.node(grp.reads[k]).shape));
  const Node& root = g.node(grp.anchor);
  s += " -> " + shape_str(root.shape);
  if (!root.name.empty()) s += " (" + root.name + ")";
  return s;
}

}  // namespace

void emit_pointwise(Emitter& e, const DispatchGroup& grp) {
  const Graph& g = e.graph();
  const Node& root = g.node(grp.anchor);
  kernels::PointwiseExpr expr;
  expr.inputs = static_cast<uint32_t>(grp.reads.size());
  std::map<int, int> value_of;  // node -> value index
  for (size_t j = 0; j < grp.reads.size(); ++j) {
    PointwiseValue load;
    load.input = static_cast<int>(j);
    load.dtype = dtype_code(g.node(grp.reads[j]).dtype);
    load.what = "input " + std::to_string(j);
    value_of[grp.reads[j]] = static_cast<int>(expr.values.size());
    expr.values.push_back(load);
  }
  std::string ops;
  for (int m : grp.nodes) {
    value_of[m] = static_cast<int>(expr.values.size());
    expr.values.push_back(member_value(g.node(m), g, value_of));
    ops.append(ops.empty() ? "" : ",").append(op_name(g.node(m).op));
  }
  kernels::GeneratedKernel kernel{"fused[" + ops + "]", kernels::pointwise_source(expr)};

  // Inputs read at broadcast strides over the root's shape; the output is contiguous.
  Shape shape = root.shape;
  std::vector<Strides> strides;
  for (int in : grp.reads) strides.push_back(broadcast_strides(g.node(in).shape, root.shape));
  strides.push_back(contiguous_strides(root.shape));
  collapse(shape, strides);
  kernels::PointwiseParams p{};
  p.n = u32(numel(shape), "fused element count");
  p.rank = static_cast<uint32_t>(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    p.shape[d] = u32(shape[d], "dimension");
    for (size_t j = 0; j < grp.reads.size(); ++j)
      p.in_stride[j * kernels::kMaxKernelRank + d] = u32(strides[j][d], "stride");
  }
  const std::string call_label = label(g, grp, kernel.name);
  KernelCall& c = e.generated_call(std::move(kernel), grp.anchor, call_label);
  for (int in : grp.reads) c.tensors.push_back({in, false});
  c.tensors.push_back({grp.anchor, true});
  c.groups = {groups_for(p.n), 1, 1};
  Emitter::set_params(c, p);
}

}  // namespace meganeura::lower
