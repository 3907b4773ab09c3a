// Shape and dtype rules, one per op-table row. Each checks its inputs, normalises attributes
// (negative axes, slice bounds) so later stages see one canonical form, and returns the output
// shape and dtype. Errors name the node and show the shapes involved.
#include <algorithm>
#include <numeric>

#include "graph/op_table.hpp"

namespace meganeura::graph {

void InferContext::shape_error(const std::string& msg) const {
  throw ShapeError("shape error in node \"" + label + "\" (" + std::string(op_name(op)) + "): " + msg);
}
void InferContext::dtype_error(const std::string& msg) const {
  throw DTypeError("dtype error in node \"" + label + "\" (" + std::string(op_name(op)) + "): " + msg);
}

int64_t InferContext::axis(int64_t a, int r) const {
  if (a < -r || a >= std::max(r, 1))
    shape_error("axis " + std::to_string(a) + " is out of range for rank " + std::to_string(r));
  return a < 0 ? a + r : a;
}

void InferContext::require_dtype(size_t i, std::initializer_list<DType> allowed, std::string_view role) const {
  DType t = dtype(i);
  if (std::find(allowed.begin(), allowed.end(), t) != allowed.end()) return;
  std::string names;
  for (DType a : allowed) names += (names.empty() ? "" : " or ") + std::string(dtype_name(a));
  std::string msg = std::string(role) + " (" + inputs[i].label + ") is " + std::string(dtype_name(t)) + ", but " +
                    std::string(op_name(op)) + " takes " + names;
  if (is_integer(t) && std::find(allowed.begin(), allowed.end(), f32) != allowed.end())
    msg += "; convert it with cast(x, f32)";
  dtype_error(msg);
}

OutType infer(Op op, std::vector<InputType> inputs, Attrs& attrs, const std::string& label) {
  InferContext ctx{op, std::move(inputs), attrs, label};
  OutType out = op_info(op).infer(ctx);
  if (out.shape.size() > kMaxRank)
    ctx.shape_error("result rank " + std::to_string(out.shape.size()) + " exceeds " + std::to_string(kMaxRank));
  return out;
}

bool broadcast_shapes(const Shape& a, const Shape& b, Shape& out) {
  size_t r = std::max(a.size(), b.size());
  out.assign(r, 1);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1) return false;
    out[i] = da == 1 ? db : da;
  }
  return true;
}

namespace {

Shape broadcast_or_throw(InferContext& c, const Shape& a, const Shape& b) {
  Shape out;
  if (!broadcast_shapes(a, b, out))
    c.shape_error(shape_str(a) + " and " + shape_str(b) + " do not broadcast (trailing dimensions must be equal or 1)");
  return out;
}

}  // namespace

// Leaves get their shape from Graph::input/parameter/constant; Graph::add refuses them.
OutType infer_leaf(InferContext& c) { c.shape_error("leaves are made with Graph::input, parameter or constant"); }

OutType infer_unary(InferContext& c) {
  c.require_dtype(0, {f32}, "input");
  return {c.shape(0), f32};
}

OutType infer_binary(InferContext& c) {
  c.require_dtype(0, {f32}, "first operand");
  c.require_dtype(1, {f32}, "second operand");
  return {broadcast_or_throw(c, c.shape(0), c.shape(1)), f32};
}

OutType infer_compare(InferContext& c) {
  c.require_dtype(0, {f32, i32, u32}, "first operand");
  if (c.dtype(1) != c.dtype(0))
    c.dtype_error("operands are " + std::string(dtype_name(c.dtype(0))) + " and " +
                  std::string(dtype_name(c.dtype(1))) + "; compare tensors of one dtype");
  return {broadcast_or_throw(c, c.shape(0), c.shape(1)), u32};
}

OutType infer_where(InferContext& c) {
  c.require_dtype(0, {u32, i32, f32}, "condition");
  if (c.dtype(1) != c.dtype(2))
    c.dtype_error("the two branches are " + std::string(dtype_name(c.dtype(1))) + " and " +
                  std::string(dtype_name(c.dtype(2))) + "; they must have one dtype");
  Shape ab = broadcast_or_throw(c, c.shape(1), c.shape(2));
  return {broadcast_or_throw(c, c.shape(0), ab), c.dtype(1)};
}

