// pad and flatten (meganeura/ops.hpp): compositions of the movement ops, so that the optimizer,
// the lowering and autodiff see only ops they know. A padded dimension is one concat (constant)
// or one gather through a constant index vector (reflect, replicate, circular: every output
// position names the input position it copies, and the gather's gradient adds each back there).
#include <string>

#include "graph/op_args.hpp"
#include "meganeura/error.hpp"
#include "meganeura/ops.hpp"

namespace meganeura {

namespace {

const char* mode_name(PadMode mode) {
  switch (mode) {
    case PadMode::constant: return "constant";
    case PadMode::reflect: return "reflect";
    case PadMode::replicate: return "replicate";
    case PadMode::circular: return "circular";
  }
  return "?";
}

// The input position output position i (of left + n + right) copies, for the index modes.
int32_t source_of(int64_t i, int64_t n, int64_t left, PadMode mode) {
  int64_t j = i - left;  // in the input's coordinates
  if (j >= 0 && j < n) return static_cast<int32_t>(j);
  switch (mode) {
    case PadMode::reflect: j = j < 0 ? -j : 2 * (n - 1) - j; break;
    case PadMode::replicate: j = j < 0 ? 0 : n - 1; break;
    default: j = ((j % n) + n) % n; break;  // circular
  }
  return static_cast<int32_t>(j);
}

// Checks one dimension's pair against the mode; throws naming the dimension and the rule.
void check_pair(const Shape& shape, size_t d, int64_t left, int64_t right, PadMode mode) {
  const int64_t n = shape[d];
  auto fail = [&](const std::string& why) {
    throw ShapeError("pad (" + std::string(mode_name(mode)) + ") of " + shape_str(shape) + ": dimension " +
                     std::to_string(d) + " padded by (" + std::to_string(left) + ", " + std::to_string(right) +
                     "): " + why);
  };
  if (mode == PadMode::constant) {
    if (n + left + right < 1) fail("would keep no element (negative pads crop)");
    return;
  }
  if (left < 0 || right < 0) fail("negative pads crop only in constant mode");
  if (mode == PadMode::reflect && (left >= n || right >= n))
    fail("reflect pads must be below the dimension's size " + std::to_string(n));
  if (mode == PadMode::circular && (left > n || right > n))
    fail("circular pads may not exceed the dimension's size " + std::to_string(n));
}

// Dimension d cropped by negative pads, then widened with `value` on either side.
Tensor pad_constant(Tensor x, size_t d, int64_t left, int64_t right, float value) {
  const auto axis = static_cast<int64_t>(d);
  const int64_t n = x.shape()[d];
  if (left < 0 || right < 0) x = slice(x, axis, left < 0 ? -left : 0, right < 0 ? n + right : n);
  std::vector<Tensor> parts;
  auto fill = [&](int64_t width) {
    Shape s = x.shape();
    s[d] = width;
    parts.push_back(broadcast_to(x.graph().scalar(value), s));
  };
  if (left > 0) fill(left);
  parts.push_back(x);
  if (right > 0) fill(right);
  return parts.size() == 1 ? x : concat(parts, axis);
}

Tensor pad_indexed(Tensor x, size_t d, int64_t left, int64_t right, PadMode mode) {
  const int64_t n = x.shape()[d], width = left + n + right;
  std::vector<int32_t> from(static_cast<size_t>(width));
  for (int64_t i = 0; i < width; ++i) from[static_cast<size_t>(i)] = source_of(i, n, left, mode);
  return gather(x, x.graph().constant(std::span<const int32_t>(from), {width}), static_cast<int64_t>(d));
}

}  // namespace

Tensor pad(Tensor x, const std::vector<int64_t>& pads, PadMode mode, float value) {
  graph::graph_of("pad", {{"x", x}});  // before x.shape()
  const Shape shape = x.shape();       // a copy: adding nodes may move the graph's storage
  if (pads.size() % 2 != 0 || pads.size() > 2 * shape.size())
    throw ShapeError("pad of " + shape_str(shape) + ": " + std::to_string(pads.size()) +
                     " pads; give (left, right) pairs for at most its " + std::to_string(shape.size()) + " dimensions");
  if (mode == PadMode::constant && x.dtype() != f32)
    throw DTypeError("pad (constant) of a " + std::string(dtype_name(x.dtype())) + " tensor: the fill is f32 only");
  for (size_t p = 0; p < pads.size(); p += 2) check_pair(shape, shape.size() - 1 - p / 2, pads[p], pads[p + 1], mode);
  Tensor y = x;
  for (size_t p = 0; p < pads.size(); p += 2) {
    const size_t d = shape.size() - 1 - p / 2;
    const int64_t left = pads[p], right = pads[p + 1];
    if (left == 0 && right == 0) continue;
    y = mode == PadMode::constant ? pad_constant(y, d, left, right, value) : pad_indexed(y, d, left, right, mode);
  }
  return y;
}

Tensor flatten(Tensor x, int64_t start_dim, int64_t end_dim) {
  graph::graph_of("flatten", {{"x", x}});
  const Shape shape = x.shape();  // a copy: adding nodes may move the graph's storage
  const auto r = static_cast<int64_t>(shape.size());
  const int64_t rank_or_1 = r == 0 ? 1 : r;  // a rank-0 tensor flattens to [1], as in PyTorch
  auto axis = [&](int64_t a, const char* what) {
    if (a < -rank_or_1 || a >= rank_or_1)
      throw ShapeError("flatten of " + shape_str(shape) + ": " + what + " " + std::to_string(a) + " out of range");
    return a < 0 ? a + rank_or_1 : a;
  };
  const int64_t start = axis(start_dim, "start_dim"), end = axis(end_dim, "end_dim");
  if (start > end)
    throw ShapeError("flatten of " + shape_str(shape) + ": start_dim " + std::to_string(start_dim) +
                     " comes after end_dim " + std::to_string(end_dim));
  if (r == 0) return reshape(x, {1});
  Shape out(shape.begin(), shape.begin() + start);
  int64_t merged = 1;
  for (int64_t d = start; d <= end; ++d) merged *= shape[static_cast<size_t>(d)];
  out.push_back(merged);
  out.insert(out.end(), shape.begin() + end + 1, shape.end());
  return reshape(x, out);
}

}  // namespace meganeura
