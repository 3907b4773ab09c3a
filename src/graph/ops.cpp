// The user-facing op functions: thin wrappers that fill attributes and build the node through
// graph::build (op_args.hpp), which checks every tensor argument first, naming the op and the
// argument.
#include "meganeura/ops.hpp"

#include <cmath>

#include "graph/op_args.hpp"
#include "meganeura/error.hpp"

namespace meganeura {
namespace {

using graph::Arg;
using graph::build;
using graph::graph_of;

Tensor unary(Op op, Tensor x, Attrs a = {}) { return build(op, {{"x", x}}, std::move(a)); }
Tensor binary(Op op, Tensor a, Tensor b) { return build(op, {{"a", a}, {"b", b}}); }
// a ∘ scalar and scalar ∘ b: the tensor is checked before its graph makes the constant.
Tensor with_scalar(Op op, Tensor a, float b) { return binary(op, a, graph_of(op_name(op), {{"a", a}}).scalar(b)); }
Tensor with_scalar(Op op, float a, Tensor b) { return binary(op, graph_of(op_name(op), {{"b", b, 2}}).scalar(a), b); }

Tensor reduce(Op op, Tensor x, std::vector<int64_t> axes, bool keepdim) {
  Attrs a;
  a.axes = std::move(axes);
  a.keepdim = keepdim;
  return build(op, {{"x", x}}, std::move(a));
}

Tensor along(Op op, Tensor x, int64_t axis) {
  Attrs a;
  a.axis = axis;
  return build(op, {{"x", x}}, std::move(a));
}

Attrs matmul_attrs(MatMulOptions o) {
  Attrs at;
  at.transpose_a = o.transpose_a;
  at.transpose_b = o.transpose_b;
  return at;
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
Tensor swiglu(Tensor g, Tensor u) { return build(Op::SwiGlu, {{"g", g}, {"u", u}}); }
Tensor eq(Tensor a, Tensor b) { return binary(Op::Equal, a, b); }
Tensor ne(Tensor a, Tensor b) { return binary(Op::NotEqual, a, b); }
Tensor lt(Tensor a, Tensor b) { return binary(Op::Less, a, b); }
Tensor le(Tensor a, Tensor b) { return binary(Op::LessEqual, a, b); }
Tensor gt(Tensor a, Tensor b) { return binary(Op::Greater, a, b); }
Tensor ge(Tensor a, Tensor b) { return binary(Op::GreaterEqual, a, b); }
Tensor where(Tensor cond, Tensor a, Tensor b) { return build(Op::Where, {{"cond", cond}, {"a", a}, {"b", b}}); }
Tensor rotary(Tensor x, Tensor cos, Tensor sin) { return build(Op::Rotary, {{"x", x}, {"cos", cos}, {"sin", sin}}); }

Tensor cast(Tensor x, DType to) {
  graph_of("cast", {{"x", x}});  // before x.dtype()
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
Tensor operator+(Tensor a, float b) { return with_scalar(Op::Add, a, b); }
Tensor operator-(Tensor a, float b) { return with_scalar(Op::Sub, a, b); }
Tensor operator*(Tensor a, float b) { return with_scalar(Op::Mul, a, b); }
Tensor operator/(Tensor a, float b) { return with_scalar(Op::Div, a, b); }
Tensor operator+(float a, Tensor b) { return with_scalar(Op::Add, a, b); }
Tensor operator-(float a, Tensor b) { return with_scalar(Op::Sub, a, b); }
Tensor operator*(float a, Tensor b) { return with_scalar(Op::Mul, a, b); }
Tensor operator/(float a, Tensor b) { return with_scalar(Op::Div, a, b); }

Tensor matmul(Tensor a, Tensor b, MatMulOptions o) { return build(Op::MatMul, {{"a", a}, {"b", b}}, matmul_attrs(o)); }
Tensor linear(Tensor a, Tensor b, Tensor bias, MatMulOptions o, LinearAct act) {
  Attrs at = matmul_attrs(o);
  at.count = act;
  return build(Op::Linear, {{"a", a}, {"b", b}, {"bias", bias}}, std::move(at));
}
Tensor linear(Tensor a, Tensor b, Tensor bias, Tensor residual, MatMulOptions o, LinearAct act) {
  Attrs at = matmul_attrs(o);
  at.count = act;
  return build(Op::Linear, {{"a", a}, {"b", b}, {"bias", bias}, {"residual", residual}}, std::move(at));
}

Tensor matmul_add(Tensor a, Tensor b, Tensor residual, MatMulOptions o) {
  return build(Op::MatMulAdd, {{"a", a}, {"b", b}, {"residual", residual}}, matmul_attrs(o));
}

Tensor cache_write(Tensor state, Tensor rows, Tensor position) {
  return build(Op::CacheWrite, {{"state", state}, {"rows", rows}, {"position", position}});
}

Tensor assign(Tensor target, Tensor value) {
  graph_of("assign", {{"target", target}, {"value", value, 2}});
  const Node& t = target.node();
  const bool writable = (t.op == Op::Parameter && !t.trainable) || t.op == Op::State;
  if (!writable)
    throw Error("assign: the target \"" + (t.name.empty() ? target.graph().label(target.id()) : t.name) + "\" is " +
                (t.op == Op::Parameter ? "a trained parameter" : "not a leaf a session keeps") +
                "; assign writes a Graph::buffer or a Graph::state");
  return build(Op::Assign, {{"target", target}, {"value", value}});
}

// Reads q's shape for the default scale: called once the arguments are checked.
static Attrs attention_attrs(Tensor q, const AttentionOptions& o) {
  Attrs at;
  at.scalar = o.scale != 0 ? o.scale : 1.0 / std::sqrt(static_cast<double>(q.rank() ? q.dim(-1) : 1));
  at.count = o.causal ? kAttentionCausal : 0;
  at.window = o.window;
  at.seq_major = o.seq_major;
  return at;
}
Tensor attention(Tensor q, Tensor k, Tensor v, AttentionOptions o) {
  graph_of("attention", {{"q", q}, {"k", k}, {"v", v}});
  return build(Op::Attention, {{"q", q}, {"k", k}, {"v", v}}, attention_attrs(q, o));
}
Tensor attention(Tensor q, Tensor k, Tensor v, Tensor position, AttentionOptions o) {
  graph_of("attention", {{"q", q}, {"k", k}, {"v", v}, {"position", position}});
  return build(Op::Attention, {{"q", q}, {"k", k}, {"v", v}, {"position", position}}, attention_attrs(q, o));
}

Tensor sum(Tensor x, std::vector<int64_t> axes, bool keepdim) { return reduce(Op::Sum, x, std::move(axes), keepdim); }
Tensor mean(Tensor x, std::vector<int64_t> axes, bool keepdim) { return reduce(Op::Mean, x, std::move(axes), keepdim); }
Tensor max(Tensor x, std::vector<int64_t> axes, bool keepdim) { return reduce(Op::Max, x, std::move(axes), keepdim); }
Tensor argmax(Tensor x, int64_t axis, bool keepdim) {
  Attrs a;
  a.axis = axis;
  a.keepdim = keepdim;
  return build(Op::ArgMax, {{"x", x}}, std::move(a));
}
Tensor softmax(Tensor x, int64_t axis) { return along(Op::Softmax, x, axis); }
Tensor log_softmax(Tensor x, int64_t axis) { return along(Op::LogSoftmax, x, axis); }

Tensor rms_norm(Tensor x, Tensor weight, float eps) {
  Attrs a;
  a.scalar = eps;
  return build(Op::RmsNorm, {{"x", x}, Arg::optional("weight", weight)}, std::move(a));
}

Tensor layer_norm(Tensor x, Tensor weight, Tensor bias, float eps) {
  Attrs a;
  a.scalar = eps;
  if (bias.valid() && !weight.valid())
    throw Error("layer_norm: a bias without a weight is not supported; pass a weight of ones");
  return build(Op::LayerNorm, {{"x", x}, Arg::optional("weight", weight), Arg::optional("bias", bias)}, std::move(a));
}

Tensor reshape(Tensor x, Shape shape) {
  Attrs a;
  a.axes = std::move(shape);
  return build(Op::Reshape, {{"x", x}}, std::move(a));
}

Tensor permute(Tensor x, std::vector<int64_t> perm) {
  Attrs a;
  a.axes = std::move(perm);
  return build(Op::Permute, {{"x", x}}, std::move(a));
}

Tensor transpose(Tensor x, int64_t dim0, int64_t dim1) {
  graph_of("transpose", {{"x", x}});  // before x.rank()
  int r = x.rank();
  if (r < 2) throw ShapeError("transpose of " + shape_str(x.shape()) + " needs rank >= 2");
  auto norm = [&](int64_t d) {
    if (d < -r || d >= r)
      throw ShapeError("transpose: axis " + std::to_string(d) + " out of range for rank " + std::to_string(r));
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
  return build(Op::Slice, {{"x", x}}, std::move(a));
}

Tensor concat(const std::vector<Tensor>& xs, int64_t axis) {
  if (xs.empty()) throw ShapeError("concat of no tensors");
  Attrs a;
  a.axis = axis;
  std::vector<Arg> args;
  for (size_t i = 0; i < xs.size(); ++i) args.emplace_back("xs[" + std::to_string(i) + "]", xs[i], 1);
  return build(Op::Concat, args, std::move(a));
}

std::vector<Tensor> split(Tensor x, const std::vector<int64_t>& sizes, int64_t axis) {
  graph_of("split", {{"x", x}});  // before x.rank()
  int r = x.rank();
  int64_t ax = axis < 0 ? axis + r : axis;
  if (ax < 0 || ax >= r)
    throw ShapeError("split: axis " + std::to_string(axis) + " out of range for " + shape_str(x.shape()));
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
  return build(Op::BroadcastTo, {{"x", x}}, std::move(a));
}

Tensor gather(Tensor x, Tensor indices, int64_t axis) {
  Attrs a;
  a.axis = axis;
  return build(Op::Gather, {{"x", x}, {"indices", indices}}, std::move(a));
}

Tensor embedding(Tensor table, Tensor ids) {
  graph_of("embedding", {{"table", table}, {"ids", ids}});  // named as the caller wrote it, not as gather
  return gather(table, ids, 0);
}

Tensor one_hot(Tensor indices, int64_t num_classes) {
  Attrs a;
  a.count = num_classes;
  return build(Op::OneHot, {{"indices", indices}}, std::move(a));
}

Tensor scatter_add(Tensor base, Tensor indices, Tensor updates, int64_t axis) {
  Attrs a;
  a.axis = axis;
  return build(Op::ScatterAdd, {{"base", base}, {"indices", indices}, {"updates", updates}}, std::move(a));
}

Tensor cross_entropy(Tensor logits, Tensor labels, int64_t ignore_index) {
  Attrs a;
  a.ignore_index = ignore_index;
  return build(Op::CrossEntropy, {{"logits", logits}, {"labels", labels}}, std::move(a));
}

Tensor mse_loss(Tensor prediction, Tensor target) {
  return build(Op::MseLoss, {{"prediction", prediction}, {"target", target}});
}
Tensor binary_cross_entropy(Tensor probability, Tensor target) {
  return build(Op::BinaryCrossEntropy, {{"probability", probability}, {"target", target}});
}
Tensor binary_cross_entropy_with_logits(Tensor logits, Tensor target) {
  return build(Op::BinaryCrossEntropyWithLogits, {{"logits", logits}, {"target", target}});
}

}  // namespace meganeura
