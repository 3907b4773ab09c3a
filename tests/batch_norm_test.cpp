// batch_norm in training mode against a reference written here in double on random inputs of odd
// sizes (rank 3 to 5): the output, and the gradients of sum(y * c) with respect to x, the weight
// and the bias from the closed form d x = w / σ · (c − mean(c) − x̂ · mean(c · x̂)), means over N
// and the spatial dimensions of each channel.
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>
#include <vector>

#include "test_util.hpp"

namespace mntest {
namespace {

using namespace meganeura;

TEST(BatchNorm, TrainingMatchesTheReference) {
  for (const Shape& shape : {Shape{5, 3, 7, 9}, Shape{3, 4, 11}, Shape{2, 3, 3, 5, 2}}) {
    SCOPED_TRACE(shape_str(shape));
    Rng rng;
    SCOPED_TRACE(seed_note(rng.seed()));
    const int64_t n = shape[0], channels = shape[1], inner = numel(shape) / (n * channels), count = n * inner;
    const std::vector<float> x = rng.floats(numel(shape), -2, 3), w = rng.floats(channels, 0.5, 1.5),
                             b = rng.floats(channels, -1, 1), c = rng.floats(numel(shape), -1, 1);
    Graph g;
    Tensor y =
        batch_norm(g.parameter("x", shape), {}, {}, g.parameter("w", {channels}), g.parameter("b", {channels}), true);
    g.output("y", y);
    Session s = build_session(g, sum(y * g.input("c", shape)), {.optimizer = SGD{.lr = 0.0f}});
    s.set_parameter("x", host_f32(shape, x));
    s.set_parameter("w", host_f32({channels}, w));
    s.set_parameter("b", host_f32({channels}, b));
    s.set_input("c", host_f32(shape, c));
    s.step();
    const std::vector<float> got_y = s.read_output("y").to_f32(), got_dx = s.read_grad("x").to_f32(),
                             got_dw = s.read_grad("w").to_f32(), got_db = s.read_grad("b").to_f32();
    auto at = [&](int64_t i, int64_t ch, int64_t j) { return static_cast<size_t>((i * channels + ch) * inner + j); };
    for (int64_t ch = 0; ch < channels; ++ch) {
      double mean = 0, var = 0;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < inner; ++j) mean += x[at(i, ch, j)];
      mean /= static_cast<double>(count);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < inner; ++j) var += std::pow(x[at(i, ch, j)] - mean, 2);
      const double sigma = std::sqrt(var / static_cast<double>(count) + 1e-5);
      double mean_c = 0, mean_cx = 0, dw = 0;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < inner; ++j) {
          const size_t k = at(i, ch, j);
          const double xhat = (x[k] - mean) / sigma;
          ASSERT_NEAR(got_y[k], xhat * w[static_cast<size_t>(ch)] + b[static_cast<size_t>(ch)], 1e-4) << "y " << k;
          mean_c += c[k];
          mean_cx += c[k] * xhat;
          dw += c[k] * xhat;
        }
      ASSERT_NEAR(got_dw[static_cast<size_t>(ch)], dw, 1e-3) << "d weight " << ch;
      ASSERT_NEAR(got_db[static_cast<size_t>(ch)], mean_c, 1e-3) << "d bias " << ch;
      mean_c /= static_cast<double>(count);
      mean_cx /= static_cast<double>(count);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < inner; ++j) {
          const size_t k = at(i, ch, j);
          const double xhat = (x[k] - mean) / sigma;
          const double want = w[static_cast<size_t>(ch)] / sigma * (c[k] - mean_c - xhat * mean_cx);
          ASSERT_NEAR(got_dx[k], want, 1e-4) << "d x " << k;
        }
    }
  }
}

