// pad (every mode) and flatten against a reference written here in double, forward and the
// gradient of sum(pad(x) * c), on random inputs of odd sizes up to rank 4; and their errors.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_util.hpp"

namespace mntest {
namespace {

using namespace meganeura;

// f throws E with a message that contains `part`.
template <class E, class F>
void expect_error(F&& f, const std::string& part) {
  const std::string message = message_of<E>(std::forward<F>(f));
  EXPECT_NE(message.find(part), std::string::npos) << message;
}

struct PadCase {
  Shape shape;
  std::vector<int64_t> pads;
  PadMode mode;
  float value = 0;
};

// For each output element, the flat input index it comes from, or -1 for the constant fill.
std::vector<int64_t> reference_sources(const PadCase& c, Shape& out) {
  const size_t r = c.shape.size();
  std::vector<int64_t> left(r, 0), right(r, 0);
  for (size_t p = 0; p < c.pads.size(); p += 2) {
    left[r - 1 - p / 2] = c.pads[p];
    right[r - 1 - p / 2] = c.pads[p + 1];
  }
  out = c.shape;
  for (size_t d = 0; d < r; ++d) out[d] += left[d] + right[d];
  std::vector<int64_t> sources(static_cast<size_t>(numel(out)));
  for (int64_t o = 0; o < numel(out); ++o) {
    int64_t rest = o, flat = 0, stride = 1;
    bool fill = false;
    for (size_t k = r; k-- > 0;) {
      const int64_t n = c.shape[k], at = rest % out[k];
      rest /= out[k];
      int64_t j = at - left[k];
      if (j < 0 || j >= n) {
        switch (c.mode) {
          case PadMode::constant: fill = true; break;
          case PadMode::reflect: j = j < 0 ? -j : 2 * (n - 1) - j; break;
          case PadMode::replicate: j = j < 0 ? 0 : n - 1; break;
          case PadMode::circular: j = (j + n) % n; break;
        }
      }
      flat += j * stride;
      stride *= n;
    }
    sources[static_cast<size_t>(o)] = fill ? -1 : flat;
  }
  return sources;
}

std::string describe(const PadCase& c) {
  std::string s = shape_str(c.shape) + " pads";
  for (int64_t p : c.pads) {
    s += ' ';
    s += std::to_string(p);  // (" " + std::to_string(p) trips GCC 12's -Wrestrict at -O2)
  }
  const char* modes[] = {"constant", "reflect", "replicate", "circular"};
  return s + " " + modes[static_cast<int>(c.mode)];
}

const std::vector<PadCase>& cases() {
  static const std::vector<PadCase> all = {
      {{2, 3, 5, 7}, {1, 2, 3, 0}, PadMode::constant, 1.5f},
      {{2, 3, 5, 7}, {2, 1, 0, 3, 1, 1}, PadMode::constant, 0.0f},
      {{3, 6, 9}, {-2, 1, 1, -3}, PadMode::constant, -0.25f},  // crops
      {{2, 3, 5, 7}, {3, 2, 4, 1}, PadMode::reflect},
      {{11}, {10, 10}, PadMode::reflect},
      {{2, 3, 5, 7}, {3, 2, 4, 1, 1, 2}, PadMode::replicate},
      {{1, 1, 1}, {2, 3, 1, 0}, PadMode::replicate},
      {{2, 3, 5, 7}, {7, 7, 2, 5}, PadMode::circular},
      {{4, 9}, {0, 0, 1, 2}, PadMode::reflect},
  };
  return all;
}

TEST(Pad, MatchesTheReference) {
  for (const PadCase& c : cases()) {
    SCOPED_TRACE(describe(c));
    Rng rng;
    SCOPED_TRACE(seed_note(rng.seed()));
    const std::vector<float> x = rng.floats(numel(c.shape), -1, 1);
    const HostTensor y = run_on([&](Tensor t) { return pad(t, c.pads, c.mode, c.value); }, c.shape, x);
    Shape out;
    const std::vector<int64_t> sources = reference_sources(c, out);
    ASSERT_EQ(y.shape, out);
    const std::vector<float> got = y.to_f32();
    for (size_t o = 0; o < sources.size(); ++o) {
      const float want = sources[o] < 0 ? c.value : x[static_cast<size_t>(sources[o])];
      ASSERT_EQ(got[o], want) << "element " << o;
    }
  }
}

TEST(Pad, GradientsAddBackToTheirSources) {
  for (const PadCase& c : cases()) {
    SCOPED_TRACE(describe(c));
    Rng rng;
    SCOPED_TRACE(seed_note(rng.seed()));
    Shape out;
    const std::vector<int64_t> sources = reference_sources(c, out);
    const std::vector<float> weights = rng.floats(numel(out), -1, 1);
    const std::vector<float> got = grad_of_weighted_sum([&](Tensor t) { return pad(t, c.pads, c.mode, c.value); },
                                                        c.shape, rng.floats(numel(c.shape), -1, 1), out, weights);
    std::vector<double> want(static_cast<size_t>(numel(c.shape)), 0.0);
    for (size_t o = 0; o < sources.size(); ++o)
      if (sources[o] >= 0) want[static_cast<size_t>(sources[o])] += weights[o];
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << "element " << i;
  }
}

TEST(Pad, ErrorsNameTheDimensionAndTheRule) {
  Graph g;
  Tensor x = g.input("x", {2, 3, 5});
  expect_error<ShapeError>([&] { pad(x, {1}); }, "1 pads; give (left, right) pairs");
  expect_error<ShapeError>([&] { pad(x, {1, 1, 1, 1, 1, 1, 1, 1}); }, "at most its 3 dimensions");
  expect_error<ShapeError>(
      [&] {
        pad(x, {5, 0}, PadMode::reflect);
      },
      "dimension 2 padded by (5, 0): reflect pads must be below the dimension's size 5");
  expect_error<ShapeError>(
      [&] {
        pad(x, {0, 0, 0, 4}, PadMode::circular);
      },
      "dimension 1 padded by (0, 4): circular pads may not exceed");
  expect_error<ShapeError>([&] { pad(x, {-1, 0}, PadMode::replicate); }, "negative pads crop only in constant mode");
  expect_error<ShapeError>([&] { pad(x, {-3, -2}); }, "would keep no element");
  expect_error<DTypeError>([&] { pad(g.input("i", {4}, i32), {1, 1}); }, "fill is f32 only");
  EXPECT_EQ(pad(g.input("i2", {4}, i32), {1, 2}, PadMode::replicate).shape(), (Shape{7}));
}

TEST(Flatten, MergesTheDimensionsAsTorchDoes) {
  Graph g;
  Tensor x = g.input("x", {2, 3, 5, 7});
  EXPECT_EQ(flatten(x).shape(), (Shape{210}));
  EXPECT_EQ(flatten(x, 1).shape(), (Shape{2, 105}));
  EXPECT_EQ(flatten(x, 1, 2).shape(), (Shape{2, 15, 7}));
  EXPECT_EQ(flatten(x, -2, -1).shape(), (Shape{2, 3, 35}));
  EXPECT_EQ(flatten(x, 2, 2).shape(), (Shape{2, 3, 5, 7}));
  EXPECT_EQ(flatten(g.scalar(2.0f)).shape(), (Shape{1}));
  expect_error<ShapeError>([&] { flatten(x, 2, 1); }, "start_dim 2 comes after end_dim 1");
  expect_error<ShapeError>([&] { flatten(x, 4); }, "start_dim 4 out of range");

  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  const std::vector<float> values = rng.floats(210, -1, 1);
  g.output("y", flatten(x, 1, 2) * 2.0f);
  Session s = build_inference_session(g);
  s.set_input("x", host_f32({2, 3, 5, 7}, values));
  s.step();
  const std::vector<float> got = s.read_output("y").to_f32();
  for (size_t i = 0; i < values.size(); ++i) ASSERT_EQ(got[i], 2.0f * values[i]) << i;
}

}  // namespace
}  // namespace mntest
