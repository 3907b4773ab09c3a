// pad, upsample, avg_pool2d, max_pool2d (ties included), adaptive_avg_pool2d, group_norm and
// batch_norm against PyTorch's own outputs and gradients (tests/data/resample/torch.json, made by
// tools/fixtures/make_resample_fixtures.py with Debian's python3-torch): every mode, the argument
// orders, window sizes and the rounding of source positions as PyTorch has them.
#include <gtest/gtest.h>

#include <array>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "test_util.hpp"

namespace mntest {
namespace {

using namespace meganeura;

// The case's op as a function of its input.
std::function<Tensor(Tensor)> fixture_op(const nlohmann::json& c) {
  const std::string op = c.at("op");
  if (op == "pad") {
    const auto pads = c.at("pads").get<std::vector<int64_t>>();
    const PadMode mode = pad_mode_named(c.at("mode").get<std::string>());
    const auto value = c.at("value").get<float>();
    return [=](Tensor x) { return pad(x, pads, mode, value); };
  }
  if (op == "upsample") {
    const Shape size = c.at("size").get<Shape>();
    const UpsampleMode mode = c.at("mode") == "nearest" ? UpsampleMode::nearest : UpsampleMode::linear;
    const bool align = c.at("align_corners").get<bool>();
    return [=](Tensor x) { return upsample(x, size, mode, align); };
  }
  if (op == "avg_pool2d") {
    const AvgPool2d o{c.at("kernel").get<std::array<int64_t, 2>>(), c.at("stride").get<std::array<int64_t, 2>>(),
                      c.at("padding").get<std::array<int64_t, 2>>(), c.at("ceil_mode").get<bool>(),
                      c.at("count_include_pad").get<bool>()};
    return [=](Tensor x) { return avg_pool2d(x, o); };
  }
  if (op == "max_pool2d") {
    const MaxPool2d o{c.at("kernel").get<std::array<int64_t, 2>>(), c.at("stride").get<std::array<int64_t, 2>>(),
                      c.at("padding").get<std::array<int64_t, 2>>(), c.at("dilation").get<std::array<int64_t, 2>>(),
                      c.at("ceil_mode").get<bool>()};
    return [=](Tensor x) { return max_pool2d(x, o); };
  }
  const auto size = c.at("size").get<std::array<int64_t, 2>>();
  return [=](Tensor x) { return adaptive_avg_pool2d(x, size); };
}

nlohmann::json fixture_cases() {
  std::ifstream file(std::string(MEGANEURA_TEST_DATA) + "/resample/torch.json");
  if (!file) ADD_FAILURE() << "tests/data/resample/torch.json";
  return file ? nlohmann::json::parse(file).at("cases") : nlohmann::json::array();
}

TEST(ResampleAgainstTorch, OutputsAndGradients) {
  int checked = 0;
  for (const nlohmann::json& c : fixture_cases()) {
    if (c.at("op") == "group_norm" || c.at("op") == "batch_norm") continue;  // below: they have parameters
    SCOPED_TRACE(c.at("op").get<std::string>() + " " + c.at("mode").get<std::string>() + " " + c.at("shape").dump());
    const Shape shape = c.at("shape").get<Shape>(), out = c.at("out_shape").get<Shape>();
    const std::function<Tensor(Tensor)> op = fixture_op(c);
    // Max pooling's tied cases take five values, so that windows hold equal largest elements.
    const std::vector<float> x =
        c.value("tied", false) ? formula(numel(shape), 37, 5, 2, 2.0f) : fixture_input(numel(shape));
    const HostTensor y = run_on(op, shape, x);
    ASSERT_EQ(y.shape, out);
    expect_near_all(y.to_f32(), c.at("output").get<std::vector<double>>(), "output", 2e-6);
    expect_near_all(grad_of_weighted_sum(op, shape, x, out, fixture_weights(numel(out))),
                    c.at("grad").get<std::vector<double>>(), "gradient", 2e-6);
    ++checked;
  }
  EXPECT_EQ(checked, 26);
}

// The group norms' affine values.
std::vector<float> norm_weight(int64_t c) { return formula(c, 29, 13, 6, 16.0f, 1.0f); }
std::vector<float> norm_bias(int64_t c) { return formula(c, 31, 11, 5, 16.0f); }

// group_norm, instance_norm and batch_norm (training: batch statistics; eval: the running ones).
TEST(ChannelNormsAgainstTorch, OutputsAndEveryGradient) {
  int checked = 0;
  for (const nlohmann::json& c : fixture_cases()) {
    const std::string op = c.at("op");
    if (op != "group_norm" && op != "batch_norm") continue;
    SCOPED_TRACE(op + " " + c.at("shape").dump() + " " + c.at("mode").dump());
    const Shape shape = c.at("shape").get<Shape>();
    const int64_t channels = shape[1];
    const bool affine = c.at("affine").get<bool>();
    Graph g;
    Tensor x = g.parameter("x", shape), w, b, y;
    if (affine) {
      w = g.parameter("w", {channels});
      b = g.parameter("b", {channels});
    }
    const bool training = op == "batch_norm" && c.at("training").get<bool>();
    if (op == "batch_norm") {  // buffers: training updates them as PyTorch's F.batch_norm did
      y = batch_norm(x, g.buffer("running_mean", {channels}), g.buffer("running_var", {channels}), w, b, training);
    } else {
      const int64_t groups = c.at("groups").get<int64_t>();
      y = groups == channels ? instance_norm(x, w, b) : group_norm(x, groups, w, b);
    }
    g.output("y", y);
    Session s = build_session(g, sum(y * g.input("c", shape)), {.optimizer = SGD{.lr = 0.0f}});
    s.set_parameter("x", host_f32(shape, fixture_input(numel(shape))));
    if (affine) {
      s.set_parameter("w", host_f32({channels}, norm_weight(channels)));
      s.set_parameter("b", host_f32({channels}, norm_bias(channels)));
    }
    s.set_input("c", host_f32(shape, fixture_weights(numel(shape))));
    if (op == "batch_norm") {
      s.set_parameter("running_mean", host_f32({channels}, formula(channels, 17, 7, 3, 8.0f)));
      s.set_parameter("running_var", host_f32({channels}, formula(channels, 13, 5, 0, 4.0f, 1.0f)));
    }
    s.step();
    expect_near_all(s.read_output("y").to_f32(), c.at("output").get<std::vector<double>>(), "output", 1e-5);
    if (training) {
      expect_near_all(s.read_parameter("running_mean").to_f32(), c.at("running_mean").get<std::vector<double>>(),
                      "running mean", 1e-6);
      expect_near_all(s.read_parameter("running_var").to_f32(), c.at("running_var").get<std::vector<double>>(),
                      "running variance", 1e-5);
    }
    expect_near_all(s.read_grad("x").to_f32(), c.at("grad").get<std::vector<double>>(), "gradient of x", 1e-4);
    if (affine) {
      expect_near_all(s.read_grad("w").to_f32(), c.at("grad_weight").get<std::vector<double>>(), "of the weight", 1e-4);
      expect_near_all(s.read_grad("b").to_f32(), c.at("grad_bias").get<std::vector<double>>(), "of the bias", 1e-4);
    }
    ++checked;
  }
  EXPECT_EQ(checked, 9);
}

TEST(GroupNorm, Errors) {
  Graph g;
  Tensor x = g.input("x", {2, 6, 5});
  expect_has(message_of<ShapeError>([&] { group_norm(x, 4); }), "the groups must divide the 6 channels");
  expect_has(message_of<ShapeError>([&] { group_norm(g.input("v", {6}), 2); }), "the input is [N, C, *]");
  expect_has(message_of<ShapeError>([&] { group_norm(x, 3, g.parameter("w", {5})); }), "weight has shape [5]");
  expect_has(message_of<Error>([&] { group_norm(x, 3, {}, g.parameter("b", {6})); }), "a bias without a weight");
}

TEST(BatchNorm, Errors) {
  Graph g;
  Tensor x = g.input("x", {2, 6, 5}), stats = g.input("stats", {6});
  expect_has(message_of<Error>([&] { batch_norm(x, {}, {}); }),
             "eval mode normalises by the running mean and variance");
  expect_has(message_of<ShapeError>([&] { batch_norm(x, stats, g.input("v5", {5})); }), "running_var has shape [5]");
  expect_has(message_of<ShapeError>([&] { batch_norm(x, {}, {}, g.parameter("w", {5}), {}, true); }),
             "weight has shape [5]");
  expect_has(message_of<ShapeError>([&] {
               batch_norm(g.input("one", {1, 6}), {}, {}, {}, {}, true);
             }),
             "training needs more than one value a channel");
  expect_has(message_of<ShapeError>([&] { batch_norm(g.input("v", {6}), stats, stats); }), "the input is [N, C, *]");
}

TEST(AvgPool, ErrorsNameTheDimensionAndTheRule) {
  Graph g;
  Tensor x = g.input("x", {2, 3, 7, 9});
  expect_has(message_of<ShapeError>([&] { avg_pool2d(g.input("v", {7, 9}), {{2, 2}}); }), "[N, C, H, W] or [C, H, W]");
  expect_has(message_of<ShapeError>([&] { avg_pool2d(x, {{2, 0}}); }), "along the width (9): kernel 0");
  expect_has(message_of<ShapeError>([&] { avg_pool2d(x, {{3, 3}, {1, 1}, {2, 0}}); }), "at most half the kernel");
  expect_has(message_of<ShapeError>([&] { avg_pool2d(x, {{8, 3}}); }), "along the height (7): kernel 8");
  expect_has(message_of<ShapeError>([&] { adaptive_avg_pool2d(x, {0, 2}); }), "output size must be positive");
  expect_has(message_of<DTypeError>([&] { adaptive_avg_pool2d(g.input("i", {1, 4, 4}, i32), {2, 2}); }), "f32 only");
  EXPECT_EQ(avg_pool2d(x, {{2, 2}}).shape(), (Shape{2, 3, 3, 4}));
  EXPECT_EQ(adaptive_avg_pool2d(g.input("c", {3, 7, 9}), {1, 1}).shape(), (Shape{3, 1, 1}));
}

}  // namespace
}  // namespace mntest