// Running statistics held in buffers (Graph::buffer): an eval-mode batch norm inside a training
// session trains its weight, never its running statistics, which start at their initialisers
// (0 and 1, PyTorch's), are set and read by name, and survive save and load.
TEST(BatchNorm, RunningStatisticsInBuffersAreNotTrained) {
  Graph g;
  const Tensor x = g.input("x", {4, 3, 5});
  const Tensor mean = g.buffer("bn.running_mean", {3}, Init::constant(0.0f));
  const Tensor var = g.buffer("bn.running_var", {3}, Init::constant(1.0f));
  const Tensor y = batch_norm(x, mean, var, g.parameter("bn.weight", {3}, f32, Init::constant(1.0f)), {}, false);
  g.output("y", y);
  Session s = build_session(g, sum(y * y), {.optimizer = SGD{.lr = 0.1f}});
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  s.set_input("x", host_f32({4, 3, 5}, rng.floats(60, -2, 2)));
  EXPECT_EQ(s.read_parameter("bn.running_var").to_f32(), std::vector<float>(3, 1.0f));
  s.set_parameter("bn.running_mean", host_f32({3}, {0.5f, -0.25f, 0.125f}));
  s.step();
  EXPECT_EQ(s.read_parameter("bn.running_mean").to_f32(), (std::vector<float>{0.5f, -0.25f, 0.125f}));
  EXPECT_EQ(s.read_parameter("bn.running_var").to_f32(), std::vector<float>(3, 1.0f));
  EXPECT_EQ(s.read_grad("bn.running_mean").to_f32(), std::vector<float>(3, 0.0f));
  EXPECT_NE(s.read_parameter("bn.weight").to_f32(), std::vector<float>(3, 1.0f));  // trained
  const std::string path = ::testing::TempDir() + "buffers.safetensors";
  s.save(path);
  Session t = build_session(g, sum(y * y), {.optimizer = SGD{.lr = 0.1f}});
  t.load(path);
  EXPECT_EQ(t.read_parameter("bn.running_mean").to_f32(), (std::vector<float>{0.5f, -0.25f, 0.125f}));
}

// Training mode with running statistics: each step blends the batch's mean and unbiased variance
// into them with the momentum (PyTorch's update), over several steps of new inputs; evaluate()
// leaves them alone; an eval-mode batch norm reading them in the same step, built after the
// update, sees the old values (with the optimizer off too, which keeps the graph's order).
TEST(BatchNorm, TrainingUpdatesTheRunningStatistics) {
  for (const auto& [shape, momentum, optimize] :
       {std::tuple{Shape{3, 4, 5, 7}, 0.1f, true}, std::tuple{Shape{5, 3, 9}, 0.35f, false}}) {
    SCOPED_TRACE(shape_str(shape) + " momentum " + std::to_string(momentum) + (optimize ? "" : ", optimizer off"));
    Rng rng;
    SCOPED_TRACE(seed_note(rng.seed()));
    const int64_t n = shape[0], channels = shape[1], inner = numel(shape) / (n * channels), count = n * inner;
    Graph g;
    const Tensor x = g.input("x", shape);
    const Tensor running_mean = g.buffer("bn.running_mean", {channels}, Init::constant(0.0f));
    const Tensor running_var = g.buffer("bn.running_var", {channels}, Init::constant(1.0f));
    const Tensor weight = g.parameter("bn.weight", {channels}, f32, Init::constant(1.0f));
    const Tensor y = batch_norm(x, running_mean, running_var, weight, {}, true, momentum);
    g.output("y", y);
    g.output("seen", batch_norm(x, running_mean, running_var, {}, {}, false));  // reads the old values
    Session s = build_session(g, sum(y * y), {.optimizer = SGD{.lr = 0.01f}, .optimize = optimize});
    std::vector<double> mean_want(static_cast<size_t>(channels), 0.0), var_want(static_cast<size_t>(channels), 1.0);
    for (int step = 0; step < 3; ++step) {
      const std::vector<float> xs = rng.floats(numel(shape), -2, 3);
      s.set_input("x", host_f32(shape, xs));
      const std::vector<double> mean_before = mean_want, var_before = var_want;
      s.step();
      const std::vector<float> seen = s.read_output("seen").to_f32();
      for (int64_t ch = 0; ch < channels; ++ch) {
        double m = 0, v = 0;
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = 0; j < inner; ++j) m += xs[static_cast<size_t>((i * channels + ch) * inner + j)];
        m /= static_cast<double>(count);
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = 0; j < inner; ++j)
            v += std::pow(xs[static_cast<size_t>((i * channels + ch) * inner + j)] - m, 2);
        v /= static_cast<double>(count - 1);
        const auto c = static_cast<size_t>(ch);
        mean_want[c] = (1 - momentum) * mean_want[c] + momentum * m;
        var_want[c] = (1 - momentum) * var_want[c] + momentum * v;
        const size_t first = static_cast<size_t>(ch * inner);  // sample 0's first element of the channel
        ASSERT_NEAR(seen[first], (xs[first] - mean_before[c]) / std::sqrt(var_before[c] + 1e-5), 1e-4)
            << "step " << step << ": the eval-mode read of channel " << ch << " saw the updated statistics";
      }
      expect_near_all(s.read_parameter("bn.running_mean").to_f32(), mean_want, "running mean", 1e-5);
      expect_near_all(s.read_parameter("bn.running_var").to_f32(), var_want, "running variance", 1e-5);
    }
    s.set_input("x", host_f32(shape, rng.floats(numel(shape), -2, 3)));
    s.evaluate();
    expect_near_all(s.read_parameter("bn.running_mean").to_f32(), mean_want, "running mean after evaluate()", 1e-5);
  }
}