OutType infer_cast(InferContext& c) {
  DType from = c.dtype(0), to = c.attrs.dtype;
  bool half_from = dtype_size(from) == 2, half_to = dtype_size(to) == 2;
  // 16-bit conversions go through f32 (ops.cpp inserts the intermediate cast).
  if ((half_from && to != f32) || (half_to && from != f32))
    c.dtype_error("cast from " + std::string(dtype_name(from)) + " to " + std::string(dtype_name(to)) +
                  " must go through f32");
  return {c.shape(0), to};
}

OutType infer_matmul(InferContext& c) {
  c.require_dtype(0, {f32}, "first operand");
  c.require_dtype(1, {f32}, "second operand");
  const Shape &a = c.shape(0), &b = c.shape(1);
  if (a.size() < 2 || b.size() < 2)
    c.shape_error(shape_str(a) + " × " + shape_str(b) +
                  " — both operands need rank >= 2 (reshape a vector to [1,K] or [K,1])");
  bool ta = c.attrs.transpose_a, tb = c.attrs.transpose_b;
  int64_t m = a[a.size() - (ta ? 1 : 2)], ka = a[a.size() - (ta ? 2 : 1)];
  int64_t kb = b[b.size() - (tb ? 1 : 2)], n = b[b.size() - (tb ? 2 : 1)];
  if (ka != kb) {
    std::string hint;
    int64_t other_b = b[b.size() - (tb ? 2 : 1)];
    if (other_b == ka)
      hint = tb ? " (did you mean transpose_b = false?)" : " (did you mean to transpose the second operand?)";
    else if (a[a.size() - (ta ? 1 : 2)] == kb)
      hint = " (did you mean to transpose the first operand?)";
    c.shape_error(shape_str(a) + (ta ? "ᵀ" : "") + " × " + shape_str(b) + (tb ? "ᵀ" : "") + " — inner dimensions " +
                  std::to_string(ka) + " and " + std::to_string(kb) + " differ" + hint);
  }
  Shape batch_a(a.begin(), a.end() - 2), batch_b(b.begin(), b.end() - 2), batch;
  if (!broadcast_shapes(batch_a, batch_b, batch))
    c.shape_error(shape_str(a) + " × " + shape_str(b) + " — batch dimensions " + shape_str(batch_a) + " and " +
                  shape_str(batch_b) + " do not broadcast");
  batch.push_back(m);
  batch.push_back(n);
  return {batch, f32};
}

// linear(a, b, bias[, residual]): matmul's shape; bias [N]; the residual broadcasts to the output.
OutType infer_linear(InferContext& c) {
  OutType out = infer_matmul(c);
  c.require_dtype(2, {f32}, "bias");
  if (c.attrs.count < 0 || c.attrs.count > 4)
    c.shape_error("activation code " + std::to_string(c.attrs.count) +
                  " is not one of none, relu, gelu, gelu_tanh, silu (0..4)");
  const Shape& bias = c.shape(2);
  if (bias.size() != 1 || bias[0] != out.shape.back())
    c.shape_error("bias " + shape_str(bias) + " must have shape [" + std::to_string(out.shape.back()) +
                  "] (the output's last dimension)");
  if (c.inputs.size() > 3) {
    c.require_dtype(3, {f32}, "residual");
    Shape b;
    if (!broadcast_shapes(c.shape(3), out.shape, b) || b != out.shape)
      c.shape_error("residual " + shape_str(c.shape(3)) + " does not broadcast to the output " + shape_str(out.shape));
  }
  return out;
}

// matmul_add(a, b, residual): matmul's shape; the residual broadcasts to the output.
OutType infer_matmul_add(InferContext& c) {
  OutType out = infer_matmul(c);
  c.require_dtype(2, {f32}, "residual");
  Shape b;
  if (!broadcast_shapes(c.shape(2), out.shape, b) || b != out.shape)
    c.shape_error("residual " + shape_str(c.shape(2)) + " does not broadcast to the output " + shape_str(out.shape));
  return out;
}

