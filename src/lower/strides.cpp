#include "lower/strides.hpp"

#include <limits>
#include <string>

#include "meganeura/error.hpp"

namespace meganeura::lower {

Strides contiguous_strides(const Shape& s) {
  Strides st(s.size());
  int64_t acc = 1;
  for (size_t i = s.size(); i-- > 0;) {
    st[i] = acc;
    acc *= s[i];
  }
  return st;
}

Strides broadcast_strides(const Shape& in, const Shape& out) {
  Strides contig = contiguous_strides(in), st(out.size(), 0);
  size_t off = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) st[off + i] = in[i] == 1 ? 0 : contig[i];
  return st;
}

void collapse(Shape& shape, std::vector<Strides>& strides) {
  Shape s;
  std::vector<Strides> st(strides.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    bool merge = !s.empty();
    for (size_t k = 0; merge && k < strides.size(); ++k) merge = st[k].back() == strides[k][d] * shape[d];
    if (merge) {
      s.back() *= shape[d];
      for (size_t k = 0; k < strides.size(); ++k) st[k].back() = strides[k][d];
    } else {
      s.push_back(shape[d]);
      for (size_t k = 0; k < strides.size(); ++k) st[k].push_back(strides[k][d]);
    }
  }
  shape = std::move(s);
  strides = std::move(st);
}

uint32_t u32(int64_t v, const char* what) {
  if (v < 0 || v > std::numeric_limits<uint32_t>::max())
    throw ShapeError(std::string(what) + " = " + std::to_string(v) +
                     " does not fit the 32-bit index arithmetic of the kernels");
  return static_cast<uint32_t>(v);
}

void collapse_but_last(Shape& shape, std::vector<Strides>& strides) {
  if (shape.empty()) return;
  const int64_t last = shape.back();
  std::vector<int64_t> last_strides;
  shape.pop_back();
  for (Strides& st : strides) {
    last_strides.push_back(st.back());
    st.pop_back();
  }
  collapse(shape, strides);
  shape.push_back(last);
  for (size_t k = 0; k < strides.size(); ++k) strides[k].push_back(last_strides[k]);
}

}  // namespace meganeura::lower
