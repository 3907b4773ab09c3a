// Index arithmetic shared by the double-precision references (forward and gradient).
#pragma once
#include <cstdint>
#include <vector>

#include "reference.hpp"

namespace mntest::index {

using meganeura::Shape;

inline int64_t count(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

inline std::vector<int64_t> contiguous_strides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int i = static_cast<int>(s.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * s[i + 1];
  return st;
}

// Strides (in elements of `in`) that read `in` broadcast to `out` (NumPy rules, right-aligned).
inline std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  const auto cs = contiguous_strides(in);
  const size_t R = out.size(), r = in.size();
  std::vector<int64_t> st(R, 0);
  if (r > R) throw ReferenceError("cannot broadcast " + meganeura::shape_str(in) + " to " + meganeura::shape_str(out));
  for (size_t d = 0; d < R; ++d) {
    if (d < R - r) continue;
    const size_t j = d - (R - r);
    if (in[j] == out[d])
      st[d] = cs[j];
    else if (in[j] == 1)
      st[d] = 0;
    else
      throw ReferenceError("cannot broadcast " + meganeura::shape_str(in) + " to " + meganeura::shape_str(out));
  }
  return st;
}

// Calls f(out_index, multi_index) for every element of `shape` in row-major order.
template <class F>
inline void for_each_index(const Shape& shape, F&& f) {
  const int64_t n = count(shape);
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    f(i, idx);
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

inline int64_t dot(const std::vector<int64_t>& idx, const std::vector<int64_t>& st) {
  int64_t o = 0;
  for (size_t d = 0; d < idx.size(); ++d) o += idx[d] * st[d];
  return o;
}

// Splits `s` around `axis`: outer (dims before), n (the axis), inner (dims after).
inline void split_axis(const Shape& s, int64_t axis, int64_t& outer, int64_t& n, int64_t& inner) {
  outer = 1;
  inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= s[d];
  n = s[axis];
  for (size_t d = axis + 1; d < s.size(); ++d) inner *= s[d];
}

inline int64_t norm_axis(int64_t axis, size_t rank) { return axis < 0 ? axis + static_cast<int64_t>(rank) : axis; }

}  // namespace mntest::index
