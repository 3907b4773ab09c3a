// Data movement: permute, slice, broadcast_to and concat are strides and offsets of one copy
// kernel (Emitter::elementwise), not kernels of their own. Reshapes are views (no call).
#include "lower/emit/emitters.hpp"
#include "meganeura/error.hpp"

namespace meganeura::lower {

using namespace kernels;

void emit_movement(Emitter& e, int id) {
  const Node& n = e.node(id);
  const Shape& in_shape = e.node(n.inputs[0]).shape;
  Strides in_contig = contiguous_strides(in_shape), out_contig = contiguous_strides(n.shape);
  Operand out{id, 0, out_contig};
  std::vector<uint32_t> bits = {DT_U32, DT_U32, DT_U32};
  switch (n.op) {
    case Op::Permute: {
      Strides st;
      for (int64_t p : n.attrs.axes) st.push_back(in_contig[static_cast<size_t>(p)]);
      e.elementwise(id, EW_COPY, n.shape, {{n.inputs[0], 0, st}}, out, bits);
      break;
    }
    case Op::Slice: {
      auto ax = static_cast<size_t>(n.attrs.axis);
      Strides st = in_contig;
      st[ax] *= n.attrs.step;
      e.elementwise(id, EW_COPY, n.shape, {{n.inputs[0], n.attrs.start * in_contig[ax], st}}, out, bits);
      break;
    }
    case Op::BroadcastTo:
      e.elementwise(id, EW_COPY, n.shape, {{n.inputs[0], 0, broadcast_strides(in_shape, n.shape)}}, out, bits);
      break;
    case Op::Concat: {  // one copy per input, each into its window of the output
      auto ax = static_cast<size_t>(n.attrs.axis);
      int64_t at = 0;
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        const Shape& s = e.node(n.inputs[k]).shape;
        if (numel(s) > 0)
          e.elementwise(id, EW_COPY, s, {{n.inputs[k], 0, contiguous_strides(s)}},
                        {id, at * out_contig[ax], out_contig}, bits, 0, "part " + std::to_string(k));
        at += s[ax];
      }
      break;
    }
    default: throw Error("internal: " + std::string(op_name(n.op)) + " is not a movement op");
  }
}

}  // namespace meganeura::lower
