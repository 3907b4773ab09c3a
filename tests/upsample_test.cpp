// upsample (nearest and linear, align_corners both ways, 1 to 3 spatial dimensions, up and down)
// against a reference written here in double: every output as a weighted sum of input elements,
// forward and the gradient of sum(upsample(x) * c); and its errors.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "test_util.hpp"

namespace mntest {
namespace {

using namespace meganeura;

struct UpsampleCase {
  Shape shape, size;
  UpsampleMode mode;
  bool align_corners = false;
};

// Along one dimension of n resampled to out: output o's (input position, weight) pairs.
std::vector<std::vector<std::pair<int64_t, double>>> taps(int64_t n, int64_t out, const UpsampleCase& c) {
  std::vector<std::vector<std::pair<int64_t, double>>> t(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    auto& tap = t[static_cast<size_t>(o)];
    if (c.mode == UpsampleMode::nearest) {
      tap.emplace_back(std::min<int64_t>(static_cast<int64_t>(std::floor(o * double(n) / double(out))), n - 1), 1.0);
      continue;
    }
    const double src = c.align_corners ? (out > 1 ? o * double(n - 1) / double(out - 1) : 0.0)
                                       : std::max((o + 0.5) * double(n) / double(out) - 0.5, 0.0);
    const int64_t i0 = std::min<int64_t>(static_cast<int64_t>(src), n - 1), i1 = std::min<int64_t>(i0 + 1, n - 1);
    const double w = std::min(src - double(i0), 1.0);
    tap.emplace_back(i0, 1.0 - w);
    tap.emplace_back(i1, w);
  }
  return t;
}

// The output shape, and per output element its (flat input index, weight) pairs.
std::vector<std::vector<std::pair<int64_t, double>>> reference(const UpsampleCase& c, Shape& out) {
  const size_t r = c.shape.size(), first = r - c.size.size();
  out = c.shape;
  std::vector<std::vector<std::vector<std::pair<int64_t, double>>>> per_dim(r);
  for (size_t d = 0; d < r; ++d) {
    if (d >= first) out[d] = c.size[d - first];
    if (d >= first && out[d] != c.shape[d]) {
      per_dim[d] = taps(c.shape[d], out[d], c);
    } else {
      per_dim[d].resize(static_cast<size_t>(out[d]));
      for (int64_t i = 0; i < out[d]; ++i) per_dim[d][static_cast<size_t>(i)] = {{i, 1.0}};
    }
  }
  std::vector<std::vector<std::pair<int64_t, double>>> result(static_cast<size_t>(numel(out)));
  for (int64_t o = 0; o < numel(out); ++o) {
    std::vector<std::pair<int64_t, double>> terms = {{0, 1.0}};
    int64_t rest = o, stride = 1;
    for (size_t k = r; k-- > 0;) {
      const auto& tap = per_dim[k][static_cast<size_t>(rest % out[k])];
      rest /= out[k];
      std::vector<std::pair<int64_t, double>> next;
      for (const auto& [at, w] : terms)
        for (const auto& [i, wi] : tap) next.emplace_back(at + i * stride, w * wi);
      terms = std::move(next);
      stride *= c.shape[k];
    }
    result[static_cast<size_t>(o)] = std::move(terms);
  }
  return result;
}

std::string describe(const UpsampleCase& c) {
  return shape_str(c.shape) + " to " + shape_str(c.size) + (c.mode == UpsampleMode::nearest ? " nearest" : " linear") +
         (c.align_corners ? ", align_corners" : "");
}

const std::vector<UpsampleCase>& cases() {
  static const std::vector<UpsampleCase> all = {
      {{2, 3, 5, 7}, {10, 14}, UpsampleMode::nearest},
      {{2, 3, 5, 7}, {3, 11}, UpsampleMode::nearest},  // down, and by a ratio that is no integer
      {{2, 3, 5, 7}, {9, 13}, UpsampleMode::linear},
      {{2, 3, 5, 7}, {9, 13}, UpsampleMode::linear, true},
      {{1, 2, 6, 5}, {4, 5}, UpsampleMode::linear},  // down along one dimension only
      {{2, 3, 11}, {23}, UpsampleMode::linear, true},
      {{1, 2, 3, 4, 5}, {5, 3, 7}, UpsampleMode::linear},
      {{1, 1, 1, 3}, {4, 1}, UpsampleMode::linear, true},
  };
  return all;
}

TEST(Upsample, MatchesTheReference) {
  for (const UpsampleCase& c : cases()) {
    SCOPED_TRACE(describe(c));
    Rng rng;
    SCOPED_TRACE(seed_note(rng.seed()));
    const std::vector<float> x = rng.floats(numel(c.shape), -1, 1);
    const HostTensor y = run_on([&](Tensor t) { return upsample(t, c.size, c.mode, c.align_corners); }, c.shape, x);
    Shape out;
    const auto terms = reference(c, out);
    ASSERT_EQ(y.shape, out);
    const std::vector<float> got = y.to_f32();
    for (size_t o = 0; o < terms.size(); ++o) {
      double want = 0;
      for (const auto& [i, w] : terms[o]) want += w * x[static_cast<size_t>(i)];
      ASSERT_NEAR(got[o], want, 1e-5) << "element " << o;
    }
  }
}

TEST(Upsample, GradientsAreTheTransposedWeights) {
  for (const UpsampleCase& c : cases()) {
    SCOPED_TRACE(describe(c));
    Rng rng;
    SCOPED_TRACE(seed_note(rng.seed()));
    Shape out;
    const auto terms = reference(c, out);
    const std::vector<float> weights = rng.floats(numel(out), -1, 1);
    const std::vector<float> got =
        grad_of_weighted_sum([&](Tensor t) { return upsample(t, c.size, c.mode, c.align_corners); }, c.shape,
                             rng.floats(numel(c.shape), -1, 1), out, weights);
    std::vector<double> want(static_cast<size_t>(numel(c.shape)), 0.0);
    for (size_t o = 0; o < terms.size(); ++o)
      for (const auto& [i, w] : terms[o]) want[static_cast<size_t>(i)] += w * weights[o];
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-4) << "element " << i;
  }
}

TEST(Upsample, Errors) {
  Graph g;
  Tensor x = g.input("x", {2, 3, 5, 7});
  expect_has(message_of<ShapeError>([&] { upsample(x, {1, 2, 3}); }), "one size per spatial dimension (1 to 2 here)");
  expect_has(message_of<ShapeError>([&] { upsample(x, {}); }), "one size per spatial dimension");
  expect_has(message_of<ShapeError>([&] { upsample(x, {0, 4}); }), "spatial dimension 0 would go from 5 to 0");
  expect_has(message_of<DTypeError>([&] {
               upsample(g.input("i", {1, 1, 4}, i32), {8}, UpsampleMode::linear);
             }),
             "f32 only");
  EXPECT_EQ(upsample(g.input("j", {1, 1, 4}, i32), {8}).shape(), (Shape{1, 1, 8}));
}

}  // namespace
}  // namespace mntest
