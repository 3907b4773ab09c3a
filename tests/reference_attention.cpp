#include "reference_attention.hpp"

#include <cmath>
#include <limits>

#include "meganeura/ops.hpp"

namespace mntest {

using meganeura::Node;
using meganeura::Shape;

namespace {

struct Geometry {
  int64_t batch = 1, hq = 1, hkv = 1, sq, sk, d, dv;
  double scale;
  bool causal;
  int64_t window = 0, base = 0;  // query i sits at base + i among the keys
  bool has_position = false, seq_major = false;
  // The k/v head (batch-major) that query head bh reads.
  int64_t kv_of(int64_t bh) const { return (bh / hq) * hkv + (bh % hq) / (hq / hkv); }
  // Element offset of row s of head bh (batch * heads + head) in a [B, H, S, dim] tensor, or
  // [B, S, H, dim] when seq_major.
  static int64_t at(int64_t bh, int64_t s, int64_t heads, int64_t seq, int64_t dim, bool seq_major) {
    return (seq_major ? (bh / heads * seq + s) * heads + bh % heads : bh * seq + s) * dim;
  }
  int64_t q_at(int64_t bh, int64_t i, int64_t dim) const { return at(bh, i, hq, sq, dim, seq_major); }
  int64_t kv_at(int64_t kv, int64_t j, int64_t dim) const { return at(kv, j, hkv, sk, dim, seq_major); }
  bool sees(int64_t i, int64_t j) const {
    const int64_t at = base + i;
    const int64_t last = causal ? at : (has_position ? base + sq - 1 : sk - 1);
    return j <= last && (window == 0 || j > at - window);
  }
};

Geometry geometry(const Node& n, const Shape& q, const Shape& k, const Shape& v, const RefTensor* position) {
  const size_t r = q.size();
  if (r < 2 || k.size() != r || v.size() != r)
    throw ReferenceError("reference: attention needs q, k, v of one rank >= 2");
  Geometry g;
  g.seq_major = n.attrs.seq_major;
  const size_t seq = g.seq_major ? r - 3 : r - 2, heads = g.seq_major ? r - 2 : r - 3;
  for (size_t i = 0; i + 3 < r; ++i) g.batch *= q[i];
  if (r >= 3) {
    g.hq = q[heads];
    g.hkv = k[heads];
  }
  g.sq = q[seq];
  g.sk = k[seq];
  g.d = q[r - 1];
  g.dv = v[r - 1];
  g.scale = n.attrs.scalar;
  g.causal = n.attrs.count == meganeura::kAttentionCausal;
  g.window = n.attrs.window;
  g.has_position = position != nullptr;
  g.base = position ? static_cast<int64_t>(position->v.at(0)) : g.sk - g.sq;
  return g;
}

// Probabilities of query row (bh, i): p[j] (0 where masked); false if the row sees no key.
bool probabilities(const Geometry& g, const RefTensor& q, const RefTensor& k, int64_t bh, int64_t i,
                   std::vector<double>& p) {
  const int64_t kv = g.kv_of(bh);
  p.assign(static_cast<size_t>(g.sk), 0.0);
  double m = -std::numeric_limits<double>::infinity();
  for (int64_t j = 0; j < g.sk; ++j) {
    if (!g.sees(i, j)) continue;
    double s = 0;
    for (int64_t x = 0; x < g.d; ++x) s += q.v[g.q_at(bh, i, g.d) + x] * k.v[g.kv_at(kv, j, g.d) + x];
    p[j] = s * g.scale;
    m = std::max(m, p[j]);
  }
  if (!std::isfinite(m)) return false;
  double sum = 0;
  for (int64_t j = 0; j < g.sk; ++j)
    if (g.sees(i, j)) sum += (p[j] = std::exp(p[j] - m));
  for (double& x : p) x /= sum;
  return true;
}

}  // namespace

RefTensor attention_reference(const Node& n, const RefTensor& q, const RefTensor& k, const RefTensor& v,
                              const RefTensor* position) {
  const Geometry g = geometry(n, q.shape, k.shape, v.shape, position);
  RefTensor out{n.shape, meganeura::f32, std::vector<double>(static_cast<size_t>(g.batch * g.hq * g.sq * g.dv), 0.0)};
  std::vector<double> p;
  for (int64_t bh = 0; bh < g.batch * g.hq; ++bh)
    for (int64_t i = 0; i < g.sq; ++i) {
      if (!probabilities(g, q, k, bh, i, p)) continue;  // sees no key: zeros
      for (int64_t j = 0; j < g.sk; ++j)
        for (int64_t x = 0; x < g.dv; ++x)
          out.v[g.q_at(bh, i, g.dv) + x] += p[j] * v.v[g.kv_at(g.kv_of(bh), j, g.dv) + x];
    }
  return out;
}

void attention_reference_vjp(const Node& n, const RefTensor& q, const RefTensor& k, const RefTensor& v,
                             const RefTensor& dout, const RefTensor* delta, const RefTensor* position, RefTensor& dq,
                             RefTensor& dk, RefTensor& dv) {
  const Geometry g = geometry(n, q.shape, k.shape, v.shape, position);
  dq = {q.shape, meganeura::f32, std::vector<double>(q.v.size(), 0.0)};
  dk = {k.shape, meganeura::f32, std::vector<double>(k.v.size(), 0.0)};
  dv = {v.shape, meganeura::f32, std::vector<double>(v.v.size(), 0.0)};
  std::vector<double> p, dp(static_cast<size_t>(g.sk));
  for (int64_t bh = 0; bh < g.batch * g.hq; ++bh) {
    const int64_t kv = g.kv_of(bh);
    for (int64_t i = 0; i < g.sq; ++i) {
      if (!probabilities(g, q, k, bh, i, p)) continue;
      double dl = 0;  // rowsum(dout * out) = sum_j p_j (dout·v_j)
      for (int64_t j = 0; j < g.sk; ++j) {
        dp[j] = 0;
        for (int64_t x = 0; x < g.dv; ++x) dp[j] += dout.v[g.q_at(bh, i, g.dv) + x] * v.v[g.kv_at(kv, j, g.dv) + x];
        dl += p[j] * dp[j];
      }
      if (delta) dl = delta->v[g.q_at(bh, i, 1)];
      for (int64_t j = 0; j < g.sk; ++j) {
        const double ds = p[j] * (dp[j] - dl) * g.scale;
        for (int64_t x = 0; x < g.d; ++x) {
          dq.v[g.q_at(bh, i, g.d) + x] += ds * k.v[g.kv_at(kv, j, g.d) + x];
          dk.v[g.kv_at(kv, j, g.d) + x] += ds * q.v[g.q_at(bh, i, g.d) + x];
        }
        for (int64_t x = 0; x < g.dv; ++x) dv.v[g.kv_at(kv, j, g.dv) + x] += p[j] * dout.v[g.q_at(bh, i, g.dv) + x];
      }
    }
  }
}

}  // namespace mntest
