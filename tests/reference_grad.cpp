// The reference gradients: one loop nest per op, in double, PyTorch semantics. Shares nothing
// with src/autodiff; the forward values come from the forward reference (reference.cpp).
#include "reference_grad.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>

#include "reference_attention.hpp"
#include "reference_index.hpp"

namespace mntest {

using meganeura::DType;
using meganeura::Node;
using meganeura::Op;
using meganeura::Shape;

namespace {

using namespace index;

int64_t wrap_index(double raw, int64_t dim) {
  int64_t i = static_cast<int64_t>(raw);
  if (i < 0) i += dim;
  if (i < 0 || i >= dim) throw ReferenceError("reference_grad: index out of range");
  return i;
}

RefTensor zeros(const Shape& s) {
  RefTensor t;
  t.shape = s;
  t.dtype = DType::f32;
  t.v.assign(static_cast<size_t>(count(s)), 0.0);
  return t;
}

// Sums a cotangent of the broadcast shape `out` back to the operand's shape `in`.
RefTensor unbroadcast(const RefTensor& g, const Shape& in) {
  RefTensor r = zeros(in);
  const auto st = broadcast_strides(in, g.shape);
  for_each_index(g.shape, [&](int64_t i, const std::vector<int64_t>& idx) { r.v[dot(idx, st)] += g.v[i]; });
  return r;
}

// Reads operand `x` (broadcast to `out`) at the output's multi-index.
struct Bcast {
  const RefTensor& x;
  std::vector<int64_t> st;
  Bcast(const RefTensor& x, const Shape& out) : x(x), st(broadcast_strides(x.shape, out)) {}
  double at(const std::vector<int64_t>& idx) const { return x.v[dot(idx, st)]; }
};

constexpr double kPi = 3.14159265358979323846;

// d unary(x) / dx, given x and y = unary(x).
double unary_derivative(Op op, double x, double y, double p) {
  switch (op) {
    case Op::Neg: return -1.0;
    case Op::Abs: return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0);
    case Op::Exp: return y;
    case Op::Log: return 1.0 / x;
    case Op::Sqrt: return 0.5 / std::sqrt(x);
    case Op::Rsqrt: return -0.5 / (x * std::sqrt(x));
    case Op::Reciprocal: return -1.0 / (x * x);
    case Op::Relu: return x > 0 ? 1.0 : 0.0;
    case Op::Gelu: {
      const double cdf = 0.5 * (1.0 + std::erf(x / std::sqrt(2.0)));
      const double pdf = std::exp(-0.5 * x * x) / std::sqrt(2.0 * kPi);
      return cdf + x * pdf;
    }
    case Op::GeluTanh: {
      const double c = std::sqrt(2.0 / kPi);
      const double u = c * (x + 0.044715 * x * x * x);
      const double t = std::tanh(u);
      return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * c * (1.0 + 3.0 * 0.044715 * x * x);
    }
    case Op::Silu: {
      const double s = 1.0 / (1.0 + std::exp(-x));
      return s * (1.0 + x * (1.0 - s));
    }
    case Op::Sigmoid: return y * (1.0 - y);
    case Op::Tanh: return 1.0 - y * y;
    case Op::Erf: return 2.0 / std::sqrt(kPi) * std::exp(-x * x);
    case Op::Sin: return std::cos(x);
    case Op::Cos: return -std::sin(x);
    case Op::PowScalar: return p == 0 ? 0.0 : p * std::pow(x, p - 1.0);
    default: throw ReferenceError("reference_grad: not a unary op");
  }
}

bool carries_gradient(DType t) { return meganeura::is_float(t); }

double clamped_log(double v) { return std::max(std::log(v), -100.0); }

// Geometry of op(a)·op(b) with broadcast batch dims, as the forward reference reads it.
struct MatMulShape {
  int64_t M, K, N;
  Shape batch;
  std::vector<int64_t> sa, sb;  // batch strides (in matrices) of a and b
  bool ta, tb;
  int64_t ia(int64_t ao, int64_t m, int64_t k) const { return ta ? ao + k * M + m : ao + m * K + k; }
  int64_t ib(int64_t bo, int64_t k, int64_t j) const { return tb ? bo + j * K + k : bo + k * N + j; }
};

MatMulShape matmul_shape(const Shape& a, const Shape& b, const Shape& y, bool ta, bool tb) {
  const size_t ra = a.size(), rb = b.size();
  MatMulShape s{ta ? a[ra - 1] : a[ra - 2],
                ta ? a[ra - 2] : a[ra - 1],
                tb ? b[rb - 2] : b[rb - 1],
                Shape(y.begin(), y.end() - 2),
                {},
                {},
                ta,
                tb};
  s.sa = broadcast_strides(Shape(a.begin(), a.end() - 2), s.batch);
  s.sb = broadcast_strides(Shape(b.begin(), b.end() - 2), s.batch);
  return s;
}

// C[m,j] = sum_k A[m,k] B[k,j]: dA[m,k] += G[m,j] B[k,j], dB[k,j] += A[m,k] G[m,j]; broadcast
// batch dims accumulate into the same operand slice.
void matmul_vjp(const MatMulShape& s, const RefTensor& a, const RefTensor& b, const RefTensor& g, RefTensor& ga,
                RefTensor& gb) {
  ga = zeros(a.shape);
  gb = zeros(b.shape);
  for_each_index(s.batch, [&](int64_t bi, const std::vector<int64_t>& idx) {
    const int64_t ao = dot(idx, s.sa) * s.M * s.K, bo = dot(idx, s.sb) * s.K * s.N;
    for (int64_t m = 0; m < s.M; ++m)
      for (int64_t j = 0; j < s.N; ++j) {
        const double gv = g.v[bi * s.M * s.N + m * s.N + j];
        for (int64_t k = 0; k < s.K; ++k) {
          const int64_t ia = s.ia(ao, m, k), ib = s.ib(bo, k, j);
          ga.v[ia] += gv * b.v[ib];
          gb.v[ib] += gv * a.v[ia];
        }
      }
  });
}

}  // namespace

