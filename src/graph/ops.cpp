// The user-facing op functions: thin wrappers that fill attributes and call Graph::add.
#include "meganeura/ops.hpp"

#include <cmath>

#include "meganeura/error.hpp"

namespace meganeura {
namespace {

Tensor unary(Op op, Tensor x, Attrs a = {}) { return x.graph().add(op, {x}, std::move(a)); }
Tensor binary(Op op, Tensor a, Tensor b) { return a.graph().add(op, {a, b}); }
Tensor with_scalar(Tensor t, float v) { return t.graph().scalar(v); }

Tensor reduce(Op op, Tensor x, std::vector<int64_t> axes, bool keepdim) {
  Attrs a;
  a.axes = std::move(axes);
  a.keepdim = keepdim;
  return x.graph().add(op, {x}, std::move(a));
}

Tensor along(Op op, Tensor x, int64_t axis) {
  Attrs a;
  a.axis = axis;
  return x.graph().add(op, {x}, std::move(a));
}

}  // namespace

Tensor neg(Tensor x) { return unary(Op::Neg, x); }
Tensor abs(Tensor x) { return unary(Op::Abs, x); }
Tensor exp(Tensor x) { return unary(Op::Exp, x); }
Tensor log(Tensor x) { return unary(Op::Log, x); }
Tensor sqrt(Tensor x) { return unary(Op::Sqrt, x); }
Tensor rsqrt(Tensor x) { return unary(Op::Rsqrt, x); }
Tensor reciprocal(Tensor x) { return unary(Op::Reciprocal, x); }
Tensor relu(Tensor x) { return unary(Op::Relu, x); }
Tensor gelu(Tensor x) { return unary(Op::Gelu, x); }
Tensor gelu_tanh(Tensor x) { return unary(Op::GeluTanh, x); }
Tensor silu(Tensor x) { return unary(Op::Silu, x); }
Tensor sigmoid(Tensor x) { return unary(Op::Sigmoid, x); }
Tensor tanh(Tensor x) { return unary(Op::Tanh, x); }
Tensor erf(Tensor x) { return unary(Op::Erf, x); }
Tensor sin(Tensor x) { return unary(Op::Sin, x); }
Tensor cos(Tensor x) { return unary(Op::Cos, x); }
Tensor pow(Tensor x, float exponent) {
  Attrs a;
  a.scalar = exponent;
  return unary(Op::PowScalar, x, std::move(a));
}

Tensor add(Tensor a, Tensor b) { return binary(Op::Add, a, b); }
Tensor sub(Tensor a, Tensor b) { return binary(Op::Sub, a, b); }
Tensor mul(Tensor a, Tensor b) { return binary(Op::Mul, a, b); }
Tensor div(Tensor a, Tensor b) { return binary(Op::Div, a, b); }
Tensor maximum(Tensor a, Tensor b) { return binary(Op::Maximum, a, b); }
Tensor minimum(Tensor a, Tensor b) { return binary(Op::Minimum, a, b); }
Tensor swiglu(Tensor g, Tensor u) { return binary(Op::SwiGlu, g, u); }
Tensor eq(Tensor a, Tensor b) { return binary(Op::Equal, a, b); }
Tensor ne(Tensor a, Tensor b) { return binary(Op::NotEqual, a, b); }
Tensor lt(Tensor a, Tensor b) { return binary(Op::Less, a, b); }
Tensor le(Tensor a, Tensor b) { return binary(Op::LessEqual, a, b); }
Tensor gt(Tensor a, Tensor b) { return binary(Op::Greater, a, b); }
Tensor ge(Tensor a, Tensor b) { return binary(Op::GreaterEqual, a, b); }
Tensor where(Tensor cond, Tensor a, Tensor b) { return cond.graph().add(Op::Where, {cond, a, b}); }
Tensor rotary(Tensor x, Tensor cos, Tensor sin) { return x.graph().add(Op::Rotary, {x, cos, sin}); }

Tensor cast(Tensor x, DType to) {
  if (x.dtype() == to) return x;
  // The cast kernels convert between f32 and one other type; anything else goes through f32.
  if (x.dtype() != f32 && to != f32 && (dtype_size(x.dtype()) == 2 || dtype_size(to) == 2)) x = cast(x, f32);
  Attrs a;
  a.dtype = to;
  return unary(Op::Cast, x, std::move(a));
}

Tensor operator+(Tensor a, Tensor b) { return add(a, b); }
Tensor operator-(Tensor a, Tensor b) { return sub(a, b); }
Tensor operator*(Tensor a, Tensor b) { return mul(a, b); }
Tensor operator/(Tensor a, Tensor b) { return div(a, b); }
Tensor operator-(Tensor a) { return neg(a); }
Tensor operator+(Tensor a, float b) { return add(a, with_scalar(a, b)); }
Tensor operator-(Tensor a, float b) { return sub(a, with_scalar(a, b)); }
Tensor operator*(Tensor a, float b) { return mul(a, with_scalar(a, b)); }
Tensor operator/(Tensor a, float b) { return div(a, with_scalar(a, b)); }
Tensor operator+(float a, Tensor b) { return add(with_scalar(b, a), b); }
Tensor operator-(float a, Tensor b) { return sub(with_scalar(b, a), b); }
Tensor operator*(float a, Tensor b) { return mul(with_scalar(b, a), b); }
Tensor operator/(float a, Tensor b) { return div(with_scalar(b, a), b); }

Tensor matmul(Tensor a, Tensor b, MatMulOptions o) {
  Attrs at;
  at.transpose_a = o.transpose_a;
  at.transpose_b = o.transpose_b;
  return a.graph().add(Op::MatMul, {a, b}, std::move(at));
}
Tensor linear(Tensor a, Tensor b, Tensor bias, MatMulOptions o, LinearAct act) {
  Attrs at;
  at.transpose_a = o.transpose_a;
  at.transpose_b = o.transpose_b;
  at.count = act;
  return a.graph().add(Op::Linear, {a, b, bias}, std::move(at));
}
Tensor linear(Tensor a, Tensor b, Tensor bias, Tensor residual, MatMulOptions o, LinearAct act) {
  Attrs at;
  at.transpose_a = o.transpose_a;
  at.transpose_b = o.transpose_b;
  at.count = act;
  return a.graph().add(Op::Linear, {a, b, bias, residual}, std::move(at));
}

Tensor matmul_add(Tensor a, Tensor b, Tensor residual, MatMulOptions o) {
  Attrs at;
  at.transpose_a = o.transpose_a;
  at.transpose_b = o.transpose_b;
  return a.graph().add(Op::MatMulAdd, {a, b, residual}, std::move(at));
}

Tensor cache_write(Tensor state, Tensor rows, Tensor position) {
  return state.graph().add(Op::CacheWrite, {state, rows, position});
}

static Attrs attention_attrs(Tensor q, const AttentionOptions& o) {
  Attrs at;
  at.scalar = o.scale != 0 ? o.scale : 1.0 / std::sqrt(static_cast<double>(q.rank() ? q.dim(-1) : 1));
  at.count = o.causal ? kAttentionCausal : 0;
  at.window = o.window;
  at.seq_major = o.seq_major;
  return at;
}
Tensor attention(Tensor q, Tensor k, Tensor v, AttentionOptions o) {
  return q.graph().add(Op::Attention, {q, k, v}, attention_attrs(q, o));
}
Tensor attention(Tensor q, Tensor k, Tensor v, Tensor position, AttentionOptions o) {
  return q.graph().add(Op::Attention, {q, k, v, position}, attention_attrs(q, o));
}

Tensor sum(Tensor x, std::vector<int64_t> axes, bool keepdim) { return reduce(Op::Sum, x, std::move(axes), keepdim); }
Tensor mean(Tensor x, std::vector<int64_t> axes, bool keepdim) { return reduce(Op::Mean, x, std::move(axes), keepdim); }
Tensor max(Tensor x, std::vector<int64_t> axes, bool keepdim) { return reduce(Op::Max, x, std::move(axes), keepdim); }
Tensor argmax(Tensor x, int64_t axis, bool keepdim) {
  Attrs a;
  a.axis = axis;
  a.keepdim = keepdim;
  return x.graph().add(Op::ArgMax, {x}, std::move(a));
}
Tensor softmax(Tensor x, int64_t axis) { return along(Op::Softmax, x, axis); }
Tensor log_softmax(Tensor x, int64_t axis) { return along(Op::LogSoftmax, x, axis); }

Tensor rms_norm(Tensor x, Tensor weight, float eps) {
  Attrs a;
  a.scalar = eps;
  std::vector<Tensor> in{x};
  if (weight.valid()) in.push_back(weight);
  return x.graph().add(Op::RmsNorm, std::move(in), std::move(a));
}

Tensor layer_norm(Tensor x, Tensor weight, Tensor bias, float eps) {
  Attrs a;
  a.scalar = eps;
  std::vector<Tensor> in{x};
  if (bias.valid() && !weight.valid())
    throw Error("layer_norm: a bias without a weight is not supported; pass a weight of ones");
  if (weight.valid()) in.push_back(weight);
  if (bias.valid()) in.push_back(bias);
  return x.graph().add(Op::LayerNorm, std::move(in), std::move(a));
}

Tensor reshape(Tensor x, Shape shape) {
  Attrs a;
  a.axes = std::move(shape);
  return x.graph().add(Op::Reshape, {x}, std::move(a));
}

Tensor permute(Tensor x, std::vector<int64_t> perm) {
  Attrs a;
  a.axes = std::move(perm);
  return x.graph().add(Op::Permute, {x}, std::move(a));
}

Tensor transpose(Tensor x, int64_t dim0, int64_t dim1) {
  int r = x.rank();
  if (r < 2) throw ShapeError("transpose of " + shape_str(x.shape()) + " needs rank >= 2");
  auto norm = [&](int64_t d) {
    if (d < -r || d >= r) throw ShapeError("transpose: axis " + std::to_string(d) + " out of range for rank " + std::to_string(r));
    return d < 0 ? d + r : d;
  };
  std::vector<int64_t> perm(static_cast<size_t>(r));
  for (int i = 0; i < r; ++i) perm[static_cast<size_t>(i)] = i;
  std::swap(perm[static_cast<size_t>(norm(dim0))], perm[static_cast<size_t>(norm(dim1))]);
  return permute(x, std::move(perm));
}

Tensor slice(Tensor x, int64_t axis, int64_t start, int64_t end, int64_t step) {
  Attrs a;
  a.axis = axis;
  a.start = start;
  a.end = end;
  a.step = step;
  return x.graph().add(Op::Slice, {x}, std::move(a));
}

Tensor concat(const std::vector<Tensor>& xs, int64_t axis) {
  if (xs.empty()) throw ShapeError("concat of no tensors");
  Attrs a;
  a.axis = axis;
  return xs[0].graph().add(Op::Concat, xs, std::move(a));
}

std::vector<Tensor> split(Tensor x, const std::vector<int64_t>& sizes, int64_t axis) {
  int r = x.rank();
  int64_t ax = axis < 0 ? axis + r : axis;
  if (ax < 0 || ax >= r) throw ShapeError("split: axis " + std::to_string(axis) + " out of range for " + shape_str(x.shape()));
  int64_t total = 0;
  for (int64_t s : sizes) total += s;
  if (total != x.shape()[static_cast<size_t>(ax)])
    throw ShapeError("split: sizes add up to " + std::to_string(total) + " but axis " + std::to_string(ax) + " of " +
                     shape_str(x.shape()) + " has " + std::to_string(x.shape()[static_cast<size_t>(ax)]));
  std::vector<Tensor> parts;
  int64_t at = 0;
  for (int64_t s : sizes) {
    parts.push_back(slice(x, ax, at, at + s));
    at += s;
  }
  return parts;
}

Tensor broadcast_to(Tensor x, Shape shape) {
  Attrs a;
  a.axes = std::move(shape);
  return x.graph().add(Op::BroadcastTo, {x}, std::move(a));
}

Tensor gather(Tensor x, Tensor indices, int64_t axis) {
  Attrs a;
  a.axis = axis;
  return x.graph().add(Op::Gather, {x, indices}, std::move(a));
}

Tensor embedding(Tensor table, Tensor ids) { return gather(table, ids, 0); }

Tensor one_hot(Tensor indices, int64_t num_classes) {
  Attrs a;
  a.count = num_classes;
  return indices.graph().add(Op::OneHot, {indices}, std::move(a));
}

Tensor scatter_add(Tensor base, Tensor indices, Tensor updates, int64_t axis) {
  Attrs a;
  a.axis = axis;
  return base.graph().add(Op::ScatterAdd, {base, indices, updates}, std::move(a));
}

Tensor cross_entropy(Tensor logits, Tensor labels, int64_t ignore_index) {
  Attrs a;
  a.ignore_index = ignore_index;
  return logits.graph().add(Op::CrossEntropy, {logits, labels}, std::move(a));
}

Tensor mse_loss(Tensor prediction, Tensor target) { return binary(Op::MseLoss, prediction, target); }
Tensor binary_cross_entropy(Tensor p, Tensor target) { return binary(Op::BinaryCrossEntropy, p, target); }
Tensor binary_cross_entropy_with_logits(Tensor logits, Tensor target) {
  return binary(Op::BinaryCrossEntropyWithLogits, logits, target);
}

}  // namespace meganeura