// Normalises attrs.axes (empty = all) to sorted unique non-negative axes.
static Shape reduce_shape(InferContext& c) {
  const Shape& x = c.shape(0);
  int r = c.rank(0);
  std::vector<int64_t> axes;
  if (c.attrs.axes.empty()) {
    axes.resize(static_cast<size_t>(r));
    std::iota(axes.begin(), axes.end(), 0);
  } else {
    for (int64_t a : c.attrs.axes) axes.push_back(c.axis(a, r));
    std::sort(axes.begin(), axes.end());
    auto dup = std::adjacent_find(axes.begin(), axes.end());
    if (dup != axes.end())
      c.shape_error("axis " + std::to_string(*dup) + " is listed twice in " + shape_str(c.attrs.axes));
  }
  c.attrs.axes = axes;
  Shape out;
  for (int i = 0; i < r; ++i) {
    bool reduced = std::binary_search(axes.begin(), axes.end(), i);
    if (!reduced)
      out.push_back(x[static_cast<size_t>(i)]);
    else if (c.attrs.keepdim)
      out.push_back(1);
  }
  return out;
}

OutType infer_reduce(InferContext& c) {
  c.require_dtype(0, {f32}, "input");
  return {reduce_shape(c), f32};
}

OutType infer_argmax(InferContext& c) {
  c.require_dtype(0, {f32}, "input");
  c.attrs.axis = c.axis(c.attrs.axis, c.rank(0));
  c.attrs.axes = {c.attrs.axis};
  return {reduce_shape(c), i32};
}

OutType infer_softmax(InferContext& c) {
  c.require_dtype(0, {f32}, "input");
  if (c.rank(0) == 0) c.shape_error("softmax needs rank >= 1");
  c.attrs.axis = c.axis(c.attrs.axis, c.rank(0));
  return {c.shape(0), f32};
}

OutType infer_rotary(InferContext& c) {
  for (size_t i = 0; i < 3; ++i) c.require_dtype(i, {f32}, i == 0 ? "x" : i == 1 ? "cos" : "sin");
  const Shape& x = c.shape(0);
  if (x.empty() || x.back() % 2 != 0)
    c.shape_error("x " + shape_str(x) + " needs an even last dimension (its two halves rotate together)");
  for (size_t i = 1; i < 3; ++i)
    if (broadcast_or_throw(c, x, c.shape(i)) != x)
      c.shape_error(std::string(i == 1 ? "cos " : "sin ") + shape_str(c.shape(i)) + " does not broadcast to x " +
                    shape_str(x));
  return {x, f32};
}

OutType infer_norm(InferContext& c) {
  c.require_dtype(0, {f32}, "input");
  if (c.rank(0) == 0) c.shape_error("normalisation needs rank >= 1");
  int64_t d = c.shape(0).back();
  for (size_t i = 1; i < c.inputs.size(); ++i) {
    c.require_dtype(i, {f32}, i == 1 ? "weight" : "bias");
    if (c.shape(i) != Shape{d})
      c.shape_error(std::string(i == 1 ? "weight" : "bias") + " has shape " + shape_str(c.shape(i)) +
                    " but the normalised (last) dimension of " + shape_str(c.shape(0)) + " needs [" +
                    std::to_string(d) + "]");
  }
  return {c.shape(0), f32};
}

OutType infer_reshape(InferContext& c) {
  Shape target = c.attrs.axes;
  int64_t known = 1, infer_at = -1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == -1) {
      if (infer_at >= 0) c.shape_error("only one dimension of " + shape_str(target) + " may be -1");
      infer_at = static_cast<int64_t>(i);
    } else if (target[i] < 0) {
      c.shape_error("target shape " + shape_str(target) + " has a negative dimension");
    } else {
      known *= target[i];
    }
  }
  int64_t n = numel(c.shape(0));
  if (infer_at >= 0) {
    if (known == 0 || n % known != 0)
      c.shape_error("cannot reshape " + shape_str(c.shape(0)) + " (" + std::to_string(n) + " elements) to " +
                    shape_str(target));
    target[static_cast<size_t>(infer_at)] = n / known;
  }
  if (numel(target) != n)
    c.shape_error("cannot reshape " + shape_str(c.shape(0)) + " (" + std::to_string(n) + " elements) to " +
                  shape_str(target) + " (" + std::to_string(numel(target)) + " elements)");
  c.attrs.axes = target;
  return {target, c.dtype(0)};
}

OutType infer_permute(InferContext& c) {
  int r = c.rank(0);
  auto& perm = c.attrs.axes;
  if (static_cast<int>(perm.size()) != r)
    c.shape_error("permutation of " + std::to_string(perm.size()) + " axes for a tensor of rank " + std::to_string(r));
  std::vector<bool> seen(static_cast<size_t>(r), false);
  Shape out;
  for (auto& p : perm) {
    p = c.axis(p, r);
    if (seen[static_cast<size_t>(p)]) c.shape_error("axis " + std::to_string(p) + " appears twice in the permutation");
    seen[static_cast<size_t>(p)] = true;
    out.push_back(c.shape(0)[static_cast<size_t>(p)]);
  }
  return {out, c.dtype(0)};
}