// An inference session runs a training-mode batch norm as PyTorch's forward under no_grad does:
// the running statistics move each step; momentum 0 leaves them where they were.
TEST(BatchNorm, InferenceStepsUpdateTheRunningStatisticsToo) {
  for (const float momentum : {0.5f, 0.0f}) {
    Graph g;
    const Tensor x = g.input("x", {2, 1, 2});
    const Tensor mean = g.buffer("rm", {1}, Init::constant(1.0f)), var = g.buffer("rv", {1}, Init::constant(1.0f));
    g.output("y", batch_norm(x, mean, var, {}, {}, true, momentum));
    Session s = build_inference_session(g);
    if (momentum > 0) {  // each statistic's blend and write: one generated kernel
      EXPECT_EQ(count_lines(s.listing(), ",assign]"), 2) << s.listing();
    }
    s.set_input("x", std::vector<float>{1, 2, 3, 6});  // mean 3, unbiased variance 14 / 3
    s.step();
    s.step();
    const float keep = (1 - momentum) * (1 - momentum);
    EXPECT_NEAR(s.read_parameter("rm").to_f32()[0], keep * 1 + (1 - keep) * 3, 1e-6) << "momentum " << momentum;
    EXPECT_NEAR(s.read_parameter("rv").to_f32()[0], keep * 1 + (1 - keep) * 14.0 / 3, 1e-5) << "momentum " << momentum;
  }
}

TEST(Assign, WritesOnlyBuffersAndStates) {
  Graph g;
  const Tensor value = g.input("v", {3});
  expect_has(message_of<Error>([&] { assign(g.parameter("w", {3}), value); }), "\"w\" is a trained parameter");
  expect_has(message_of<Error>([&] { assign(g.input("x", {3}), value); }),
             "assign writes a Graph::buffer or a Graph::state");
  expect_has(message_of<ShapeError>([&] { assign(g.buffer("b", {4}), value); }),
             "value [3] differs from the target [4]");
  const Tensor stats = g.buffer("s", {3});
  expect_has(message_of<Error>([&] {
               batch_norm(g.input("x2", {2, 3}), stats, {}, {}, {}, true);
             }),
             "pass both running statistics");
  expect_has(message_of<Error>([&] {
               batch_norm(g.input("x3", {2, 3}), stats, stats, {}, {}, true, 1.5f);
             }),
             "momentum 1.500000 is outside [0, 1]");
  expect_has(message_of<Error>([&] {
               batch_norm(g.input("x4", {2, 3}), g.constant(std::vector<float>{0, 0, 0}, {3}), stats, {}, {}, true);
             }),
             "assign writes a Graph::buffer or a Graph::state");
}

}  // namespace
}  // namespace mntest
