// upsample (meganeura/ops.hpp): F.interpolate(x, size=...) in its nearest and linear modes, one
// spatial dimension at a time (bilinear and trilinear interpolation are separable), each as
// gathers through constant index vectors and, for linear, a blend with constant weights: the
// optimizer, the lowering and autodiff see only ops they know. Source positions are computed in
// f32 as PyTorch computes them, so that rounding at the edges of the bins agrees.
#include <algorithm>
#include <cmath>
#include <string>

#include "graph/op_args.hpp"
#include "meganeura/error.hpp"
#include "meganeura/ops.hpp"

namespace meganeura {

namespace {

// The input positions output position o reads along a dimension of n (out wide), and the
// weight of the second.
struct Taps {
  std::vector<int32_t> first, second;
  std::vector<float> weight;  // of `second`; `first` takes 1 - weight
};

Taps taps(int64_t n, int64_t out, UpsampleMode mode, bool align_corners) {
  Taps t;
  const auto in_f = static_cast<float>(n), out_f = static_cast<float>(out);
  for (int64_t o = 0; o < out; ++o) {
    const auto of = static_cast<float>(o);
    if (mode == UpsampleMode::nearest) {
      const auto i = std::min(static_cast<int64_t>(std::floor(of * (in_f / out_f))), n - 1);
      t.first.push_back(static_cast<int32_t>(i));
      continue;
    }
    float src = 0.0f;
    if (align_corners)
      src = out > 1 ? of * ((in_f - 1.0f) / (out_f - 1.0f)) : 0.0f;
    else
      src = std::max((of + 0.5f) * (in_f / out_f) - 0.5f, 0.0f);
    const auto i0 = std::min(static_cast<int64_t>(src), n - 1);
    t.first.push_back(static_cast<int32_t>(i0));
    t.second.push_back(static_cast<int32_t>(std::min(i0 + 1, n - 1)));
    t.weight.push_back(std::min(src - static_cast<float>(i0), 1.0f));
  }
  return t;
}

// Dimension d of x resampled to `out`.
Tensor resample(Tensor x, size_t d, int64_t out, UpsampleMode mode, bool align_corners) {
  const int64_t n = x.shape()[d];
  const Taps t = taps(n, out, mode, align_corners);
  Graph& g = x.graph();
  const auto axis = static_cast<int64_t>(d);
  const Tensor a = gather(x, g.constant(std::span<const int32_t>(t.first), {out}), axis);
  if (mode == UpsampleMode::nearest) return a;
  const Tensor b = gather(x, g.constant(std::span<const int32_t>(t.second), {out}), axis);
  Shape weight_shape(x.shape().size() - d, 1);  // [out, 1, ...]: broadcast over the dimensions after d
  weight_shape[0] = out;
  const Tensor w = g.constant(std::span<const float>(t.weight), weight_shape);
  return a + (b - a) * w;
}

}  // namespace

Tensor upsample(Tensor x, const Shape& size, UpsampleMode mode, bool align_corners) {
  graph::graph_of("upsample", {{"x", x}});  // before x.shape()
  const Shape shape = x.shape();            // a copy: adding nodes may move the graph's storage
  if (size.empty() || size.size() + 2 > shape.size())
    throw ShapeError("upsample of " + shape_str(shape) + " to " + shape_str(size) +
                     ": the input is [N, C, *spatial] with one size per spatial dimension (1 to " +
                     std::to_string(shape.size() < 2 ? 0 : shape.size() - 2) + " here)");
  if (x.dtype() != f32 && mode == UpsampleMode::linear)
    throw DTypeError("upsample (linear) of a " + std::string(dtype_name(x.dtype())) + " tensor: f32 only");
  const size_t first = shape.size() - size.size();
  for (size_t k = 0; k < size.size(); ++k)
    if (size[k] < 1 || shape[first + k] < 1)
      throw ShapeError("upsample of " + shape_str(shape) + " to " + shape_str(size) + ": spatial dimension " +
                       std::to_string(k) + " would go from " + std::to_string(shape[first + k]) + " to " +
                       std::to_string(size[k]) + " elements; both must be at least 1");
  Tensor y = x;
  for (size_t k = 0; k < size.size(); ++k)
    if (size[k] != shape[first + k])  // the same size maps every position to itself in each mode
      y = resample(y, first + k, size[k], mode, align_corners);
  return y;
}

}  // namespace meganeura
