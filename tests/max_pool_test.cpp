// max_pool2d against a reference written here in double: each window scanned in row-major order,
// padding never chosen, the first largest element taking the gradient (PyTorch's rule), on
// random inputs and on inputs of three values (ties everywhere); ceil_mode, dilation, padding,
// [C, H, W]; and its errors.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "test_util.hpp"

namespace mntest {
namespace {

using namespace meganeura;

struct MaxPoolCase {
  Shape shape;
  MaxPool2d o;
};

// For each output element (row-major over `out`), the flat input index of its window's first
// largest element.
std::vector<int64_t> winners(const MaxPoolCase& c, const std::vector<float>& x, Shape& out) {
  const size_t r = c.shape.size();
  const int64_t h = c.shape[r - 2], w = c.shape[r - 1], planes = numel(c.shape) / (h * w);
  int64_t size[2];
  for (int d = 0; d < 2; ++d) {
    const int64_t n = c.shape[r - 2 + static_cast<size_t>(d)], k = c.o.kernel[d], p = c.o.padding[d],
                  dil = c.o.dilation[d], s = c.o.stride[d] ? c.o.stride[d] : k, reach = dil * (k - 1) + 1;
    const int64_t span = n + 2 * p - reach;
    size[d] = (c.o.ceil_mode ? (span + s - 1) / s : span / s) + 1;
    if (c.o.ceil_mode && (size[d] - 1) * s >= n + p) --size[d];
  }
  out = c.shape;
  out[r - 2] = size[0];
  out[r - 1] = size[1];
  const int64_t sh = c.o.stride[0] ? c.o.stride[0] : c.o.kernel[0], sw = c.o.stride[1] ? c.o.stride[1] : c.o.kernel[1];
  std::vector<int64_t> best;
  for (int64_t pl = 0; pl < planes; ++pl)
    for (int64_t oh = 0; oh < size[0]; ++oh)
      for (int64_t ow = 0; ow < size[1]; ++ow) {
        int64_t at = -1;
        for (int64_t kh = 0; kh < c.o.kernel[0]; ++kh)
          for (int64_t kw = 0; kw < c.o.kernel[1]; ++kw) {
            const int64_t ih = oh * sh + kh * c.o.dilation[0] - c.o.padding[0],
                          iw = ow * sw + kw * c.o.dilation[1] - c.o.padding[1];
            if (ih < 0 || ih >= h || iw < 0 || iw >= w) continue;
            const int64_t i = (pl * h + ih) * w + iw;
            if (at < 0 || x[static_cast<size_t>(i)] > x[static_cast<size_t>(at)]) at = i;
          }
        best.push_back(at);
      }
  return best;
}

std::string describe(const MaxPoolCase& c) {
  auto pair = [](const std::array<int64_t, 2>& v) { return std::to_string(v[0]) + "x" + std::to_string(v[1]); };
  return shape_str(c.shape) + ", kernel " + pair(c.o.kernel) + ", stride " + pair(c.o.stride) + ", padding " +
         pair(c.o.padding) + ", dilation " + pair(c.o.dilation) + (c.o.ceil_mode ? ", ceil_mode" : "");
}

TEST(MaxPool2d, MatchesTheReferenceWithTiesGoingToTheFirst) {
  const std::vector<MaxPoolCase> cases = {
      {{2, 3, 7, 9}, {{3, 3}, {2, 2}, {1, 1}}},
      {{2, 3, 7, 9}, {{3, 2}, {2, 2}, {1, 1}, {1, 1}, true}},
      {{1, 2, 8, 8}, {{2, 2}}},
      {{3, 9, 11}, {{3, 2}, {1, 3}, {1, 0}, {2, 3}, true}},
      {{1, 1, 5, 5}, {{5, 5}}},
      {{2, 2, 6, 5}, {{2, 3}, {1, 1}, {0, 1}}},
  };
  for (const MaxPoolCase& c : cases)
    for (bool tied : {false, true}) {
      SCOPED_TRACE(describe(c) + (tied ? ", tied inputs" : ""));
      Rng rng;
      SCOPED_TRACE(seed_note(rng.seed()));
      std::vector<float> x = rng.floats(numel(c.shape), -1, 1);
      if (tied)
        for (float& v : x) v = static_cast<float>(static_cast<int>(v * 1.5f));  // -1, 0 or 1
      Shape out;
      const std::vector<int64_t> best = winners(c, x, out);
      const HostTensor y = run_on([&](Tensor t) { return max_pool2d(t, c.o); }, c.shape, x);
      ASSERT_EQ(y.shape, out);
      const std::vector<float> got = y.to_f32();
      for (size_t o = 0; o < best.size(); ++o) ASSERT_EQ(got[o], x[static_cast<size_t>(best[o])]) << "element " << o;
      const std::vector<float> weights = rng.floats(numel(out), -1, 1);
      const std::vector<float> grad =
          grad_of_weighted_sum([&](Tensor t) { return max_pool2d(t, c.o); }, c.shape, x, out, weights);
      std::vector<double> want(x.size(), 0.0);
      for (size_t o = 0; o < best.size(); ++o) want[static_cast<size_t>(best[o])] += weights[o];
      for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(grad[i], want[i], 1e-5) << "gradient element " << i;
    }
}

// The padding, and ceil_mode's windows past the input, are in the window map (taps there read
// -infinity): the graph has no pad of the input, and its one gather reads x as it is.
TEST(MaxPool2d, ReadsTheInputUnpadded) {
  Graph g;
  g.output("y", max_pool2d(g.input("x", {2, 3, 7, 9}), {{3, 2}, {2, 2}, {1, 1}, {1, 1}, true}));
  int gathers = 0;
  for (const Node& n : g.nodes()) {
    EXPECT_NE(n.op, Op::Concat) << "a pad of the input";
    if (n.op != Op::Gather) continue;
    ++gathers;
    EXPECT_TRUE(n.attrs.window_padding);
    EXPECT_EQ(n.attrs.scalar, -INFINITY);
  }
  EXPECT_EQ(gathers, 1);
}

TEST(MaxPool2d, Errors) {
  Graph g;
  Tensor x = g.input("x", {2, 3, 5, 7});
  expect_has(
      message_of<ShapeError>([&] {
        max_pool2d(x, {{3, 3}, {1, 1}, {2, 0}});
      }),
      "max_pool2d of [2,3,5,7] along the height (5): kernel 3, stride 1, padding 2, dilation 1: the padding may be "
      "at most half the kernel's reach");
  expect_has(message_of<ShapeError>([&] {
               max_pool2d(x, {{2, 8}});
             }),
             "the padded input is smaller than the kernel's reach");
  expect_has(message_of<ShapeError>([&] { max_pool2d(x, {{0, 2}}); }), "must be positive");
  expect_has(message_of<ShapeError>([&] { max_pool2d(g.input("v", {7}), {{2, 2}}); }), "[N, C, H, W] or [C, H, W]");
  expect_has(message_of<DTypeError>([&] { max_pool2d(g.input("i", {1, 1, 4, 4}, i32), {{2, 2}}); }), "f32 only");
}

}  // namespace
}  // namespace mntest
