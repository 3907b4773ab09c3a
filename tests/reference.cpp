// The reference evaluator: one plain loop nest per op, in double, PyTorch semantics.
#include "reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "reference_attention.hpp"
#include "reference_index.hpp"

namespace mntest {

using meganeura::DType;
using meganeura::Node;
using meganeura::Op;
using meganeura::Shape;

// ---- 16-bit floats ------------------------------------------------------------------------------

uint16_t f32_to_f16_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t a = x & 0x7fffffffu;
  if (a >= 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u | (a > 0x7f800000u ? 0x200u : 0u));
  if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 rounds to inf
  if (a < 0x38800000u) {  // below the smallest normal half (2^-14): a multiple of 2^-24
    float af;
    std::memcpy(&af, &a, 4);
    const double scaled = static_cast<double>(af) * 16777216.0;  // exact
    const double r = std::nearbyint(scaled);                     // ties to even (default mode)
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(r));
  }
  const uint32_t e = ((a >> 23) - 127u + 15u);
  const uint32_t m = a & 0x7fffffu;
  uint32_t h = (e << 10) | (m >> 13);
  const uint32_t rem = m & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // a carry moves into the exponent
  return static_cast<uint16_t>(sign | h);
}

float f16_bits_to_f32(uint16_t h) {
  const double sign = (h & 0x8000u) ? -1.0 : 1.0;
  const int e = (h >> 10) & 0x1f;
  const int m = h & 0x3ff;
  if (e == 0) return static_cast<float>(sign * std::ldexp(static_cast<double>(m), -24));
  if (e == 31)
    return m ? std::numeric_limits<float>::quiet_NaN()
             : static_cast<float>(sign * std::numeric_limits<double>::infinity());
  return static_cast<float>(sign * std::ldexp(1.0 + m / 1024.0, e - 15));
}

uint16_t f32_to_bf16_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  const uint32_t lsb = (x >> 16) & 1u;
  x += 0x7fffu + lsb;
  return static_cast<uint16_t>(x >> 16);
}

