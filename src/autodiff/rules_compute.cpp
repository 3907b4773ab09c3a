// Gradient rules of matmul, reductions, row ops and losses. Softmax, norms and cross-entropy
// backward are fused ops: their unfused forms would materialise large temporaries.
#include <string>

#include "autodiff/rules.hpp"
#include "meganeura/error.hpp"

namespace meganeura::autodiff {

// C = op(A)·op(B): dop(A) = dC·op(B)ᵀ, dop(B) = op(A)ᵀ·dC; a transposed operand takes the
// transpose of that, which is again one matmul with transpose flags. A weight B [K, N] shared by
// every matrix of a batched A [..., M, K] gets its gradient from ONE matmul over the flattened
// rows ([B·M, K]ᵀ·[B·M, N]), not a batch of products summed afterwards.
static void mat_mul_operands(GradContext& c, Tensor dy) {
  bool ta = c.attrs().transpose_a, tb = c.attrs().transpose_b;
  Tensor a = c.in(0), b = c.in(1);
  if (c.needs(0))
    c.add(0, ta ? matmul(b, dy, {.transpose_a = tb, .transpose_b = true}) : matmul(dy, b, {.transpose_b = !tb}));
  if (!c.needs(1)) return;
  if (b.rank() == 2 && a.rank() > 2 && !ta) {
    Tensor rows_a = reshape(a, {-1, a.dim(-1)}), rows_dy = reshape(dy, {-1, dy.dim(-1)});
    c.add(1, tb ? matmul(rows_dy, rows_a, {.transpose_a = true}) : matmul(rows_a, rows_dy, {.transpose_a = true}));
    return;
  }
  c.add(1, tb ? matmul(dy, a, {.transpose_a = true, .transpose_b = ta}) : matmul(a, dy, {.transpose_a = !ta}));
}
void grad_mat_mul(GradContext& c) { mat_mul_operands(c, c.dy()); }

// y = act(z) + residual, z = op(A)·op(B) + bias. With an activation, z is recomputed as a linear
// without activation or residual; dz = act'(z)·dy through the backward ops of the unary rules,
// then A and B as matmul's, d bias = dz summed over all but the last axis (c.add undoes the
// broadcast), d residual = dy.
void grad_linear(GradContext& c) {
  const Attrs at = c.attrs();  // a copy: building nodes below may move the graph's node storage
  Tensor dy = c.dy(), dz = dy;
  if (at.count == kLinearRelu && c.inputs() == 3) {
    // relu(z) > 0 exactly where z > 0: the forward output gives the mask, no recomputed matmul.
    dz = where(gt(c.out(), c.scalar(0.0f)), dy, c.scalar(0.0f));
  } else if (at.count != kLinearNone) {
    Tensor z = linear(c.in(0), c.in(1), c.in(2), {.transpose_a = at.transpose_a, .transpose_b = at.transpose_b});
    switch (at.count) {
      case kLinearRelu: dz = where(gt(z, c.scalar(0.0f)), dy, c.scalar(0.0f)); break;
      case kLinearGelu: dz = c.graph().add(Op::GeluBackward, {z, dy}); break;
      case kLinearGeluTanh: dz = c.graph().add(Op::GeluTanhBackward, {z, dy}); break;
      case kLinearSilu: dz = c.graph().add(Op::SiluBackward, {z, dy}); break;
      default: throw Error("internal: linear activation code " + std::to_string(at.count) + " has no gradient");
    }
  }
  mat_mul_operands(c, dz);
  if (c.needs(2)) c.add(2, dz);
  if (c.needs(3)) c.add(3, dy);
}

void grad_matmul_add(GradContext& c) {
  mat_mul_operands(c, c.dy());
  if (c.needs(2)) c.add(2, c.dy());
}

// The output's cotangent reshaped to keep the reduced axes as 1, ready to broadcast.
static Tensor keepdim_dy(GradContext& c) {
  Shape s = c.in(0).shape();
  for (int64_t a : c.attrs().axes) s[static_cast<size_t>(a)] = 1;
  return reshape(c.dy(), s);
}

static double reduced_count(GradContext& c) {
  double n = 1;
  for (int64_t a : c.attrs().axes) n *= static_cast<double>(c.in(0).shape()[static_cast<size_t>(a)]);
  return n;
}

void grad_sum(GradContext& c) { c.add(0, broadcast_to(keepdim_dy(c), c.in(0).shape())); }
void grad_mean(GradContext& c) {
  c.add(0, broadcast_to(keepdim_dy(c) * static_cast<float>(1.0 / reduced_count(c)), c.in(0).shape()));
}
// amax: the gradient is shared evenly by every element equal to the maximum.
void grad_max(GradContext& c) {
  Tensor x = c.in(0);
  Shape ks = x.shape();
  for (int64_t a : c.attrs().axes) ks[static_cast<size_t>(a)] = 1;
  Tensor mask = cast(eq(x, reshape(c.out(), ks)), f32);
  Tensor count = sum(mask, c.attrs().axes, true);
  c.add(0, mask * (keepdim_dy(c) / count));
}

static Tensor along_axis(GradContext& c, Op op, std::vector<Tensor> in) {
  Attrs a;
  a.axis = c.attrs().axis;
  a.scalar = c.attrs().scalar;
  return c.graph().add(op, std::move(in), a);
}

void grad_softmax(GradContext& c) { c.add(0, along_axis(c, Op::SoftmaxBackward, {c.out(), c.dy()})); }
void grad_log_softmax(GradContext& c) { c.add(0, along_axis(c, Op::LogSoftmaxBackward, {c.out(), c.dy()})); }

static void grad_norm(GradContext& c, Op backward, Op weight_grad) {
  Tensor x = c.in(0);
  std::vector<Tensor> in{x, c.dy()};
  if (c.inputs() > 1) in.push_back(c.in(1));
  if (c.needs(0)) c.add(0, along_axis(c, backward, in));
  if (c.needs(1)) c.add(1, along_axis(c, weight_grad, {x, c.dy()}));
  if (c.needs(2)) {  // bias: dy summed over every row
    std::vector<int64_t> rows;
    for (int d = 0; d + 1 < x.rank(); ++d) rows.push_back(d);
    c.add(2, rows.empty() ? c.dy() : sum(c.dy(), rows));
  }
}
void grad_rms_norm(GradContext& c) { grad_norm(c, Op::RmsNormBackward, Op::RmsNormWeightGrad); }
void grad_layer_norm(GradContext& c) { grad_norm(c, Op::LayerNormBackward, Op::LayerNormWeightGrad); }

void grad_cross_entropy(GradContext& c) {
  Attrs a;
  a.ignore_index = c.attrs().ignore_index;
  c.add(0, c.graph().add(Op::CrossEntropyBackward, {c.in(0), c.in(1), c.dy()}, a));
}

static float inv_count(GradContext& c) { return 1.0f / static_cast<float>(numel(c.in(0).shape())); }

void grad_mse_loss(GradContext& c) {
  Tensor d = (c.in(0) - c.in(1)) * (c.dy() * (2.0f * inv_count(c)));
  if (c.needs(0)) c.add(0, d);
  if (c.needs(1)) c.add(1, -d);
}

// PyTorch: d p = (p - t) / max(p (1 - p), 1e-12); d t = log(1 - p) - log(p), logs clamped at -100.
void grad_binary_cross_entropy(GradContext& c) {
  Tensor p = c.in(0), t = c.in(1), scale = c.dy() * inv_count(c);
  if (c.needs(0)) c.add(0, (p - t) / maximum(p * (1.0f - p), c.scalar(1e-12f)) * scale);
  if (c.needs(1)) {
    Tensor floor = c.scalar(-100.0f);
    c.add(1, (maximum(log(1.0f - p), floor) - maximum(log(p), floor)) * scale);
  }
}

void grad_binary_cross_entropy_with_logits(GradContext& c) {
  Tensor x = c.in(0), t = c.in(1), scale = c.dy() * inv_count(c);
  if (c.needs(0)) c.add(0, (sigmoid(x) - t) * scale);
  if (c.needs(1)) c.add(1, -(x * scale));
}

// Flash-attention backward: delta_i = sum_d dy_id o_id, then one fused op per needed input,
// each recomputing the probabilities from the forward output's saved log-sum-exp.
void grad_attention(GradContext& c) {
  Attrs at = c.attrs();  // a copy: building nodes below may move the graph's node storage
  Tensor delta = sum(c.dy() * c.out(), {-1});
  for (size_t i = 0; i < 3; ++i) {
    if (!c.needs(i)) continue;
    at.axis = static_cast<int64_t>(i);
    std::vector<Tensor> in = {c.in(0), c.in(1), c.in(2), c.out(), c.dy(), delta};
    if (c.inputs() > 3) in.push_back(c.in(3));  // the position
    c.add(i, c.graph().add(Op::AttentionBackward, std::move(in), at));
  }
}

// rotary is linear in x: its gradient is the transposed rotation (attrs.count flips). cos and
// sin (usually constants) get dy*x and dy*rotate_half(x).
void grad_rotary(GradContext& c) {
  const bool transposed = c.attrs().count != 0;
  Tensor dy = c.dy(), x = c.in(0);
  if (c.needs(0)) {
    Attrs a;
    a.count = transposed ? 0 : 1;
    c.add(0, c.graph().add(Op::Rotary, {dy, c.in(1), c.in(2)}, a));
  }
  if ((c.needs(1) || c.needs(2)) && transposed)
    throw Error("no gradient of rotary's transpose with respect to cos/sin (second derivatives are not supported yet)");
  if (c.needs(1)) c.add(1, dy * x);
  if (c.needs(2)) {
    const int64_t d = x.dim(-1);
    c.add(2, dy * concat({-slice(x, -1, d / 2, d), slice(x, -1, 0, d / 2)}, -1));
  }
}

}  // namespace meganeura::autodiff