OutType infer_slice(InferContext& c) {
  auto& at = c.attrs;
  int r = c.rank(0);
  at.axis = c.axis(at.axis, r);
  int64_t dim = c.shape(0)[static_cast<size_t>(at.axis)];
  if (at.step <= 0) c.shape_error("slice step must be positive, got " + std::to_string(at.step));
  auto clamp = [&](int64_t v) { return std::clamp(v < 0 ? v + dim : v, int64_t{0}, dim); };
  at.start = clamp(at.start);
  at.end = clamp(at.end);
  Shape out = c.shape(0);
  out[static_cast<size_t>(at.axis)] = at.end > at.start ? (at.end - at.start + at.step - 1) / at.step : 0;
  if (at.end < at.start) at.end = at.start;
  return {out, c.dtype(0)};
}

OutType infer_concat(InferContext& c) {
  int r = c.rank(0);
  c.attrs.axis = c.axis(c.attrs.axis, r);
  Shape out = c.shape(0);
  auto ax = static_cast<size_t>(c.attrs.axis);
  out[ax] = 0;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (c.dtype(i) != c.dtype(0))
      c.dtype_error("input " + std::to_string(i) + " is " + std::string(dtype_name(c.dtype(i))) + ", input 0 is " +
                    std::string(dtype_name(c.dtype(0))));
    const Shape& s = c.shape(i);
    bool ok = static_cast<int>(s.size()) == r;
    for (size_t d = 0; ok && d < s.size(); ++d) ok = d == ax || s[d] == c.shape(0)[d];
    if (!ok)
      c.shape_error("input " + std::to_string(i) + " has shape " + shape_str(s) + ", input 0 has " +
                    shape_str(c.shape(0)) + "; all dimensions but axis " + std::to_string(ax) + " must match");
    out[ax] += s[ax];
  }
  return {out, c.dtype(0)};
}

OutType infer_broadcast_to(InferContext& c) {
  const Shape& target = c.attrs.axes;
  Shape out;
  if (target.size() < c.shape(0).size() || !broadcast_shapes(c.shape(0), target, out) || out != target)
    c.shape_error("cannot broadcast " + shape_str(c.shape(0)) + " to " + shape_str(target));
  return {target, c.dtype(0)};
}

OutType infer_gather(InferContext& c) {
  c.require_dtype(1, {i32, u32}, "indices");
  int r = c.rank(0);
  if (r == 0) c.shape_error("cannot gather from a rank-0 tensor");
  c.attrs.axis = c.axis(c.attrs.axis, r);
  auto ax = static_cast<size_t>(c.attrs.axis);
  const Shape& x = c.shape(0);
  Shape out(x.begin(), x.begin() + static_cast<int64_t>(ax));
  out.insert(out.end(), c.shape(1).begin(), c.shape(1).end());
  out.insert(out.end(), x.begin() + static_cast<int64_t>(ax) + 1, x.end());
  if (out.size() > kMaxRank)
    c.shape_error("result rank " + std::to_string(out.size()) + " exceeds " + std::to_string(kMaxRank));
  return {out, c.dtype(0)};
}

OutType infer_scatter_add(InferContext& c) {
  c.require_dtype(0, {f32}, "base");
  c.require_dtype(1, {i32, u32}, "indices");
  c.require_dtype(2, {f32}, "updates");
  int r = c.rank(0);
  if (r == 0) c.shape_error("cannot scatter into a rank-0 tensor");
  c.attrs.axis = c.axis(c.attrs.axis, r);
  auto ax = static_cast<size_t>(c.attrs.axis);
  const Shape& base = c.shape(0);
  Shape want(base.begin(), base.begin() + static_cast<int64_t>(ax));
  want.insert(want.end(), c.shape(1).begin(), c.shape(1).end());
  want.insert(want.end(), base.begin() + static_cast<int64_t>(ax) + 1, base.end());
  if (c.shape(2) != want)
    c.shape_error("updates have shape " + shape_str(c.shape(2)) + " but base " + shape_str(base) + " with indices " +
                  shape_str(c.shape(1)) + " along axis " + std::to_string(ax) + " needs " + shape_str(want));
  return {base, f32};
}

