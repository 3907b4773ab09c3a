// avg_pool2d and adaptive_avg_pool2d (meganeura/ops.hpp): an average over a rectangle of H x W
// is an average over its rows of averages over its columns, and PyTorch's divisor is a product
// of one count per dimension in every mode, so each pooling is two products with constant
// [out, in] averaging matrices: autodiff, the lowering and the tensor cores see plain matmuls.
// max_pool2d gathers every window (padding taps, and ceil_mode's reach past the input, read
// -infinity: the input is never padded), finds each window's first largest
// element with argmax, and keeps it with a where: its gradient goes to that element alone, as
// PyTorch's does, ties included.
#include <cmath>
#include <numeric>
#include <string>

#include "graph/op_args.hpp"
#include "graph/taps.hpp"
#include "meganeura/error.hpp"
#include "meganeura/ops.hpp"

namespace meganeura {

namespace {

// Output o of a dimension averages inputs [begin, end) with weight 1 / divisor.
struct Window {
  int64_t begin, end, divisor;
};

// A pooling's output size along a dimension of n (F.avg_pool2d's and F.max_pool2d's): windows
// reaching `reach` inputs (max pooling's dilation: d (k - 1) + 1), floor or ceil((n + 2p - reach)
// / s) + 1, the last starting inside the input or its left padding.
int64_t pool_out(int64_t n, int64_t reach, int64_t s, int64_t p, bool ceil_mode) {
  const int64_t span = n + 2 * p - reach;
  int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  if (ceil_mode && (out - 1) * s >= n + p) --out;
  return out;
}

// F.avg_pool2d's windows along a dimension of n.
std::vector<Window> pool_windows(int64_t n, int64_t k, int64_t s, int64_t p, bool ceil_mode, bool count_pad) {
  const int64_t out = pool_out(n, k, s, p, ceil_mode);
  std::vector<Window> w;
  for (int64_t o = 0; o < out; ++o) {
    const int64_t start = o * s - p, end = std::min(start + k, n + p);
    const int64_t begin = std::max<int64_t>(start, 0), stop = std::min(end, n);
    w.push_back({begin, stop, count_pad ? end - start : stop - begin});
  }
  return w;
}

// F.adaptive_avg_pool2d's windows: [floor(o n / out), ceil((o + 1) n / out)).
std::vector<Window> adaptive_windows(int64_t n, int64_t out) {
  std::vector<Window> w;
  for (int64_t o = 0; o < out; ++o) {
    const int64_t begin = o * n / out, end = ((o + 1) * n + out - 1) / out;
    w.push_back({begin, end, end - begin});
  }
  return w;
}

// The [out, n] averaging matrix of the windows (transposed: [n, out]).
Tensor averaging(Graph& g, const std::vector<Window>& windows, int64_t n, bool transposed) {
  const auto out = static_cast<int64_t>(windows.size());
  std::vector<float> m(static_cast<size_t>(out * n), 0.0f);
  for (int64_t o = 0; o < out; ++o) {
    const Window& w = windows[static_cast<size_t>(o)];
    for (int64_t i = w.begin; i < w.end; ++i)
      m[static_cast<size_t>(transposed ? i * out + o : o * n + i)] = 1.0f / static_cast<float>(w.divisor);
  }
  return g.constant(std::span<const float>(m), transposed ? Shape{n, out} : Shape{out, n});
}

// x's last two dimensions averaged over the windows of each: rows, then columns.
Tensor pool(Tensor x, const std::vector<Window>& rows, const std::vector<Window>& cols) {
  Graph& g = x.graph();
  const Shape& s = x.shape();
  const int64_t h = s[s.size() - 2], w = s.back();
  Tensor y = matmul(x, averaging(g, cols, w, true));  // [..., H, OW]
  return matmul(averaging(g, rows, h, false), y);     // [OH, H] · [..., H, OW]
}

// x is [N, C, H, W] or [C, H, W] of f32, else a ShapeError naming `what`.
void check_input(Tensor x, const std::string& what) {
  const Shape& s = x.shape();
  if (s.size() != 3 && s.size() != 4)
    throw ShapeError(what + " of " + shape_str(s) + ": the input is [N, C, H, W] or [C, H, W]");
  if (x.dtype() != f32) throw DTypeError(what + " of a " + std::string(dtype_name(x.dtype())) + " tensor: f32 only");
}

}  // namespace

Tensor max_pool2d(Tensor x, const MaxPool2d& o) {
  graph::graph_of("max_pool2d", {{"x", x}});
  check_input(x, "max_pool2d");
  const Shape s = x.shape();
  std::vector<int64_t> kernel(2), stride(2), dilation(2), out(2);
  for (size_t d = 0; d < 2; ++d) {
    const int64_t n = s[s.size() - 2 + d], k = o.kernel[d], p = o.padding[d], dil = o.dilation[d];
    stride[d] = o.stride[d] ? o.stride[d] : k;
    auto fail = [&](const std::string& why) {
      throw ShapeError("max_pool2d of " + shape_str(s) + " along the " + (d == 0 ? "height" : "width") + " (" +
                       std::to_string(n) + "): kernel " + std::to_string(k) + ", stride " + std::to_string(stride[d]) +
                       ", padding " + std::to_string(p) + ", dilation " + std::to_string(dil) + ": " + why);
    };
    if (k < 1 || stride[d] < 1 || dil < 1 || p < 0)
      fail("the kernel, stride and dilation must be positive, the padding not negative");
    const int64_t reach = dil * (k - 1) + 1;
    if (2 * p > reach) fail("the padding may be at most half the kernel's reach");
    if (n + 2 * p < reach) fail("the padded input is smaller than the kernel's reach");
    kernel[d] = k;
    dilation[d] = dil;
    out[d] = pool_out(n, reach, stride[d], p, o.ceil_mode);
  }
  const int64_t h = s[s.size() - 2], w = s.back(), planes = numel(s) / (h * w), taps = kernel[0] * kernel[1];
  Graph& owner = x.graph();
  const std::vector<int32_t> map = graph::tap_map(kernel, stride, dilation, {h, w}, out, {o.padding[0], o.padding[1]});
  const Tensor windows =
      graph::window_gather(reshape(x, {planes, h * w}),
                           owner.constant(std::span<const int32_t>(map), {taps, out[0] * out[1]}), 1, -INFINITY);
  std::vector<int32_t> tap_ids(static_cast<size_t>(taps));
  std::iota(tap_ids.begin(), tap_ids.end(), 0);
  const Tensor first_largest =
      eq(argmax(windows, 1, true), owner.constant(std::span<const int32_t>(tap_ids), {taps, 1}));
  Tensor y = sum(where(first_largest, windows, owner.scalar(0.0f)), {1});  // [planes, OH * OW]
  Shape result = s;
  result[s.size() - 2] = out[0];
  result.back() = out[1];
  return reshape(y, result);
}

Tensor avg_pool2d(Tensor x, const AvgPool2d& o) {
  graph::graph_of("avg_pool2d", {{"x", x}});
  check_input(x, "avg_pool2d");
  const Shape s = x.shape();
  std::vector<Window> windows[2];
  for (size_t d = 0; d < 2; ++d) {
    const int64_t n = s[s.size() - 2 + d], k = o.kernel[d], stride = o.stride[d] ? o.stride[d] : k, p = o.padding[d];
    const std::string dim = d == 0 ? "height" : "width";
    auto fail = [&](const std::string& why) {
      throw ShapeError("avg_pool2d of " + shape_str(s) + " along the " + dim + " (" + std::to_string(n) + "): kernel " +
                       std::to_string(k) + ", stride " + std::to_string(stride) + ", padding " + std::to_string(p) +
                       ": " + why);
    };
    if (k < 1 || stride < 1 || p < 0) fail("the kernel and stride must be positive, the padding not negative");
    if (2 * p > k) fail("the padding may be at most half the kernel");
    if (n + 2 * p < k) fail("the padded input is smaller than the kernel");
    windows[d] = pool_windows(n, k, stride, p, o.ceil_mode, o.count_include_pad);
  }
  return pool(x, windows[0], windows[1]);
}

Tensor adaptive_avg_pool2d(Tensor x, std::array<int64_t, 2> size) {
  graph::graph_of("adaptive_avg_pool2d", {{"x", x}});
  check_input(x, "adaptive_avg_pool2d");
  const Shape s = x.shape();
  if (size[0] < 1 || size[1] < 1)
    throw ShapeError("adaptive_avg_pool2d of " + shape_str(s) + " to (" + std::to_string(size[0]) + ", " +
                     std::to_string(size[1]) + "): the output size must be positive");
  return pool(x, adaptive_windows(s[s.size() - 2], size[0]), adaptive_windows(s.back(), size[1]));
}

}  // namespace meganeura