std::vector<std::optional<RefTensor>> reference_vjp(const Node& n, const std::vector<const RefTensor*>& ins,
                                                    const RefTensor& y, const RefTensor& g) {
  std::vector<std::optional<RefTensor>> r(ins.size());
  auto in = [&](size_t k) -> const RefTensor& { return *ins.at(k); };
  const auto& A = n.attrs;
  if (g.v.size() != y.v.size()) throw ReferenceError("reference_grad: cotangent size differs from the output's");

  switch (n.op) {
    case Op::Neg:
    case Op::Abs:
    case Op::Exp:
    case Op::Log:
    case Op::Sqrt:
    case Op::Rsqrt:
    case Op::Reciprocal:
    case Op::Relu:
    case Op::Gelu:
    case Op::GeluTanh:
    case Op::Silu:
    case Op::Sigmoid:
    case Op::Tanh:
    case Op::Erf:
    case Op::Sin:
    case Op::Cos:
    case Op::PowScalar: {
      const auto& x = in(0);
      RefTensor d = zeros(x.shape);
      for (size_t i = 0; i < d.v.size(); ++i) d.v[i] = g.v[i] * unary_derivative(n.op, x.v[i], y.v[i], A.scalar);
      r[0] = std::move(d);
      return r;
    }
    case Op::Add:
    case Op::Sub:
    case Op::Mul:
    case Op::Div:
    case Op::Maximum:
    case Op::Minimum:
    case Op::SwiGlu: {
      const Bcast a(in(0), y.shape), b(in(1), y.shape);
      RefTensor ga = zeros(y.shape), gb = zeros(y.shape);
      for_each_index(y.shape, [&](int64_t i, const std::vector<int64_t>& idx) {
        const double av = a.at(idx), bv = b.at(idx), gi = g.v[i];
        double da = 0, db = 0;
        switch (n.op) {
          case Op::Add:
            da = gi;
            db = gi;
            break;
          case Op::Sub:
            da = gi;
            db = -gi;
            break;
          case Op::Mul:
            da = gi * bv;
            db = gi * av;
            break;
          case Op::Div:
            da = gi / bv;
            db = -gi * av / (bv * bv);
            break;
          case Op::SwiGlu: {  // silu(g) * u: d g = gi u sigma(g) (1 + g (1 - sigma(g))), d u = gi silu(g)
            const double s = 1.0 / (1.0 + std::exp(-av));
            da = gi * bv * s * (1.0 + av * (1.0 - s));
            db = gi * av * s;
            break;
          }
          case Op::Maximum:
          case Op::Minimum: {
            const bool a_wins = n.op == Op::Maximum ? av > bv : av < bv;
            if (av == bv) {
              da = 0.5 * gi;
              db = 0.5 * gi;
            } else if (a_wins)
              da = gi;
            else
              db = gi;
            break;
          }
          default: break;
        }
        ga.v[i] = da;
        gb.v[i] = db;
      });
      r[0] = unbroadcast(ga, in(0).shape);
      r[1] = unbroadcast(gb, in(1).shape);
      return r;
    }
    case Op::Rotary: {  // y_j = x_j c_j + R(x)_j s_j, R(x)_j = -x_{j+h} (j < h), x_{j-h}: scatter each term back
      if (A.count != 0) break;
      const Bcast c(in(1), y.shape), s(in(2), y.shape);
      const int64_t h = y.shape.back() / 2;
      RefTensor gx = zeros(y.shape), gc = zeros(y.shape), gs = zeros(y.shape);
      for_each_index(y.shape, [&](int64_t i, const std::vector<int64_t>& idx) {
        const bool lo = idx.back() < h;
        const int64_t partner = lo ? i + h : i - h;
        const double sign = lo ? -1.0 : 1.0, gi = g.v[i];
        gx.v[i] += gi * c.at(idx);
        gx.v[partner] += gi * s.at(idx) * sign;
        gc.v[i] = gi * in(0).v[i];
        gs.v[i] = gi * sign * in(0).v[partner];
      });
      r[0] = gx;
      if (carries_gradient(in(1).dtype)) r[1] = unbroadcast(gc, in(1).shape);
      if (carries_gradient(in(2).dtype)) r[2] = unbroadcast(gs, in(2).shape);
      return r;
    }
    case Op::Where: {
      const Bcast c(in(0), y.shape);
      RefTensor ga = zeros(y.shape), gb = zeros(y.shape);
      for_each_index(y.shape,
                     [&](int64_t i, const std::vector<int64_t>& idx) { (c.at(idx) != 0.0 ? ga : gb).v[i] = g.v[i]; });
      if (carries_gradient(in(1).dtype)) r[1] = unbroadcast(ga, in(1).shape);
      if (carries_gradient(in(2).dtype)) r[2] = unbroadcast(gb, in(2).shape);
      return r;
    }
    case Op::Cast: {
      // Float-to-float casts pass the gradient through (PyTorch casts it back; we keep f32).
      if (carries_gradient(in(0).dtype) && carries_gradient(A.dtype)) {
        RefTensor d = zeros(in(0).shape);
        d.v = g.v;
        r[0] = std::move(d);
      }
      return r;
    }
    case Op::MatMul:
    case Op::MatMulAdd: {
      if (n.op == Op::MatMulAdd) r[2] = unbroadcast(g, in(2).shape);
      const MatMulShape ms = matmul_shape(in(0).shape, in(1).shape, y.shape, A.transpose_a, A.transpose_b);
      RefTensor ga, gb;
      matmul_vjp(ms, in(0), in(1), g, ga, gb);
      r[0] = std::move(ga);
      r[1] = std::move(gb);
      return r;
    }
    case Op::Linear: {  // y = act(z) + res, z = op(a)·op(b) + bias; then matmul with dz
      const auto& a = in(0);
      const auto& b = in(1);
      const auto& bias = in(2);
      const MatMulShape ms = matmul_shape(a.shape, b.shape, y.shape, A.transpose_a, A.transpose_b);
      static const Op acts[] = {Op::Input, Op::Relu, Op::Gelu, Op::GeluTanh, Op::Silu};
      RefTensor dz = zeros(y.shape), db = zeros(bias.shape);
      for_each_index(ms.batch, [&](int64_t bi, const std::vector<int64_t>& idx) {  // z in double, from scratch
        const int64_t ao = dot(idx, ms.sa) * ms.M * ms.K, bo = dot(idx, ms.sb) * ms.K * ms.N;
        for (int64_t m = 0; m < ms.M; ++m)
          for (int64_t j = 0; j < ms.N; ++j) {
            double z = bias.v[j];
            for (int64_t k = 0; k < ms.K; ++k) z += a.v[ms.ia(ao, m, k)] * b.v[ms.ib(bo, k, j)];
            const int64_t o = bi * ms.M * ms.N + m * ms.N + j;
            dz.v[o] = g.v[o] * (A.count == 0 ? 1.0 : unary_derivative(acts[A.count], z, 0.0, 0.0));
            db.v[j] += dz.v[o];
          }
      });
      RefTensor ga, gb;
      matmul_vjp(ms, a, b, dz, ga, gb);
      r[0] = std::move(ga);
      r[1] = std::move(gb);
      r[2] = std::move(db);
      if (ins.size() > 3) r[3] = unbroadcast(g, in(3).shape);
      return r;
    }
    case Op::Attention: {
      RefTensor dq, dk, dv;
      attention_reference_vjp(n, in(0), in(1), in(2), g, nullptr, ins.size() > 3 ? &in(3) : nullptr, dq, dk, dv);
      r[0] = std::move(dq);
      r[1] = std::move(dk);
      r[2] = std::move(dv);
      return r;
    }
    case Op::Sum:
    case Op::Mean:
    case Op::Max: {
      const auto& x = in(0);
      const size_t rk = x.shape.size();
      std::vector<bool> red(rk, A.axes.empty());
      for (int64_t ax : A.axes) red.at(static_cast<size_t>(norm_axis(ax, rk))) = true;
      Shape kept = x.shape;
      int64_t cnt = 1;
      for (size_t d = 0; d < rk; ++d)
        if (red[d]) {
          cnt *= kept[d];
          kept[d] = 1;
        }
      auto ks = contiguous_strides(kept);
      for (size_t d = 0; d < rk; ++d)
        if (red[d]) ks[d] = 0;
      RefTensor d = zeros(x.shape);
      std::vector<double> ties(y.v.size(), 0.0);
      if (n.op == Op::Max)
        for_each_index(x.shape, [&](int64_t i, const std::vector<int64_t>& idx) {
          const int64_t o = dot(idx, ks);
          if (x.v[i] == y.v[o]) ties[o] += 1;
        });
      for_each_index(x.shape, [&](int64_t i, const std::vector<int64_t>& idx) {
        const int64_t o = dot(idx, ks);
        if (n.op == Op::Sum)
          d.v[i] = g.v[o];
        else if (n.op == Op::Mean)
          d.v[i] = g.v[o] / static_cast<double>(cnt);
        else
          d.v[i] = x.v[i] == y.v[o] ? g.v[o] / ties[o] : 0.0;
      });
      r[0] = std::move(d);
      return r;
    }
    case Op::Softmax:
    case Op::LogSoftmax: {
      const auto& x = in(0);
      int64_t outer, len, inner;
      split_axis(x.shape, norm_axis(A.axis, x.shape.size()), outer, len, inner);
      RefTensor d = zeros(x.shape);
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          auto at = [&](int64_t k) { return (o * len + k) * inner + i; };
          if (n.op == Op::Softmax) {
            double s = 0;  // sum_k g_k y_k
            for (int64_t k = 0; k < len; ++k) s += g.v[at(k)] * y.v[at(k)];
            for (int64_t k = 0; k < len; ++k) d.v[at(k)] = y.v[at(k)] * (g.v[at(k)] - s);
          } else {
            double s = 0;  // sum_k g_k
            for (int64_t k = 0; k < len; ++k) s += g.v[at(k)];
            for (int64_t k = 0; k < len; ++k) d.v[at(k)] = g.v[at(k)] - std::exp(y.v[at(k)]) * s;
          }
        }
      r[0] = std::move(d);
      return r;
    }
    case Op::RmsNorm:
    case Op::LayerNorm: {
      const auto& x = in(0);
      const int64_t D = x.shape.back();
      const int64_t rows = count(x.shape) / D;
      const RefTensor* w = ins.size() > 1 ? &in(1) : nullptr;
      const bool has_b = ins.size() > 2;
      RefTensor dx = zeros(x.shape), dw = zeros({D}), db = zeros({D});
      const double eps = A.scalar;
      for (int64_t row = 0; row < rows; ++row) {
        const double* xr = &x.v[row * D];
        const double* gr = &g.v[row * D];
        double mean = 0, var = 0;
        if (n.op == Op::LayerNorm) {
          for (int64_t k = 0; k < D; ++k) mean += xr[k];
          mean /= D;
        }
        for (int64_t k = 0; k < D; ++k) var += (xr[k] - mean) * (xr[k] - mean);
        var /= D;
        const double inv = 1.0 / std::sqrt(var + eps);
        std::vector<double> xhat(D), gy(D);
        for (int64_t k = 0; k < D; ++k) {
          xhat[k] = (xr[k] - mean) * inv;
          gy[k] = gr[k] * (w ? w->v[k] : 1.0);
          dw.v[k] += gr[k] * xhat[k];
          db.v[k] += gr[k];
        }
        double mg = 0, mgx = 0;  // mean(gy), mean(gy * xhat)
        for (int64_t k = 0; k < D; ++k) {
          mg += gy[k];
          mgx += gy[k] * xhat[k];
        }
        mg /= D;
        mgx /= D;
        for (int64_t k = 0; k < D; ++k)
          dx.v[row * D + k] =
              n.op == Op::LayerNorm ? inv * (gy[k] - mg - xhat[k] * mgx) : inv * (gy[k] - xhat[k] * mgx);
      }
      r[0] = std::move(dx);
      if (w) r[1] = std::move(dw);
      if (has_b) r[2] = std::move(db);
      return r;
    }
    case Op::Reshape: {
      if (!carries_gradient(in(0).dtype)) return r;
      RefTensor d = zeros(in(0).shape);
      d.v = g.v;
      r[0] = std::move(d);
      return r;
    }
    case Op::Permute: {
      const auto& x = in(0);
      if (!carries_gradient(x.dtype)) return r;
      const auto xs = contiguous_strides(x.shape);
      std::vector<int64_t> st(A.axes.size());
      for (size_t k = 0; k < A.axes.size(); ++k) st[k] = xs.at(static_cast<size_t>(A.axes[k]));
      RefTensor d = zeros(x.shape);
      for_each_index(y.shape, [&](int64_t i, const std::vector<int64_t>& idx) { d.v[dot(idx, st)] += g.v[i]; });
      r[0] = std::move(d);
      return r;
    }
    case Op::Slice: {
      const auto& x = in(0);
      if (!carries_gradient(x.dtype)) return r;
      auto st = contiguous_strides(x.shape);
      const int64_t ax = norm_axis(A.axis, x.shape.size());
      const int64_t base = A.start * st[ax];
      st[ax] *= A.step;
      RefTensor d = zeros(x.shape);
      for_each_index(y.shape, [&](int64_t i, const std::vector<int64_t>& idx) { d.v[base + dot(idx, st)] += g.v[i]; });
      r[0] = std::move(d);
      return r;
    }
    case Op::Concat: {
      const int64_t ax = norm_axis(A.axis, y.shape.size());
      int64_t outer, total, inner;
      split_axis(y.shape, ax, outer, total, inner);
      int64_t off = 0;
      for (size_t k = 0; k < ins.size(); ++k) {
        const auto& x = in(k);
        const int64_t len = x.shape[ax];
        if (carries_gradient(x.dtype)) {
          RefTensor d = zeros(x.shape);
          for (int64_t o = 0; o < outer; ++o)
            for (int64_t j = 0; j < len * inner; ++j) d.v[o * len * inner + j] = g.v[(o * total + off) * inner + j];
          r[k] = std::move(d);
        }
        off += len;
      }
      return r;
    }
    case Op::BroadcastTo: {
      if (carries_gradient(in(0).dtype)) r[0] = unbroadcast(g, in(0).shape);
      return r;
    }
    case Op::Gather: {
      const auto& x = in(0);
      const auto& idx = in(1);
      if (!carries_gradient(x.dtype)) return r;
      int64_t outer, dim, inner;
      split_axis(x.shape, norm_axis(A.axis, x.shape.size()), outer, dim, inner);
      const int64_t ni = static_cast<int64_t>(idx.v.size());
      RefTensor d = zeros(x.shape);
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t j = 0; j < ni; ++j) {
          if (padding_tap(A, idx.v[j], dim)) continue;
          const int64_t src = wrap_index(idx.v[j], dim);
          for (int64_t i = 0; i < inner; ++i) d.v[(o * dim + src) * inner + i] += g.v[(o * ni + j) * inner + i];
        }
      r[0] = std::move(d);
      return r;
    }
    case Op::ScatterAdd: {
      const auto& base = in(0);
      const auto& idx = in(1);
      const auto& upd = in(2);
      RefTensor dbase = zeros(base.shape);
      dbase.v = g.v;
      RefTensor dupd = zeros(upd.shape);
      int64_t outer, dim, inner;
      split_axis(base.shape, norm_axis(A.axis, base.shape.size()), outer, dim, inner);
      const int64_t ni = static_cast<int64_t>(idx.v.size());
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t j = 0; j < ni; ++j) {
          if (padding_tap(A, idx.v[j], dim)) continue;  // reads 0 as a gradient
          const int64_t dst = wrap_index(idx.v[j], dim);
          for (int64_t i = 0; i < inner; ++i) dupd.v[(o * ni + j) * inner + i] = g.v[(o * dim + dst) * inner + i];
        }
      r[0] = std::move(dbase);
      r[2] = std::move(dupd);
      return r;
    }
    case Op::CrossEntropy: {
      const auto& x = in(0);
      const auto& lab = in(1);
      const int64_t C = x.shape.back();
      const int64_t rows = static_cast<int64_t>(lab.v.size());
      int64_t valid = 0;
      for (int64_t row = 0; row < rows; ++row)
        if (static_cast<int64_t>(lab.v[row]) != A.ignore_index) ++valid;
      RefTensor d = zeros(x.shape);
      for (int64_t row = 0; row < rows; ++row) {
        const int64_t l = static_cast<int64_t>(lab.v[row]);
        if (l == A.ignore_index) continue;
        const double* xr = &x.v[row * C];
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t k = 0; k < C; ++k) mx = std::max(mx, xr[k]);
        double s = 0;
        for (int64_t k = 0; k < C; ++k) s += std::exp(xr[k] - mx);
        for (int64_t k = 0; k < C; ++k)
          d.v[row * C + k] = g.v[0] * (std::exp(xr[k] - mx) / s - (k == l ? 1.0 : 0.0)) / static_cast<double>(valid);
      }
      r[0] = std::move(d);
      return r;
    }
    case Op::MseLoss:
    case Op::BinaryCrossEntropy:
    case Op::BinaryCrossEntropyWithLogits: {
      const auto& p = in(0);
      const auto& t = in(1);
      const double nn = static_cast<double>(p.v.size());
      RefTensor dp = zeros(p.shape), dt = zeros(t.shape);
      for (size_t i = 0; i < p.v.size(); ++i) {
        const double x = p.v[i], z = t.v[i], s = g.v[0] / nn;
        if (n.op == Op::MseLoss) {
          dp.v[i] = s * 2.0 * (x - z);
          dt.v[i] = -dp.v[i];
        } else if (n.op == Op::BinaryCrossEntropy) {
          dp.v[i] = s * (x - z) / std::max(x * (1.0 - x), 1e-12);
          dt.v[i] = s * (clamped_log(1.0 - x) - clamped_log(x));
        } else {
          dp.v[i] = s * (1.0 / (1.0 + std::exp(-x)) - z);
          dt.v[i] = -s * x;
        }
      }
      r[0] = std::move(dp);
      r[1] = std::move(dt);
      return r;
    }
    default: break;
  }
  throw ReferenceError("reference_grad: no gradient rule for " + std::string(meganeura::op_name(n.op)));
}