OutType infer_one_hot(InferContext& c) {
  c.require_dtype(0, {i32, u32}, "indices");
  if (c.attrs.count <= 0) c.shape_error("num_classes must be positive, got " + std::to_string(c.attrs.count));
  Shape out = c.shape(0);
  out.push_back(c.attrs.count);
  if (out.size() > kMaxRank) c.shape_error("result rank exceeds " + std::to_string(kMaxRank));
  return {out, f32};
}

OutType infer_cross_entropy(InferContext& c) {
  c.require_dtype(0, {f32}, "logits");
  c.require_dtype(1, {i32}, "labels");
  const Shape& logits = c.shape(0);
  if (logits.empty()) c.shape_error("logits need rank >= 1 ([..., classes])");
  Shape rows(logits.begin(), logits.end() - 1);
  if (c.shape(1) != rows)
    c.shape_error("logits " + shape_str(logits) + " need labels of shape " + shape_str(rows) + ", got " +
                  shape_str(c.shape(1)));
  return {{}, f32};
}

OutType infer_pair_loss(InferContext& c) {
  c.require_dtype(0, {f32}, "prediction");
  c.require_dtype(1, {f32}, "target");
  if (c.shape(0) != c.shape(1))
    c.shape_error("prediction " + shape_str(c.shape(0)) + " and target " + shape_str(c.shape(1)) +
                  " must have one shape");
  return {{}, f32};
}

}  // namespace meganeura::graph

namespace meganeura::graph {

// (y or x, dy[, weight]): softmax/log-softmax backward take the forward output y, the norm
// backward ops the forward input x; dy has the same shape.
OutType infer_row_backward(InferContext& c) {
  c.require_dtype(0, {f32}, "forward tensor");
  c.require_dtype(1, {f32}, "gradient");
  if (c.shape(0) != c.shape(1))
    c.shape_error("forward tensor " + shape_str(c.shape(0)) + " and gradient " + shape_str(c.shape(1)) + " differ");
  if (c.rank(0) == 0) c.shape_error("needs rank >= 1");
  if (c.op == Op::SoftmaxBackward || c.op == Op::LogSoftmaxBackward) c.attrs.axis = c.axis(c.attrs.axis, c.rank(0));
  if (c.inputs.size() > 2 && c.shape(2) != Shape{c.shape(0).back()})
    c.shape_error("weight " + shape_str(c.shape(2)) + " does not match the last dimension of " + shape_str(c.shape(0)));
  return {c.shape(0), f32};
}

// (x, dy) -> the gradient of the norm's weight, [D]: sum over rows of dy * normalised x.
OutType infer_norm_weight_grad(InferContext& c) {
  c.require_dtype(0, {f32}, "input");
  c.require_dtype(1, {f32}, "gradient");
  if (c.shape(0) != c.shape(1) || c.rank(0) == 0)
    c.shape_error("input " + shape_str(c.shape(0)) + " and gradient " + shape_str(c.shape(1)) +
                  " must have one shape of rank >= 1");
  return {{c.shape(0).back()}, f32};
}

// (logits, labels, d loss) -> d logits.
OutType infer_cross_entropy_backward(InferContext& c) {
  infer_cross_entropy(c);
  c.require_dtype(2, {f32}, "loss gradient");
  if (!c.shape(2).empty()) c.shape_error("the loss gradient must be rank 0, got " + shape_str(c.shape(2)));
  return {c.shape(0), f32};
}

// dy of a slice -> a tensor of the sliced input's shape (attrs.count: the full axis length),
// zero outside the slice.
OutType infer_slice_backward(InferContext& c) {
  auto& at = c.attrs;
  at.axis = c.axis(at.axis, c.rank(0));
  Shape out = c.shape(0);
  auto ax = static_cast<size_t>(at.axis);
  int64_t want = at.end > at.start ? (at.end - at.start + at.step - 1) / at.step : 0;
  if (out[ax] != want || at.end > at.count || at.step <= 0)
    c.shape_error("gradient " + shape_str(out) + " does not fit slice [" + std::to_string(at.start) + ":" +
                  std::to_string(at.end) + ":" + std::to_string(at.step) + "] of length " + std::to_string(at.count));
  out[ax] = at.count;
  return {out, c.dtype(0)};
}

}  // namespace meganeura::graph
