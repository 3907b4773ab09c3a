// Elementwise and data-movement ops: all are one strided kernel. Broadcasts, transposes,
// slices and concatenation are strides and offsets, not separate kernels.
#include "lower/emit.hpp"
#include "meganeura/error.hpp"

namespace meganeura::lower {

using namespace kernels;

void Emitter::elementwise(int node, uint32_t op, const Shape& shape, std::vector<Operand> inputs, Operand out,
                          std::vector<uint32_t> dtypes, float scalar, std::string what) {
  Shape s = shape;
  std::vector<Strides> st;
  for (auto& in : inputs) st.push_back(in.strides);
  st.push_back(out.strides);
  collapse(s, st);
  if (s.size() > kMaxKernelRank) throw ShapeError("internal: elementwise rank " + std::to_string(s.size()) + " after collapsing");
  ElementwiseParams p{};
  p.n = u32(numel(s), "elementwise element count");
  p.rank = static_cast<uint32_t>(s.size());
  p.out_offset = u32(out.offset, "output offset");
  p.scalar = scalar;
  for (size_t d = 0; d < s.size(); ++d) {
    p.shape[d] = u32(s[d], "dimension");
    p.out_stride[d] = u32(st.back()[d], "stride");
    for (size_t k = 0; k < inputs.size(); ++k) p.in_stride[k * kMaxKernelRank + d] = u32(st[k][d], "stride");
  }
  KernelCall& c = call(Kernel::Elementwise, node, std::move(what));
  for (size_t k = 0; k < inputs.size(); ++k) {
    p.in_offset[k] = u32(inputs[k].offset, "input offset");
    c.tensors.push_back({inputs[k].tensor, false});
  }
  while (c.tensors.size() < kElementwiseInputs) c.tensors.push_back({inputs[0].tensor, false});
  c.tensors.push_back({out.tensor, true});
  dtypes.resize(3, DT_F32);
  c.spec = {op, dtypes[0], dtypes[1], dtypes[2]};
  c.groups = {groups_for(p.n), 1, 1};
  set_params(c, p);
}

uint32_t ew_op(Op op) {
  switch (op) {
    case Op::Neg: return EW_NEG;
    case Op::Abs: return EW_ABS;
    case Op::Exp: return EW_EXP;
    case Op::Log: return EW_LOG;
    case Op::Sqrt: return EW_SQRT;
    case Op::Rsqrt: return EW_RSQRT;
    case Op::Reciprocal: return EW_RECIPROCAL;
    case Op::Relu: return EW_RELU;
    case Op::Gelu: return EW_GELU;
    case Op::GeluTanh: return EW_GELU_TANH;
    case Op::Silu: return EW_SILU;
    case Op::Sigmoid: return EW_SIGMOID;
    case Op::Tanh: return EW_TANH;
    case Op::Erf: return EW_ERF;
    case Op::Sin: return EW_SIN;
    case Op::Cos: return EW_COS;
    case Op::PowScalar: return EW_POW;
    case Op::Add: return EW_ADD;
    case Op::Sub: return EW_SUB;
    case Op::Mul: return EW_MUL;
    case Op::Div: return EW_DIV;
    case Op::Maximum: return EW_MAX;
    case Op::Minimum: return EW_MIN;
    case Op::SwiGlu: return EW_SWIGLU;  // (g, u): silu(g) * u
    case Op::Equal: return EW_EQ;
    case Op::NotEqual: return EW_NE;
    case Op::Less: return EW_LT;
    case Op::LessEqual: return EW_LE;
    case Op::Greater: return EW_GT;
    case Op::GreaterEqual: return EW_GE;
    case Op::Where: return EW_WHERE;
    case Op::GeluBackward: return EW_GELU_GRAD;  // (x, dy): dy * f'(x)
    case Op::GeluTanhBackward: return EW_GELU_TANH_GRAD;
    case Op::SiluBackward: return EW_SILU_GRAD;
    default: throw Error("internal: " + std::string(op_name(op)) + " is not elementwise");
  }
}

static void emit_cast(Emitter& e, int id) {
  const Node& n = e.node(id);
  int in = n.inputs[0];
  DType from = e.node(in).dtype, to = n.dtype;
  Operand src{in, 0, contiguous_strides(n.shape)}, dst{id, 0, contiguous_strides(n.shape)};
  if (dtype_size(from) == 4 && dtype_size(to) == 4) {
    uint32_t op = from == to ? EW_COPY : EW_CONVERT;
    e.elementwise(id, op, n.shape, {src}, dst, {dtype_code(from), DT_F32, dtype_code(to)});
    return;
  }
  uint32_t mode = from == DType::f16 ? CAST_F16_TO_F32 : from == DType::bf16 ? CAST_BF16_TO_F32
                : to == DType::f16 ? CAST_F32_TO_F16 : CAST_F32_TO_BF16;
  Cast16Params p{u32(numel(n.shape), "cast element count")};
  KernelCall& c = e.call(Kernel::Cast16, id, "");
  c.spec = {mode};
  c.tensors = {{in, false}, {id, true}};
  c.groups = {groups_for((p.n + 1) / 2), 1, 1};
  Emitter::set_params(c, p);
}

void emit_elementwise(Emitter& e, int id) {
  const Node& n = e.node(id);
  if (n.op == Op::Cast) return emit_cast(e, id);
  std::vector<Operand> ins;
  for (int in : n.inputs) ins.push_back({in, 0, broadcast_strides(e.node(in).shape, n.shape)});
  std::vector<uint32_t> dtypes;
  for (int in : n.inputs) dtypes.push_back(dtype_code(e.node(in).dtype));
  if (n.op == Op::Where) dtypes = {dtype_code(e.node(n.inputs[0]).dtype), DT_F32, dtype_code(n.dtype)};
  else if (dtypes.size() < 3) { dtypes.resize(2, DT_F32); dtypes.push_back(dtype_code(n.dtype)); }
  e.elementwise(id, ew_op(n.op), n.shape, std::move(ins), {id, 0, contiguous_strides(n.shape)}, dtypes,
                static_cast<float>(n.attrs.scalar));
}

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
          e.elementwise(id, EW_COPY, s, {{n.inputs[k], 0, contiguous_strides(s)}}, {id, at * out_contig[ax], out_contig},
                        bits, 0, "part " + std::to_string(k));
        at += s[ax];
      }
      break;
    }
    default: throw Error("internal: " + std::string(op_name(n.op)) + " is not a movement op");
  }
}

}  // namespace meganeura::lower
