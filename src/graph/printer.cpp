// Graph::to_string: one line per node, e.g.
//   %5 = matmul(%3, %4) {transpose_b} : [2,4] f32  # blocks.0.attn
#include <sstream>

#include "graph/op_table.hpp"

namespace meganeura {

static std::string attrs_str(const Node& n) {
  const Attrs& a = n.attrs;
  const Attrs none;
  std::ostringstream o;
  auto sep = [&, first = true]() mutable -> std::ostream& {
    o << (first ? "" : ", ");
    first = false;
    return o;
  };
  if (a.axes != none.axes) {
    sep() << "axes=[";
    for (size_t i = 0; i < a.axes.size(); ++i) o << (i ? "," : "") << a.axes[i];
    o << "]";
  }
  OpKind k = op_kind(n.op);
  bool uses_axis =
      k == OpKind::Row || k == OpKind::Index || n.op == Op::Slice || n.op == Op::Concat || n.op == Op::ArgMax;
  if (uses_axis && n.op != Op::OneHot && n.op != Op::RmsNorm && n.op != Op::LayerNorm) sep() << "axis=" << a.axis;
  if (n.op == Op::Slice) sep() << "start=" << a.start << ", end=" << a.end << ", step=" << a.step;
  if (a.count != none.count) sep() << "count=" << a.count;
  if (n.op == Op::CrossEntropy) sep() << "ignore_index=" << a.ignore_index;
  const bool attention = n.op == Op::Attention || n.op == Op::AttentionBackward;
  if (a.scalar != none.scalar)
    sep() << (n.op == Op::PowScalar ? "exponent=" : attention ? "scale=" : "eps=") << a.scalar;
  if (a.window != none.window) sep() << "window=" << a.window;
  if (a.keepdim) sep() << "keepdim";
  if (a.transpose_a) sep() << "transpose_a";
  if (a.transpose_b) sep() << "transpose_b";
  if (a.seq_major) sep() << "seq_major";
  if (a.window_padding) sep() << "window_padding";
  if (n.op == Op::Cast) sep() << "to=" << dtype_name(a.dtype);
  std::string s = o.str();
  return s.empty() ? "" : " {" + s + "}";
}

std::string Graph::to_string() const {
  std::ostringstream o;
  for (int id = 0; id < size(); ++id) {
    const Node& n = node(id);
    o << "%" << id << " = " << op_name(n.op);
    if (n.op == Op::Input || n.op == Op::Parameter || n.op == Op::State)
      o << " \"" << n.name << "\"";
    else {
      o << "(";
      for (size_t i = 0; i < n.inputs.size(); ++i) o << (i ? ", " : "") << "%" << n.inputs[i];
      o << ")";
    }
    o << attrs_str(n) << " : " << shape_str(n.shape) << " " << dtype_name(n.dtype);
    if (!n.name.empty() && n.op != Op::Input && n.op != Op::Parameter && n.op != Op::State) o << "  # " << n.name;
    o << "\n";
  }
  for (auto& [name, id] : outputs_) o << "output \"" << name << "\" = %" << id << "\n";
  return o.str();
}

}  // namespace meganeura
