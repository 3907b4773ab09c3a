// Gradient rules of elementwise ops: d input = dy * f'(x), broadcasting undone by add().
#include "autodiff/rules.hpp"

namespace meganeura::autodiff {

void grad_neg(GradContext& c) { c.add(0, -c.dy()); }
void grad_abs(GradContext& c) {  // sign(x) * dy, with abs'(0) = 0 like PyTorch
  Tensor x = c.in(0), zero = c.scalar(0.0f);
  c.add(0, where(gt(x, zero), c.dy(), where(lt(x, zero), -c.dy(), zero)));
}
void grad_exp(GradContext& c) { c.add(0, c.dy() * c.out()); }
void grad_log(GradContext& c) { c.add(0, c.dy() / c.in(0)); }
void grad_sqrt(GradContext& c) { c.add(0, c.dy() * 0.5f / c.out()); }
void grad_rsqrt(GradContext& c) { c.add(0, c.dy() * pow(c.out(), 3.0f) * -0.5f); }
void grad_reciprocal(GradContext& c) { c.add(0, -(c.dy() * c.out() * c.out())); }
void grad_relu(GradContext& c) { c.add(0, where(gt(c.in(0), c.scalar(0.0f)), c.dy(), c.scalar(0.0f))); }
void grad_gelu(GradContext& c) { c.add(0, c.graph().add(Op::GeluBackward, {c.in(0), c.dy()})); }
void grad_gelu_tanh(GradContext& c) { c.add(0, c.graph().add(Op::GeluTanhBackward, {c.in(0), c.dy()})); }
void grad_silu(GradContext& c) { c.add(0, c.graph().add(Op::SiluBackward, {c.in(0), c.dy()})); }
void grad_sigmoid(GradContext& c) { c.add(0, c.dy() * c.out() * (1.0f - c.out())); }
void grad_tanh(GradContext& c) { c.add(0, c.dy() * (1.0f - c.out() * c.out())); }
void grad_erf(GradContext& c) {  // 2/sqrt(pi) exp(-x^2)
  c.add(0, c.dy() * exp(-(c.in(0) * c.in(0))) * 1.1283791670955126f);
}
void grad_sin(GradContext& c) { c.add(0, c.dy() * cos(c.in(0))); }
void grad_cos(GradContext& c) { c.add(0, -(c.dy() * sin(c.in(0)))); }
void grad_pow_scalar(GradContext& c) {
  auto s = static_cast<float>(c.attrs().scalar);
  if (s == 0.0f) return c.add(0, c.zeros(c.in(0).shape()));
  Tensor dpow = s == 1.0f ? c.dy() : c.dy() * (s == 2.0f ? c.in(0) : pow(c.in(0), s - 1.0f)) * s;
  c.add(0, dpow);
}

void grad_add(GradContext& c) {
  if (c.needs(0)) c.add(0, c.dy());
  if (c.needs(1)) c.add(1, c.dy());
}
void grad_sub(GradContext& c) {
  if (c.needs(0)) c.add(0, c.dy());
  if (c.needs(1)) c.add(1, -c.dy());
}
void grad_mul(GradContext& c) {
  if (c.needs(0)) c.add(0, c.dy() * c.in(1));
  if (c.needs(1)) c.add(1, c.dy() * c.in(0));
}
// swiglu(g, u) = silu(g) * u: d g = silu'(g) * (dy * u), d u = dy * silu(g).
void grad_swiglu(GradContext& c) {
  if (c.needs(0)) c.add(0, c.graph().add(Op::SiluBackward, {c.in(0), c.dy() * c.in(1)}));
  if (c.needs(1)) c.add(1, c.dy() * silu(c.in(0)));
}
void grad_div(GradContext& c) {
  if (c.needs(0)) c.add(0, c.dy() / c.in(1));
  if (c.needs(1)) c.add(1, -(c.dy() * c.out() / c.in(1)));
}
// maximum/minimum: the larger (smaller) side takes dy; ties split it evenly, like PyTorch.
static void grad_extremum(GradContext& c, bool is_max) {
  Tensor a = c.in(0), b = c.in(1), zero = c.scalar(0.0f), half = c.dy() * 0.5f;
  Tensor tie = eq(a, b);
  if (c.needs(0)) c.add(0, where(is_max ? gt(a, b) : lt(a, b), c.dy(), where(tie, half, zero)));
  if (c.needs(1)) c.add(1, where(is_max ? lt(a, b) : gt(a, b), c.dy(), where(tie, half, zero)));
}
void grad_maximum(GradContext& c) { grad_extremum(c, true); }
void grad_minimum(GradContext& c) { grad_extremum(c, false); }
void grad_where(GradContext& c) {
  Tensor zero = c.scalar(0.0f);
  if (c.needs(1)) c.add(1, where(c.in(0), c.dy(), zero));
  if (c.needs(2)) c.add(2, where(c.in(0), zero, c.dy()));
}
// Between float types the gradient passes through (autodiff hands it back in f32).
void grad_cast(GradContext& c) {
  if (is_float(c.in(0).dtype())) c.add(0, c.dy());
}

}  // namespace meganeura::autodiff
