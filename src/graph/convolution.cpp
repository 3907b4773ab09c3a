// conv and conv_transpose (meganeura/ops.hpp), 1 to 3 spatial dimensions, as products:
//   conv: one gather through a constant index map takes every kernel tap of every output position
//   of every sample ([C, taps, N · positions], "im2col"), and a product with the weight viewed as
//   [groups, Cout / groups, C / groups * taps] sums them. Zero padding is in the map: a tap in
//   the padding reads 0 (window_gather), so x is read as it is; reflect, replicate and circular
//   padding pad x first;
//   conv_transpose: the product of the weight's transpose with x gives every tap's contribution,
//   and one scatter_add through the same kind of map adds them into the output, the taps that
//   land in the cropped padding adding nothing (window_scatter_add).
// Autodiff, the optimizer and the lowering see gather, scatter_add, pad and matmul (the gather's
// gradient is the scatter and the other way round), so gradients of x, the weight and the bias
// follow theirs, and the product runs on the tensor cores where there are some.
#include <string>
#include <vector>

#include "graph/op_args.hpp"
#include "graph/taps.hpp"
#include "meganeura/error.hpp"
#include "meganeura/ops.hpp"

namespace meganeura {

namespace {

std::string list_str(const std::vector<int64_t>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + ")";
}

// One value a spatial dimension from a setting of none (`fallback`), one for all, or one each.
std::vector<int64_t> per_dim(const std::vector<int64_t>& v, size_t dims, int64_t fallback, const std::string& what,
                             const std::string& name) {
  if (v.empty()) return std::vector<int64_t>(dims, fallback);
  if (v.size() == 1) return std::vector<int64_t>(dims, v[0]);
  if (v.size() == dims) return v;
  throw ShapeError(what + ": " + name + " " + list_str(v) + " needs one value, or one for each of the " +
                   std::to_string(dims) + " spatial dimensions");
}

// The shapes and settings of a convolution, checked, with every dimension resolved.
struct Geometry {
  size_t dims = 0;              // spatial dimensions
  bool batched = true;          // x has N
  int64_t n = 1, channels = 0;  // N and x's channels
  int64_t out_channels = 0;     // the result's channels
  int64_t groups = 1;
  std::vector<int64_t> in, kernel;  // x's spatial sizes, the kernel's
  std::vector<int64_t> stride, dilation;
};

// x [N, C, *spatial] or [C, *spatial], weight [C_out, C / groups, *kernel] (transposed: [C,
// C_out / groups, *kernel]), bias [C_out] or none: the checks both directions share.
Geometry geometry(Tensor x, Tensor weight, Tensor bias, int64_t groups, const std::vector<int64_t>& stride,
                  const std::vector<int64_t>& dilation, bool transposed, const std::string& what) {
  const Shape xs = x.shape(), ws = weight.shape();
  Geometry g;
  if (ws.size() < 3 || ws.size() > 5)
    throw ShapeError(what + ": the weight is [" +
                     std::string(transposed ? "C_in, C_out / groups" : "C_out, C_in / groups") +
                     ", *kernel] with 1 to 3 kernel dimensions");
  g.dims = ws.size() - 2;
  if (xs.size() != g.dims + 2 && xs.size() != g.dims + 1)
    throw ShapeError(what + ": the input is [N, C, *spatial] or [C, *spatial] with " + std::to_string(g.dims) +
                     " spatial dimensions, as the weight's kernel has");
  for (const auto& [t, name] : {std::pair{x, "input"}, std::pair{weight, "weight"}, std::pair{bias, "bias"}})
    if (t.valid() && t.dtype() != f32)
      throw DTypeError(what + ": the " + name + " is " + std::string(dtype_name(t.dtype())) + "; f32 only");
  g.batched = xs.size() == g.dims + 2;
  g.n = g.batched ? xs[0] : 1;
  g.channels = xs[g.batched ? 1 : 0];
  g.in.assign(xs.end() - static_cast<ptrdiff_t>(g.dims), xs.end());
  g.kernel.assign(ws.begin() + 2, ws.end());
  g.groups = groups;
  if (groups < 1) throw ShapeError(what + ": groups " + std::to_string(groups) + " must be positive");
  const int64_t weight_in = transposed ? ws[0] : ws[1] * groups;
  g.out_channels = transposed ? ws[1] * groups : ws[0];
  if (g.channels % groups != 0 || g.out_channels % groups != 0 || weight_in != g.channels)
    throw ShapeError(what + ": " + std::to_string(g.channels) + " input channels in " + std::to_string(groups) +
                     " groups do not match the weight (" +
                     (transposed ? "[C_in, C_out / groups, *kernel]" : "[C_out, C_in / groups, *kernel]") +
                     "); both channel counts must divide by the groups");
  if (bias.valid() && bias.shape() != Shape{g.out_channels})
    throw ShapeError(what + ": the bias is " + shape_str(bias.shape()) + "; one value an output channel needs [" +
                     std::to_string(g.out_channels) + "]");
  g.stride = per_dim(stride, g.dims, 1, what, "stride");
  g.dilation = per_dim(dilation, g.dims, 1, what, "dilation");
  for (size_t d = 0; d < g.dims; ++d)
    if (g.stride[d] < 1 || g.dilation[d] < 1 || g.kernel[d] < 1)
      throw ShapeError(what + ": the kernel, stride and dilation must be positive");
  return g;
}

// F.pad's list for (before, after) pairs in dimension order: the last dimension first.
std::vector<int64_t> torch_pads(const std::vector<std::pair<int64_t, int64_t>>& pairs) {
  std::vector<int64_t> pads;
  for (size_t d = pairs.size(); d-- > 0;) {
    pads.push_back(pairs[d].first);
    pads.push_back(pairs[d].second);
  }
  return pads;
}

// The bias [C] added along dimension 1 of y [N, C, *spatial].
Tensor add_bias(Tensor y, Tensor bias, size_t dims) {
  if (!bias.valid()) return y;
  Shape s(dims + 1, 1);
  s[0] = bias.shape()[0];
  return y + reshape(bias, s);
}

// y [N, C, *spatial] as the caller's x was: without N where x had none.
Tensor unbatch(Tensor y, const Geometry& g) {
  if (g.batched) return y;
  Shape s = y.shape();
  s.erase(s.begin());
  return reshape(y, s);
}

// The padding of each spatial dimension as (before, after), from ConvOptions.
std::vector<std::pair<int64_t, int64_t>> conv_padding(const ConvOptions& o, const Geometry& g,
                                                      const std::string& what) {
  std::vector<std::pair<int64_t, int64_t>> pairs(g.dims);
  if (o.same) {
    if (!o.padding.empty()) throw ShapeError(what + ": padding 'same' and explicit padding both given");
    for (size_t d = 0; d < g.dims; ++d) {
      if (g.stride[d] != 1) throw ShapeError(what + ": padding 'same' needs a stride of 1 (as in PyTorch)");
      const int64_t total = g.dilation[d] * (g.kernel[d] - 1);
      pairs[d] = {total / 2, total - total / 2};
    }
  } else if (o.padding.size() == 2 * g.dims) {  // (before, after) pairs: never 1 or dims values
    for (size_t d = 0; d < g.dims; ++d) pairs[d] = {o.padding[2 * d], o.padding[2 * d + 1]};
  } else {
    const std::vector<int64_t> p = per_dim(o.padding, g.dims, 0, what, "padding");
    for (size_t d = 0; d < g.dims; ++d) pairs[d] = {p[d], p[d]};
  }
  for (const auto& [before, after] : pairs)
    if (before < 0 || after < 0)
      throw ShapeError(what + ": the padding " + list_str(o.padding) + " must not be negative");
  return pairs;
}

// Whether a convolution of n samples with `positions` outputs each folds the batch into its
// product's columns. Folding widens a narrow product and makes the weight's gradient one product,
// at the cost of a permute on each side. Measured: on an H200, ResNet-50 at batch 4, 224² (a
// sample's positions 49 to 12544), a product a sample everywhere beat folding everywhere
// (inference 2.81 against 3.41 ms, training 14.5 against 15.3; folding below 1024 positions
// 3.18 and 14.9); on lavapipe, ResNet-18 training at 2 × 32² (4 to 256 positions) went from 5.4
// to 3.0 s a step folded. So only maps smaller than any of ResNet-50's at 224² fold.
constexpr int64_t kFoldBelowPositions = 32;
bool fold_batch(int64_t n, int64_t positions) { return n > 1 && positions < kFoldBelowPositions; }

std::string conv_what(const std::string& name, Tensor x, Tensor weight) {
  return name + " of " + shape_str(x.shape()) + " with a weight of " + shape_str(weight.shape());
}

}  // namespace

Tensor conv(Tensor x, Tensor weight, Tensor bias, const ConvOptions& o) {
  graph::graph_of("conv", {{"x", x}, {"weight", weight}, graph::Arg::optional("bias", bias)});
  const std::string what = conv_what("conv", x, weight);
  const Geometry g = geometry(x, weight, bias, o.groups, o.stride, o.dilation, false, what);
  const auto pads = conv_padding(o, g, what);
  std::vector<int64_t> padded(g.dims), out(g.dims);
  for (size_t d = 0; d < g.dims; ++d) {
    padded[d] = g.in[d] + pads[d].first + pads[d].second;
    const int64_t reach = g.dilation[d] * (g.kernel[d] - 1) + 1;
    if (padded[d] < reach)
      throw ShapeError(what + ": spatial dimension " + std::to_string(d) + " is " + std::to_string(padded[d]) +
                       " with its padding, smaller than the kernel's reach of " + std::to_string(reach));
    out[d] = (padded[d] - reach) / g.stride[d] + 1;
  }
  Graph& owner = x.graph();
  Shape batched{g.n, g.channels};
  batched.insert(batched.end(), g.in.begin(), g.in.end());
  Tensor xp = reshape(x, batched);
  bool any_pad = false;
  for (const auto& [before, after] : pads) any_pad = any_pad || before > 0 || after > 0;
  // Zeros: in the map, which indexes x as it is (a tap in the padding reads 0). Other modes: x
  // padded first, the map indexing the padded x.
  const bool pad_in_map = o.padding_mode == PadMode::constant;
  if (any_pad && !pad_in_map) xp = pad(xp, torch_pads(pads), o.padding_mode);
  std::vector<int64_t> before;
  if (pad_in_map)
    for (const auto& p : pads) before.push_back(p.first);
  const std::vector<int64_t>& read = pad_in_map ? g.in : padded;
  const int64_t taps = graph::product(g.kernel), positions = graph::product(out), per_group = g.channels / g.groups;
  const int64_t sample = graph::product(read);
  const std::vector<int32_t> map = graph::tap_map(g.kernel, g.stride, g.dilation, read, out, before);
  const Tensor w = reshape(weight, {g.groups, g.out_channels / g.groups, per_group * taps});
  Shape result{g.n, g.out_channels};
  result.insert(result.end(), out.begin(), out.end());
  Tensor y;
  if (fold_batch(g.n, positions)) {
    // The batch folds into the product's columns: x as [C, N · P], the map offset by each
    // sample, so one product covers every sample's positions, and the weight's gradient is one
    // product summed over all of them (not a product a sample, then a sum over the batch).
    const std::vector<int32_t> folded = graph::across_batch(map, taps, positions, g.n, sample);
    const Tensor by_channel =
        reshape(permute(reshape(xp, {g.n, g.channels, sample}), {1, 0, 2}), {g.channels, g.n * sample});
    Tensor cols = graph::window_gather(
        by_channel, owner.constant(std::span<const int32_t>(folded), {taps, g.n * positions}), 1);  // [C, taps, N · L]
    cols = reshape(cols, {g.groups, per_group * taps, g.n * positions});
    y = permute(reshape(matmul(w, cols), {g.out_channels, g.n, positions}), {1, 0, 2});  // [N, Cout, L]
  } else {
    // A product a sample, broadcasting the weight: no permutes, the result already [N, Cout, L].
    Tensor cols = graph::window_gather(reshape(xp, {g.n, g.channels, sample}),
                                       owner.constant(std::span<const int32_t>(map), {taps, positions}),
                                       2);                                       // [N, C, taps, L]
    y = matmul(w, reshape(cols, {g.n, g.groups, per_group * taps, positions}));  // [N, G, Cout / G, L]
  }
  return unbatch(add_bias(reshape(y, result), bias, g.dims), g);
}

Tensor conv_transpose(Tensor x, Tensor weight, Tensor bias, const ConvTransposeOptions& o) {
  graph::graph_of("conv_transpose", {{"x", x}, {"weight", weight}, graph::Arg::optional("bias", bias)});
  const std::string what = conv_what("conv_transpose", x, weight);
  const Geometry g = geometry(x, weight, bias, o.groups, o.stride, o.dilation, true, what);
  const std::vector<int64_t> padding = per_dim(o.padding, g.dims, 0, what, "padding");
  const std::vector<int64_t> extra = per_dim(o.output_padding, g.dims, 0, what, "output_padding");
  // The full output ((in - 1) * stride + reach) is cropped by the padding on both sides, and
  // output_padding adds that many more at the end (positions no tap reaches but the bias).
  std::vector<int64_t> full(g.dims), out(g.dims);
  for (size_t d = 0; d < g.dims; ++d) {
    if (padding[d] < 0 || extra[d] < 0)
      throw ShapeError(what + ": the padding and output_padding must not be negative");
    if (extra[d] >= g.stride[d] && extra[d] >= g.dilation[d])
      throw ShapeError(what + ": output_padding " + std::to_string(extra[d]) +
                       " must be smaller than the stride or the dilation (as in PyTorch)");
    full[d] = (g.in[d] - 1) * g.stride[d] + g.dilation[d] * (g.kernel[d] - 1) + 1;
    out[d] = full[d] - 2 * padding[d] + extra[d];
    if (out[d] < 1)
      throw ShapeError(what + ": spatial dimension " + std::to_string(d) + " would be " + std::to_string(out[d]) +
                       " long after the padding of " + std::to_string(padding[d]) + " on each side");
  }
  Graph& owner = x.graph();
  const int64_t taps = graph::product(g.kernel), positions = graph::product(g.in), per_group = g.channels / g.groups;
  const int64_t out_per_group = g.out_channels / g.groups;
  // Every tap's contribution, [G, Cout / G * taps, N · L] (the batch folded into the columns, as
  // conv folds it): weight [C, Cout / G, *kernel] viewed as [G, C / G, Cout / G * taps],
  // transposed, times x as [G, C / G, N · L].
  const Tensor w = reshape(weight, {g.groups, per_group, out_per_group * taps});
  const Tensor xs =
      reshape(permute(reshape(x, {g.n, g.channels, positions}), {1, 0, 2}), {g.groups, per_group, g.n * positions});
  const Tensor parts = reshape(matmul(w, xs, {.transpose_a = true}), {g.out_channels, taps, g.n * positions});
  // Added straight into the output: a tap lands at in * stride + t * dilation - padding, and one
  // in the cropped padding adds nothing (window_scatter_add); output_padding's positions at the
  // end are those no tap reaches.
  const int64_t sample = graph::product(out);
  const std::vector<int32_t> map = graph::across_batch(
      graph::tap_map(g.kernel, g.stride, g.dilation, out, g.in, padding), taps, positions, g.n, sample);
  const Tensor base = broadcast_to(owner.scalar(0.0f), {g.out_channels, g.n * sample});
  Tensor y =
      graph::window_scatter_add(base, owner.constant(std::span<const int32_t>(map), {taps, g.n * positions}), parts, 1);
  y = permute(reshape(y, {g.out_channels, g.n, sample}), {1, 0, 2});  // [N, Cout, out]
  Shape result{g.n, g.out_channels};
  result.insert(result.end(), out.begin(), out.end());
  return unbatch(add_bias(reshape(y, result), bias, g.dims), g);
}

namespace {

void check_dims(Tensor weight, size_t dims, const std::string& name) {
  if (weight.valid() && weight.shape().size() != dims + 2)
    throw ShapeError(name + ": the weight is " + shape_str(weight.shape()) + "; " + name + " takes one of rank " +
                     std::to_string(dims + 2) + " (two channel dimensions, then " + std::to_string(dims) +
                     " of the kernel)");
}

}  // namespace

Tensor conv1d(Tensor x, Tensor weight, Tensor bias, const ConvOptions& o) {
  check_dims(weight, 1, "conv1d");
  return conv(x, weight, bias, o);
}
Tensor conv2d(Tensor x, Tensor weight, Tensor bias, const ConvOptions& o) {
  check_dims(weight, 2, "conv2d");
  return conv(x, weight, bias, o);
}
Tensor conv3d(Tensor x, Tensor weight, Tensor bias, const ConvOptions& o) {
  check_dims(weight, 3, "conv3d");
  return conv(x, weight, bias, o);
}
Tensor conv_transpose1d(Tensor x, Tensor weight, Tensor bias, const ConvTransposeOptions& o) {
  check_dims(weight, 1, "conv_transpose1d");
  return conv_transpose(x, weight, bias, o);
}
Tensor conv_transpose2d(Tensor x, Tensor weight, Tensor bias, const ConvTransposeOptions& o) {
  check_dims(weight, 2, "conv_transpose2d");
  return conv_transpose(x, weight, bias, o);
}

}  // namespace meganeura