float bf16_bits_to_f32(uint16_t h) {
  const uint32_t x = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

// ---- helpers ------------------------------------------------------------------------------------

namespace {

using namespace index;

double round_to(DType t, double v) {
  switch (t) {
    case DType::f32: return static_cast<double>(static_cast<float>(v));
    case DType::f16: return f16_bits_to_f32(f32_to_f16_bits(static_cast<float>(v)));
    case DType::bf16: return bf16_bits_to_f32(f32_to_bf16_bits(static_cast<float>(v)));
    case DType::i32: return std::trunc(v);
    case DType::u32: return std::trunc(v);
  }
  return v;
}

double unary(Op op, double x, double scalar) {
  constexpr double kSqrt2 = 1.41421356237309504880;
  constexpr double kPi = 3.14159265358979323846;
  switch (op) {
    case Op::Neg: return -x;
    case Op::Abs: return std::fabs(x);
    case Op::Exp: return std::exp(x);
    case Op::Log: return std::log(x);
    case Op::Sqrt: return std::sqrt(x);
    case Op::Rsqrt: return 1.0 / std::sqrt(x);
    case Op::Reciprocal: return 1.0 / x;
    case Op::Relu: return x > 0 ? x : 0.0;
    case Op::Gelu: return 0.5 * x * (1.0 + std::erf(x / kSqrt2));
    case Op::GeluTanh:
      // 1 + tanh(z) = 2 / (1 + exp(-2z)), without the cancellation for very negative z.
      return x / (1.0 + std::exp(-2.0 * std::sqrt(2.0 / kPi) * (x + 0.044715 * x * x * x)));
    case Op::Silu: return x / (1.0 + std::exp(-x));
    case Op::Sigmoid: return 1.0 / (1.0 + std::exp(-x));
    case Op::Tanh: return std::tanh(x);
    case Op::Erf: return std::erf(x);
    case Op::Sin: return std::sin(x);
    case Op::Cos: return std::cos(x);
    case Op::PowScalar: return std::pow(x, scalar);
    default: throw ReferenceError("reference: not a unary op");
  }
}

// f'(x) of the activation whose backward op is `op` (the op computes dy * f'(x)).
double unary_grad(Op op, double x) {
  constexpr double kPi = 3.14159265358979323846;
  switch (op) {
    case Op::GeluBackward:  // Phi(x) + x phi(x)
      return 0.5 * std::erfc(-x / std::sqrt(2.0)) + x * std::exp(-0.5 * x * x) / std::sqrt(2.0 * kPi);
    case Op::GeluTanhBackward: {
      // PyTorch's formula with 0.5 (1 + tanh z) = s and 1 - tanh^2 z = 4 s (1 - s), s = sigmoid(2z).
      const double k = std::sqrt(2.0 / kPi), z = k * (x + 0.044715 * x * x * x);
      const double s = 1.0 / (1.0 + std::exp(-2.0 * z)), sc = 1.0 / (1.0 + std::exp(2.0 * z));
      return s + 2.0 * x * s * sc * k * (1.0 + 3.0 * 0.044715 * x * x);
    }
    case Op::SiluBackward: {
      const double s = 1.0 / (1.0 + std::exp(-x));
      return s * (1.0 + x * (1.0 / (1.0 + std::exp(x))));
    }
    default: throw ReferenceError("reference: not an activation backward op");
  }
}

double binary(Op op, double a, double b) {
  switch (op) {
    case Op::Add: return a + b;
    case Op::Sub: return a - b;
    case Op::Mul: return a * b;
    case Op::Div: return a / b;
    case Op::Maximum: return (std::isnan(a) || std::isnan(b)) ? NAN : std::max(a, b);
    case Op::Minimum: return (std::isnan(a) || std::isnan(b)) ? NAN : std::min(a, b);
    case Op::SwiGlu: return a / (1.0 + std::exp(-a)) * b;  // silu(g) * u
    case Op::Equal: return a == b ? 1.0 : 0.0;
    case Op::NotEqual: return a != b ? 1.0 : 0.0;
    case Op::Less: return a < b ? 1.0 : 0.0;
    case Op::LessEqual: return a <= b ? 1.0 : 0.0;
    case Op::Greater: return a > b ? 1.0 : 0.0;
    case Op::GreaterEqual: return a >= b ? 1.0 : 0.0;
    default: throw ReferenceError("reference: not a binary op");
  }
}

int64_t wrap_index(double raw, int64_t dim, const std::string& what) {
  int64_t i = static_cast<int64_t>(raw);
  if (i < 0) i += dim;
  if (i < 0 || i >= dim)
    throw ReferenceError("reference: " + what + " index " + std::to_string(static_cast<int64_t>(raw)) +
                         " out of range for dim " + std::to_string(dim));
  return i;
}

// rms_norm (layer = false: mean 0) / layer_norm statistics of a row: mean and 1/sqrt(var + eps).
void norm_stats(const double* row, int64_t D, bool layer, double eps, double& mean, double& inv) {
  mean = 0;
  double var = 0;
  if (layer) {
    for (int64_t k = 0; k < D; ++k) mean += row[k];
    mean /= static_cast<double>(D);
  }
  for (int64_t k = 0; k < D; ++k) var += (row[k] - mean) * (row[k] - mean);
  var /= static_cast<double>(D);
  inv = 1.0 / std::sqrt(var + eps);
}

// Row softmax of a cross-entropy row (max-subtracted).
std::vector<double> softmax_row(const double* row, int64_t C) {
  double mx = -std::numeric_limits<double>::infinity();
  for (int64_t k = 0; k < C; ++k) mx = std::max(mx, row[k]);
  std::vector<double> p(static_cast<size_t>(C));
  double s = 0;
  for (int64_t k = 0; k < C; ++k) s += p[k] = std::exp(row[k] - mx);
  for (auto& v : p) v /= s;
  return p;
}

RefTensor eval_node(const meganeura::Graph& g, const Node& n, const std::vector<RefTensor>& vals,
                    const std::map<std::string, meganeura::HostTensor>& feeds) {
  RefTensor out;
  out.shape = n.shape;
  out.dtype = n.dtype;
  out.v.assign(static_cast<size_t>(count(n.shape)), 0.0);
  auto in = [&](size_t k) -> const RefTensor& { return vals.at(static_cast<size_t>(n.inputs.at(k))); };
  const auto& A = n.attrs;

  switch (n.op) {
    case Op::Input:
    case Op::Parameter: {
      auto it = feeds.find(n.name);
      if (it == feeds.end()) throw ReferenceError("reference: no value fed for '" + n.name + "'");
      RefTensor t = from_host(it->second);
      if (static_cast<int64_t>(t.v.size()) != count(n.shape))
        throw ReferenceError("reference: wrong element count fed for '" + n.name + "'");
      t.shape = n.shape;
      t.dtype = n.dtype;
      return t;
    }
    case Op::State: return out;  // zeros, as a fresh session holds
    case Op::StepScalars:
    case Op::Accumulate:
    case Op::ClipGradNorm:
    case Op::OptimizerUpdate:  // training sessions have their own host reference (train_util.hpp)
      throw ReferenceError("reference: " + std::string(op_name(n.op)) + " is a training op");
    case Op::Assign: return in(1);  // the target's new value
    case Op::CacheWrite: {          // the state with rows [position, position + S) replaced
      out = in(0);
      const auto& rows = in(1);
      const size_t r = rows.shape.size();
      const int64_t slots = n.shape[r - 2], s = rows.shape[r - 2], inner = rows.shape[r - 1];
      const auto pos = static_cast<int64_t>(in(2).v.at(0));
      if (pos < 0 || pos + s > slots) throw ReferenceError("reference: cache_write position out of range");
      const int64_t outer = count(rows.shape) / (s * inner);
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t k = 0; k < s * inner; ++k) out.v[(o * slots + pos) * inner + k] = rows.v[o * s * inner + k];
      return out;
    }
    case Op::Constant: {
      meganeura::HostTensor h;
      h.shape = n.shape;
      h.dtype = n.dtype;
      h.bytes = n.constant;
      RefTensor t = from_host(h);
      t.shape = n.shape;
      return t;
    }
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
      for (size_t i = 0; i < out.v.size(); ++i) out.v[i] = unary(n.op, x.v[i], A.scalar);
      return out;
    }
    case Op::Add:
    case Op::Sub:
    case Op::Mul:
    case Op::Div:
    case Op::Maximum:
    case Op::Minimum:
    case Op::SwiGlu:
    case Op::Equal:
    case Op::NotEqual:
    case Op::Less:
    case Op::LessEqual:
    case Op::Greater:
    case Op::GreaterEqual: {
      const auto& a = in(0);
      const auto& b = in(1);
      const auto sa = broadcast_strides(a.shape, n.shape), sb = broadcast_strides(b.shape, n.shape);
      for_each_index(n.shape, [&](int64_t i, const std::vector<int64_t>& idx) {
        out.v[i] = binary(n.op, a.v[dot(idx, sa)], b.v[dot(idx, sb)]);
      });
      return out;
    }
    case Op::Where: {
      const auto& c = in(0);
      const auto& a = in(1);
      const auto& b = in(2);
      const auto sc = broadcast_strides(c.shape, n.shape), sa = broadcast_strides(a.shape, n.shape),
                 sb = broadcast_strides(b.shape, n.shape);
      for_each_index(n.shape, [&](int64_t i, const std::vector<int64_t>& idx) {
        out.v[i] = c.v[dot(idx, sc)] != 0.0 ? a.v[dot(idx, sa)] : b.v[dot(idx, sb)];
      });
      return out;
    }
    case Op::Cast: {
      const auto& x = in(0);
      for (size_t i = 0; i < out.v.size(); ++i) {
        const double v = x.v[i];
        // float targets: the value as the GPU holds it (f32), then rounded to the target;
        // integer targets truncate toward zero (C++ semantics, as the kernel ABI documents).
        out.v[i] = meganeura::is_float(A.dtype) ? round_to(A.dtype, round_to(DType::f32, v)) : std::trunc(v);
      }
      return out;
    }
    case Op::MatMul:
    case Op::Linear:
    case Op::MatMulAdd: {
      const auto& a = in(0);
      const auto& b = in(1);
      const size_t ra = a.shape.size(), rb = b.shape.size(), R = n.shape.size();
      if (ra < 2 || rb < 2 || R < 2) throw ReferenceError("reference: matmul needs rank >= 2");
      const int64_t M = A.transpose_a ? a.shape[ra - 1] : a.shape[ra - 2];
      const int64_t K = A.transpose_a ? a.shape[ra - 2] : a.shape[ra - 1];
      const int64_t Kb = A.transpose_b ? b.shape[rb - 1] : b.shape[rb - 2];
      const int64_t N = A.transpose_b ? b.shape[rb - 2] : b.shape[rb - 1];
      if (K != Kb || n.shape[R - 2] != M || n.shape[R - 1] != N)
        throw ReferenceError("reference: matmul shape mismatch");
      Shape batch(n.shape.begin(), n.shape.end() - 2);
      Shape ab(a.shape.begin(), a.shape.end() - 2), bb(b.shape.begin(), b.shape.end() - 2);
      const auto sa = broadcast_strides(ab, batch), sb = broadcast_strides(bb, batch);
      for_each_index(batch, [&](int64_t bi, const std::vector<int64_t>& idx) {
        const int64_t ao = dot(idx, sa) * M * K, bo = dot(idx, sb) * K * N;
        for (int64_t m = 0; m < M; ++m)
          for (int64_t j = 0; j < N; ++j) {
            double acc = 0;
            for (int64_t k = 0; k < K; ++k) {
              const double av = A.transpose_a ? a.v[ao + k * M + m] : a.v[ao + m * K + k];
              const double bv = A.transpose_b ? b.v[bo + j * K + k] : b.v[bo + k * N + j];
              acc += av * bv;
            }
            out.v[bi * M * N + m * N + j] = acc;
          }
      });
      if (n.op == Op::MatMulAdd) {  // acc + residual (broadcast to the output)
        const std::vector<int64_t> rs = broadcast_strides(in(2).shape, n.shape);
        for_each_index(n.shape, [&](int64_t i, const std::vector<int64_t>& idx) { out.v[i] += in(2).v[dot(idx, rs)]; });
      }
      if (n.op == Op::Linear) {  // act(acc + bias[j]) + residual (broadcast to the output)
        static const Op acts[] = {Op::Input, Op::Relu, Op::Gelu, Op::GeluTanh, Op::Silu};
        if (A.count < 0 || A.count > 4) throw ReferenceError("reference: linear activation code out of range");
        const auto& bias = in(2);
        const bool has_res = n.inputs.size() > 3;
        const std::vector<int64_t> rs = has_res ? broadcast_strides(in(3).shape, n.shape) : std::vector<int64_t>{};
        for_each_index(n.shape, [&](int64_t i, const std::vector<int64_t>& idx) {
          double z = out.v[i] + bias.v[idx.back()];
          if (A.count != 0) z = unary(acts[A.count], z, 0);
          if (has_res) z += in(3).v[dot(idx, rs)];
          out.v[i] = z;
        });
      }
      return out;
    }
    case Op::Attention: return attention_reference(n, in(0), in(1), in(2), n.inputs.size() > 3 ? &in(3) : nullptr);
    case Op::AttentionBackward: {  // (q, k, v, o, dout, delta) -> the gradient of input attrs.axis
      RefTensor grads[3];
      attention_reference_vjp(n, in(0), in(1), in(2), in(4), &in(5), n.inputs.size() > 6 ? &in(6) : nullptr, grads[0],
                              grads[1], grads[2]);
      if (A.axis < 0 || A.axis > 2) throw ReferenceError("reference: attention_backward input index out of range");
      return grads[A.axis];
    }
    case Op::Sum:
    case Op::Mean:
    case Op::Max: {
      const auto& x = in(0);
      const size_t r = x.shape.size();
      std::vector<bool> red(r, A.axes.empty());
      for (int64_t ax : A.axes) red.at(static_cast<size_t>(norm_axis(ax, r))) = true;
      Shape kept = x.shape;
      int64_t cnt = 1;
      for (size_t d = 0; d < r; ++d)
        if (red[d]) {
          cnt *= kept[d];
          kept[d] = 1;
        }
      auto ks = contiguous_strides(kept);
      for (size_t d = 0; d < r; ++d)
        if (red[d]) ks[d] = 0;
      if (static_cast<int64_t>(out.v.size()) != count(kept))
        throw ReferenceError("reference: reduce output size mismatch");
      if (n.op == Op::Max) std::fill(out.v.begin(), out.v.end(), -std::numeric_limits<double>::infinity());
      for_each_index(x.shape, [&](int64_t i, const std::vector<int64_t>& idx) {
        double& o = out.v[dot(idx, ks)];
        if (n.op == Op::Max)
          o = std::max(o, x.v[i]);
        else
          o += x.v[i];
      });
      if (n.op == Op::Mean)
        for (auto& v : out.v) v /= static_cast<double>(cnt);
      return out;
    }
    case Op::ArgMax: {
      const auto& x = in(0);
      int64_t outer, len, inner;
      split_axis(x.shape, norm_axis(A.axis, x.shape.size()), outer, len, inner);
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          int64_t best = 0;
          double bv = x.v[o * len * inner + i];
          for (int64_t k = 1; k < len; ++k) {
            const double v = x.v[(o * len + k) * inner + i];
            if (v > bv) {
              bv = v;
              best = k;
            }
          }
          out.v[o * inner + i] = static_cast<double>(best);
        }
      return out;
    }
    case Op::Softmax:
    case Op::LogSoftmax: {
      const auto& x = in(0);
      int64_t outer, len, inner;
      split_axis(x.shape, norm_axis(A.axis, x.shape.size()), outer, len, inner);
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          auto at = [&](int64_t k) { return (o * len + k) * inner + i; };
          double mx = -std::numeric_limits<double>::infinity();
          for (int64_t k = 0; k < len; ++k) mx = std::max(mx, x.v[at(k)]);
          double s = 0;
          for (int64_t k = 0; k < len; ++k) s += std::exp(x.v[at(k)] - mx);
          for (int64_t k = 0; k < len; ++k)
            out.v[at(k)] = n.op == Op::Softmax ? std::exp(x.v[at(k)] - mx) / s : x.v[at(k)] - mx - std::log(s);
        }
      return out;
    }
    case Op::RmsNorm:
    case Op::LayerNorm: {
      const auto& x = in(0);
      const int64_t D = x.shape.back();
      const int64_t rows = count(x.shape) / D;
      const RefTensor* w = n.inputs.size() > 1 ? &in(1) : nullptr;
      const RefTensor* b = n.inputs.size() > 2 ? &in(2) : nullptr;
      for (int64_t r = 0; r < rows; ++r) {
        const double* row = &x.v[r * D];
        double mean, inv;
        norm_stats(row, D, n.op == Op::LayerNorm, A.scalar, mean, inv);
        for (int64_t k = 0; k < D; ++k) {
          double y = (row[k] - mean) * inv;
          if (w) y *= w->v[k];
          if (b) y += b->v[k];
          out.v[r * D + k] = y;
        }
      }
      return out;
    }
    case Op::Rotary: {  // x*cos + rotate_half(x)*sin, or the transpose x*cos + rotate_halfᵀ(x*sin)
      const auto& x = in(0);
      const auto& c = in(1);
      const auto& s = in(2);
      const auto sc = broadcast_strides(c.shape, n.shape), ss = broadcast_strides(s.shape, n.shape);
      const int64_t D = n.shape.back(), h = D / 2;
      for_each_index(n.shape, [&](int64_t i, const std::vector<int64_t>& idx) {
        const int64_t j = idx.back(), partner = j < h ? i + h : i - h;
        std::vector<int64_t> pidx = idx;
        pidx.back() = j < h ? j + h : j - h;
        double rot;
        if (A.count == 0)
          rot = (j < h ? -x.v[partner] : x.v[partner]) * s.v[dot(idx, ss)];
        else
          rot = (j < h ? 1.0 : -1.0) * x.v[partner] * s.v[dot(pidx, ss)];
        out.v[i] = x.v[i] * c.v[dot(idx, sc)] + rot;
      });
      return out;
    }
    case Op::Reshape: {
      out.v = in(0).v;
      if (static_cast<int64_t>(out.v.size()) != count(n.shape)) throw ReferenceError("reference: bad reshape");
      return out;
    }
    case Op::Permute: {
      const auto& x = in(0);
      const auto xs = contiguous_strides(x.shape);
      std::vector<int64_t> st(A.axes.size());
      for (size_t k = 0; k < A.axes.size(); ++k) st[k] = xs.at(static_cast<size_t>(A.axes[k]));
      for_each_index(n.shape, [&](int64_t i, const std::vector<int64_t>& idx) { out.v[i] = x.v[dot(idx, st)]; });
      return out;
    }
    case Op::Slice: {
      const auto& x = in(0);
      auto st = contiguous_strides(x.shape);
      const int64_t ax = norm_axis(A.axis, x.shape.size());
      const int64_t base = A.start * st[ax];
      st[ax] *= A.step;
      for_each_index(n.shape, [&](int64_t i, const std::vector<int64_t>& idx) { out.v[i] = x.v[base + dot(idx, st)]; });
      return out;
    }
    case Op::Concat: {
      const int64_t ax = norm_axis(A.axis, n.shape.size());
      int64_t outer, total, inner;
      split_axis(n.shape, ax, outer, total, inner);
      int64_t off = 0;
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        const auto& x = in(k);
        const int64_t len = x.shape[ax];
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t j = 0; j < len * inner; ++j) out.v[(o * total + off) * inner + j] = x.v[o * len * inner + j];
        off += len;
      }
      return out;
    }
    case Op::BroadcastTo: {
      const auto& x = in(0);
      const auto st = broadcast_strides(x.shape, n.shape);
      for_each_index(n.shape, [&](int64_t i, const std::vector<int64_t>& idx) { out.v[i] = x.v[dot(idx, st)]; });
      return out;
    }
    case Op::Gather: {
      const auto& x = in(0);
      const auto& idx = in(1);
      int64_t outer, dim, inner;
      split_axis(x.shape, norm_axis(A.axis, x.shape.size()), outer, dim, inner);
      const int64_t ni = static_cast<int64_t>(idx.v.size());
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t j = 0; j < ni; ++j) {
          if (padding_tap(A, idx.v[j], dim)) {
            for (int64_t i = 0; i < inner; ++i) out.v[(o * ni + j) * inner + i] = A.scalar;
            continue;
          }
          const int64_t src = wrap_index(idx.v[j], dim, "gather");
          for (int64_t i = 0; i < inner; ++i) out.v[(o * ni + j) * inner + i] = x.v[(o * dim + src) * inner + i];
        }
      return out;
    }
    case Op::ScatterAdd: {
      const auto& base = in(0);
      const auto& idx = in(1);
      const auto& upd = in(2);
      out.v = base.v;
      int64_t outer, dim, inner;
      split_axis(base.shape, norm_axis(A.axis, base.shape.size()), outer, dim, inner);
      const int64_t ni = static_cast<int64_t>(idx.v.size());
      if (static_cast<int64_t>(upd.v.size()) != outer * ni * inner)
        throw ReferenceError("reference: scatter_add updates size mismatch");
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t j = 0; j < ni; ++j) {
          if (padding_tap(A, idx.v[j], dim)) continue;
          const int64_t dst = wrap_index(idx.v[j], dim, "scatter_add");
          for (int64_t i = 0; i < inner; ++i) out.v[(o * dim + dst) * inner + i] += upd.v[(o * ni + j) * inner + i];
        }
      return out;
    }
    case Op::OneHot: {
      const auto& idx = in(0);
      const int64_t C = A.count;
      for (size_t j = 0; j < idx.v.size(); ++j) {
        const int64_t c = static_cast<int64_t>(idx.v[j]);
        if (c >= 0 && c < C) out.v[j * C + c] = 1.0;
      }
      return out;
    }
    case Op::CrossEntropy: {
      const auto& x = in(0);
      const auto& lab = in(1);
      const int64_t C = x.shape.back();
      const int64_t rows = static_cast<int64_t>(lab.v.size());
      double total = 0;
      int64_t valid = 0;
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t l = static_cast<int64_t>(lab.v[r]);
        if (l == A.ignore_index) continue;
        if (l < 0 || l >= C) throw ReferenceError("reference: cross_entropy label out of range");
        const double* row = &x.v[r * C];
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t k = 0; k < C; ++k) mx = std::max(mx, row[k]);
        double s = 0;
        for (int64_t k = 0; k < C; ++k) s += std::exp(row[k] - mx);
        total += mx + std::log(s) - row[l];
        ++valid;
      }
      out.v[0] = valid ? total / static_cast<double>(valid) : std::numeric_limits<double>::quiet_NaN();
      return out;
    }
    case Op::MseLoss:
    case Op::BinaryCrossEntropy:
    case Op::BinaryCrossEntropyWithLogits: {
      const auto& p = in(0);
      const auto& t = in(1);
      if (p.v.size() != t.v.size()) throw ReferenceError("reference: loss operands differ in size");
      double s = 0;
      for (size_t i = 0; i < p.v.size(); ++i) {
        const double x = p.v[i], y = t.v[i];
        if (n.op == Op::MseLoss)
          s += (x - y) * (x - y);
        else if (n.op == Op::BinaryCrossEntropy)
          s += -(y * std::max(std::log(x), -100.0) + (1 - y) * std::max(std::log(1 - x), -100.0));
        else
          s += std::max(x, 0.0) - x * y + std::log1p(std::exp(-std::fabs(x)));
      }
      out.v[0] = s / static_cast<double>(p.v.size());
      return out;
    }
    // ---- backward ops (made by autodiff) ----
    case Op::GeluBackward:
    case Op::GeluTanhBackward:
    case Op::SiluBackward: {  // (x, dy) -> dy * f'(x)
      const auto& x = in(0);
      const auto& dy = in(1);
      const auto sx = broadcast_strides(x.shape, n.shape), sd = broadcast_strides(dy.shape, n.shape);
      for_each_index(n.shape, [&](int64_t i, const std::vector<int64_t>& idx) {
        out.v[i] = dy.v[dot(idx, sd)] * unary_grad(n.op, x.v[dot(idx, sx)]);
      });
      return out;
    }
    case Op::SoftmaxBackward:
    case Op::LogSoftmaxBackward: {  // (y, dy), y the forward output
      const auto& y = in(0);
      const auto& dy = in(1);
      int64_t outer, len, inner;
      split_axis(y.shape, norm_axis(A.axis, y.shape.size()), outer, len, inner);
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          auto at = [&](int64_t k) { return (o * len + k) * inner + i; };
          double s = 0;
          for (int64_t k = 0; k < len; ++k) s += n.op == Op::SoftmaxBackward ? dy.v[at(k)] * y.v[at(k)] : dy.v[at(k)];
          for (int64_t k = 0; k < len; ++k)
            out.v[at(k)] =
                n.op == Op::SoftmaxBackward ? y.v[at(k)] * (dy.v[at(k)] - s) : dy.v[at(k)] - std::exp(y.v[at(k)]) * s;
        }
      return out;
    }
    case Op::RmsNormBackward:
    case Op::LayerNormBackward: {  // (x, dy[, w]) -> dx
      const auto& x = in(0);
      const auto& dy = in(1);
      const RefTensor* w = n.inputs.size() > 2 ? &in(2) : nullptr;
      const int64_t D = x.shape.back();
      const int64_t rows = count(x.shape) / D;
      const bool layer = n.op == Op::LayerNormBackward;
      for (int64_t r = 0; r < rows; ++r) {
        const double* row = &x.v[r * D];
        double mean, inv;
        norm_stats(row, D, layer, A.scalar, mean, inv);
        // y = xhat * w: dx = inv * (g - mean(g) - xhat * mean(g * xhat)), g = dy * w (mean(g) only for layer).
        std::vector<double> g(static_cast<size_t>(D)), xhat(static_cast<size_t>(D));
        double mg = 0, mgx = 0;
        for (int64_t k = 0; k < D; ++k) {
          g[k] = dy.v[r * D + k] * (w ? w->v[k] : 1.0);
          xhat[k] = (row[k] - mean) * inv;
          mg += g[k];
          mgx += g[k] * xhat[k];
        }
        mg = layer ? mg / static_cast<double>(D) : 0.0;
        mgx /= static_cast<double>(D);
        for (int64_t k = 0; k < D; ++k) out.v[r * D + k] = inv * (g[k] - mg - xhat[k] * mgx);
      }
      return out;
    }
    case Op::RmsNormWeightGrad:
    case Op::LayerNormWeightGrad: {  // (x, dy) -> sum over rows of dy * xhat
      const auto& x = in(0);
      const auto& dy = in(1);
      const int64_t D = x.shape.back();
      const int64_t rows = count(x.shape) / D;
      for (int64_t r = 0; r < rows; ++r) {
        double mean, inv;
        norm_stats(&x.v[r * D], D, n.op == Op::LayerNormWeightGrad, A.scalar, mean, inv);
        for (int64_t k = 0; k < D; ++k) out.v[k] += dy.v[r * D + k] * (x.v[r * D + k] - mean) * inv;
      }
      return out;
    }
    case Op::CrossEntropyBackward: {  // (logits, labels, dloss) -> (softmax - onehot) * dloss / valid rows
      const auto& x = in(0);
      const auto& lab = in(1);
      const double dloss = in(2).v.at(0);
      const int64_t C = x.shape.back();
      const int64_t rows = static_cast<int64_t>(lab.v.size());
      int64_t valid = 0;
      for (double l : lab.v) valid += static_cast<int64_t>(l) != A.ignore_index;
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t l = static_cast<int64_t>(lab.v[r]);
        if (l == A.ignore_index) continue;  // zeros
        if (l < 0 || l >= C) throw ReferenceError("reference: cross_entropy label out of range");
        const auto p = softmax_row(&x.v[r * C], C);
        for (int64_t k = 0; k < C; ++k)
          out.v[r * C + k] = (p[k] - (k == l ? 1.0 : 0.0)) * dloss / static_cast<double>(valid);
      }
      return out;
    }
    case Op::SliceBackward: {  // dy -> zeros of the full shape, dy in the slice's window
      const auto& dy = in(0);
      auto st = contiguous_strides(n.shape);
      const int64_t ax = norm_axis(A.axis, n.shape.size());
      const int64_t base = A.start * st[ax];
      st[ax] *= A.step;
      for_each_index(dy.shape,
                     [&](int64_t i, const std::vector<int64_t>& idx) { out.v[base + dot(idx, st)] = dy.v[i]; });
      return out;
    }
  }
  (void)g;
  throw ReferenceError("reference: no double-precision reference for op " + std::string(meganeura::op_name(n.op)) +
                       " (add one beside the others: every op needs it)");
}

}  // namespace

