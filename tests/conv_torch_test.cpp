// conv and conv_transpose against PyTorch's own modules (tests/data/conv/torch.json, made by
// tools/fixtures/make_conv_fixtures.py with Debian's python3-torch): outputs and the gradients of
// the input, the weight and the bias, for PyTorch's conventions of 'same' with even kernels,
// padding modes, groups, output_padding and the transposed weight's layout.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "test_util.hpp"

namespace mntest {
namespace {

using namespace meganeura;

Tensor apply(const nlohmann::json& c, Tensor x, Tensor w, Tensor b) {
  auto list = [&](const char* key) { return c.at(key).get<std::vector<int64_t>>(); };
  if (c.at("op") == "conv")
    return conv(x, w, b,
                {.stride = list("stride"),
                 .padding = list("padding"),
                 .same = c.at("same").get<bool>(),
                 .dilation = list("dilation"),
                 .groups = c.at("groups").get<int64_t>(),
                 .padding_mode = pad_mode_named(c.at("padding_mode"))});
  return conv_transpose(x, w, b,
                        {.stride = list("stride"),
                         .padding = list("padding"),
                         .output_padding = list("output_padding"),
                         .dilation = list("dilation"),
                         .groups = c.at("groups").get<int64_t>()});
}

TEST(ConvAgainstTorch, OutputsAndGradients) {
  std::ifstream file(std::string(MEGANEURA_TEST_DATA) + "/conv/torch.json");
  ASSERT_TRUE(file) << "tests/data/conv/torch.json";
  const nlohmann::json fixture = nlohmann::json::parse(file);
  int checked = 0;
  for (const nlohmann::json& c : fixture.at("cases")) {
    const Shape xs = c.at("x").get<Shape>(), ws = c.at("w").get<Shape>(), out = c.at("out_shape").get<Shape>();
    const bool bias = c.at("bias").get<bool>();
    SCOPED_TRACE(c.at("op").get<std::string>() + " of " + shape_str(xs) + " with " + shape_str(ws));
    const int64_t channels = out[1];
    Graph g;
    Tensor y = apply(c, g.parameter("x", xs), g.parameter("w", ws), bias ? g.parameter("b", {channels}) : Tensor{});
    ASSERT_EQ(y.shape(), out);
    g.output("y", y);
    Session s = build_session(g, sum(y * g.input("c", out)), {.optimizer = SGD{.lr = 0.0f}});
    s.set_parameter("x", host_f32(xs, fixture_input(numel(xs))));
    s.set_parameter("w", host_f32(ws, formula(numel(ws), 29, 13, 6, 16.0f)));
    if (bias) s.set_parameter("b", host_f32({channels}, formula(channels, 31, 11, 5, 16.0f)));
    s.set_input("c", host_f32(out, fixture_weights(numel(out))));
    s.step();
    expect_near_all(s.read_output("y").to_f32(), c.at("output").get<std::vector<double>>(), "y", 2e-5);
    expect_near_all(s.read_grad("x").to_f32(), c.at("grad_x").get<std::vector<double>>(), "d x", 2e-5);
    expect_near_all(s.read_grad("w").to_f32(), c.at("grad_w").get<std::vector<double>>(), "d weight", 2e-5);
    if (bias) expect_near_all(s.read_grad("b").to_f32(), c.at("grad_b").get<std::vector<double>>(), "d bias", 2e-5);
    ++checked;
  }
  EXPECT_EQ(checked, 14);
}

}  // namespace
}  // namespace mntest