std::vector<RefTensor> reference_backward(const meganeura::Graph& g, const std::vector<RefTensor>& values, int output,
                                          const RefTensor& cotangent, const std::vector<int>& wrt) {
  std::vector<std::optional<RefTensor>> cot(static_cast<size_t>(g.size()));
  RefTensor seed = cotangent;
  seed.shape = g.node(output).shape;
  seed.dtype = DType::f32;
  cot.at(static_cast<size_t>(output)) = std::move(seed);
  for (int id = output; id >= 0; --id) {
    const Node& n = g.node(id);
    auto& c = cot[static_cast<size_t>(id)];
    if (!c || n.inputs.empty()) continue;
    std::vector<const RefTensor*> ins;
    for (int k : n.inputs) ins.push_back(&values.at(static_cast<size_t>(k)));
    auto grads = reference_vjp(n, ins, values.at(static_cast<size_t>(id)), *c);
    for (size_t k = 0; k < grads.size(); ++k) {
      if (!grads[k] || !carries_gradient(g.node(n.inputs[k]).dtype)) continue;
      auto& dst = cot[static_cast<size_t>(n.inputs[k])];
      if (!dst)
        dst = std::move(*grads[k]);
      else
        for (size_t i = 0; i < dst->v.size(); ++i) dst->v[i] += grads[k]->v[i];
    }
  }
  std::vector<RefTensor> out;
  for (int id : wrt) {
    const auto& c = cot.at(static_cast<size_t>(id));
    RefTensor t = c ? *c : zeros(g.node(id).shape);
    t.shape = g.node(id).shape;
    t.dtype = DType::f32;
    out.push_back(std::move(t));
  }
  return out;
}

