// Elementwise ops: one strided kernel (Emitter::elementwise, emitter.cpp), whatever the operands'
// broadcasts and layouts.
#include "lower/emit/emitters.hpp"
#include "meganeura/error.hpp"

namespace meganeura::lower {

using namespace kernels;

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
    case Op::Assign: return EW_ASSIGN;
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
  uint32_t mode = from == DType::f16    ? CAST_F16_TO_F32
                  : from == DType::bf16 ? CAST_BF16_TO_F32
                  : to == DType::f16    ? CAST_F32_TO_F16
                                        : CAST_F32_TO_BF16;
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
  if (n.op == Op::Assign) {  // the output is the target's bytes (an alias): copy the value there
    const Strides st = contiguous_strides(n.shape);
    e.elementwise(id, EW_COPY, n.shape, {{n.inputs[1], 0, st}}, {id, 0, st}, {DT_F32, DT_F32, DT_F32}, 0,
                  "assign " + e.node(n.inputs[0]).name);
    return;
  }
  std::vector<Operand> ins;
  for (int in : n.inputs) ins.push_back({in, 0, broadcast_strides(e.node(in).shape, n.shape)});
  std::vector<uint32_t> dtypes;
  for (int in : n.inputs) dtypes.push_back(dtype_code(e.node(in).dtype));
  if (n.op == Op::Where)
    dtypes = {dtype_code(e.node(n.inputs[0]).dtype), DT_F32, dtype_code(n.dtype)};
  else if (dtypes.size() < 3) {
    dtypes.resize(2, DT_F32);
    dtypes.push_back(dtype_code(n.dtype));
  }
  e.elementwise(id, ew_op(n.op), n.shape, std::move(ins), {id, 0, contiguous_strides(n.shape)}, dtypes,
                static_cast<float>(n.attrs.scalar));
}

}  // namespace meganeura::lower