RefTensor from_host(const meganeura::HostTensor& t) {
  RefTensor r;
  r.shape = t.shape;
  r.dtype = t.dtype;
  const size_t n = static_cast<size_t>(count(t.shape));
  if (t.bytes.size() != n * meganeura::dtype_size(t.dtype))
    throw ReferenceError("reference: host tensor has " + std::to_string(t.bytes.size()) + " bytes for " +
                         std::to_string(n) + " elements");
  r.v.resize(n);
  const std::byte* p = t.bytes.data();
  for (size_t i = 0; i < n; ++i) {
    switch (t.dtype) {
      case DType::f32: {
        float f;
        std::memcpy(&f, p + 4 * i, 4);
        r.v[i] = f;
        break;
      }
      case DType::i32: {
        int32_t v;
        std::memcpy(&v, p + 4 * i, 4);
        r.v[i] = v;
        break;
      }
      case DType::u32: {
        uint32_t v;
        std::memcpy(&v, p + 4 * i, 4);
        r.v[i] = v;
        break;
      }
      case DType::f16: {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        r.v[i] = f16_bits_to_f32(h);
        break;
      }
      case DType::bf16: {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        r.v[i] = bf16_bits_to_f32(h);
        break;
      }
    }
  }
  return r;
}

std::vector<RefTensor> evaluate(const meganeura::Graph& g, const std::map<std::string, meganeura::HostTensor>& feeds) {
  std::vector<RefTensor> vals;
  vals.reserve(g.nodes().size());
  for (const Node& n : g.nodes()) vals.push_back(eval_node(g, n, vals, feeds));
  return vals;
}

}  // namespace mntest