double reference_objective(const meganeura::Graph& g, const std::map<std::string, meganeura::HostTensor>& feeds,
                           int output, const RefTensor& cotangent) {
  const auto vals = evaluate(g, feeds);
  const auto& y = vals.at(static_cast<size_t>(output));
  double L = 0;
  for (size_t i = 0; i < y.v.size(); ++i) L += y.v[i] * cotangent.v[i];
  return L;
}

::testing::AssertionResult check_finite_differences(const meganeura::Graph& g,
                                                    const std::map<std::string, meganeura::HostTensor>& feeds,
                                                    int output, const RefTensor& cotangent, const std::vector<int>& wrt,
                                                    const std::vector<RefTensor>& grads, std::mt19937_64& rng,
                                                    const FiniteDifferenceOptions& o) {
  std::ostringstream fail;
  fail.precision(12);
  int bad = 0, checked = 0;
  for (size_t w = 0; w < wrt.size(); ++w) {
    const Node& leaf = g.node(wrt[w]);
    if (leaf.op != Op::Input && leaf.op != Op::Parameter) continue;
    if (!carries_gradient(leaf.dtype)) continue;
    const RefTensor& grad = grads.at(w);
    // An f32 copy of the feed: nudges of 1e-6 survive where 16-bit storage would round them off.
    const RefTensor base = from_host(feeds.at(leaf.name));
    std::vector<float> vals(base.v.begin(), base.v.end());
    double mean_abs = 0;
    for (double v : grad.v) mean_abs += std::fabs(v);
    mean_abs /= grad.v.empty() ? 1.0 : static_cast<double>(grad.v.size());
    std::vector<int64_t> picks(vals.size());
    for (size_t i = 0; i < picks.size(); ++i) picks[i] = static_cast<int64_t>(i);
    if (static_cast<int>(picks.size()) > o.max_samples) {
      std::shuffle(picks.begin(), picks.end(), rng);
      picks.resize(static_cast<size_t>(o.max_samples));
    }
    auto nudged = feeds;
    for (int64_t i : picks) {
      const float x0 = vals[static_cast<size_t>(i)];
      const double h = o.rel_step * std::max(std::fabs(static_cast<double>(x0)), 1.0);
      const float xp = static_cast<float>(x0 + h), xm = static_cast<float>(x0 - h);
      auto Y = [&](float xv) {
        std::vector<float> v = vals;
        v[static_cast<size_t>(i)] = xv;
        meganeura::HostTensor ht;
        ht.shape = base.shape;
        ht.dtype = DType::f32;
        ht.bytes.resize(v.size() * 4);
        std::memcpy(ht.bytes.data(), v.data(), ht.bytes.size());
        nudged[leaf.name] = ht;
        return evaluate(g, nudged).at(static_cast<size_t>(output)).v;
      };
      // L(x+) - L(x-) summed from the per-element differences: no cancellation between the
      // large terms of L itself.
      const std::vector<double> yp = Y(xp), ym = Y(xm);
      double dL = 0;
      for (size_t k = 0; k < yp.size(); ++k) dL += (yp[k] - ym[k]) * cotangent.v[k];
      const double fd = dL / (static_cast<double>(xp) - static_cast<double>(xm));
      const double ref = grad.v[static_cast<size_t>(i)];
      const double bound = o.tol * std::max({std::fabs(ref), mean_abs, 1e-9});
      ++checked;
      if (!(std::fabs(fd - ref) <= bound)) {
        if (++bad <= 5)
          fail << "\n  d/d " << leaf.name << "[" << i << "] (x = " << x0 << "): finite difference " << fd
               << ", reference gradient " << ref << ", |diff| " << std::fabs(fd - ref) << " > " << bound;
      }
    }
    nudged[leaf.name] = feeds.at(leaf.name);
  }
  if (bad == 0) return ::testing::AssertionSuccess() << checked << " elements agree";
  return ::testing::AssertionFailure() << bad << " of " << checked
                                       << " sampled elements: reference gradient disagrees with central differences"
                                       << fail.str();
}

}  // namespace mntest
