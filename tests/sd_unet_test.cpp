// The benchmark's diffusion UNet against PyTorch (tests/data/sd_unet/torch.json, made by
// tools/fixtures/make_sd_unet_fixtures.py with Debian's python3-torch): the same parameter names,
// one training step's prediction, loss and every parameter's gradient, weights from the hash of
// the ResNet fixtures — each against PyTorch in f64, within 1e-4 (prediction) and 1e-3
// (gradients) of the tensor's largest value, or 4 times PyTorch's own f32 error where larger.
// Also: the configuration and shape errors.
#include "meganeura/sd_unet.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "formula_fixture.hpp"
#include "test_util.hpp"

namespace mntest {
namespace {

using namespace meganeura;
using models::SdUnetConfig;

std::vector<nlohmann::json> cases() { return fixture_cases(std::string(MEGANEURA_TEST_DATA) + "/sd_unet/torch.json"); }

class SdUnetAgainstTorch : public ::testing::TestWithParam<size_t> {};

TEST_P(SdUnetAgainstTorch, TrainingStep) {
  const std::vector<nlohmann::json> all = cases();
  ASSERT_LT(GetParam(), all.size());
  const nlohmann::json& c = all[GetParam()];
  const SdUnetConfig config{.base_channels = c.at("base"), .levels = c.at("levels"), .groups = c.at("groups")};
  const int64_t batch = c.at("batch"), height = c.at("height"), width = c.at("width");
  const Shape shape = {batch, 4, height, width};
  std::vector<float> latents(static_cast<size_t>(numel(shape))), target(latents.size());
  for (size_t i = 0; i < latents.size(); ++i) {
    latents[i] = static_cast<float>(2 * uniform(1000, static_cast<int64_t>(i)));
    target[i] = static_cast<float>(2 * uniform(1001, static_cast<int64_t>(i)));
  }
  const models::SdUnetGraph unet = models::sd_unet_graph(config, batch, height, width, true);
  Session s = build_session(*unet.graph, unet.loss, {.optimizer = SGD{.lr = 0.0f}});
  std::vector<std::string> names = s.parameter_names();
  std::sort(names.begin(), names.end());
  ASSERT_EQ(names, c.at("names").get<std::vector<std::string>>()) << "the PyTorch module's names";
  set_formula_weights(s);
  s.set_input("latents", host_f32(shape, latents));
  s.set_input("target", host_f32(shape, target));
  s.step();
  expect_values(s.read_output("prediction").to_f32(), c.at("prediction"), "prediction");
  EXPECT_NEAR(s.read_loss(), c.at("loss").at(0).get<double>(), tolerance(c.at("loss"), 1e-5, 1));
  for (const auto& [name, want] : c.at("grads").items()) expect_summary(s.read_grad(name).to_f32(), want, "d " + name);
}

INSTANTIATE_TEST_SUITE_P(Shapes, SdUnetAgainstTorch, ::testing::Values(0, 1));

TEST(SdUnet, ChecksItsConfigurationAndInput) {
  Graph g;
  expect_has(message_of<Error>([&] { models::SdUnet(g, {.base_channels = 24, .groups = 16}); }),
             "level 0 normalises 24 channels, which 16 groups do not divide");
  expect_has(message_of<Error>([&] { models::SdUnet(g, {.levels = 0}); }), "levels must be 1 to 16, not 0");
  expect_has(message_of<ShapeError>([&] { models::sd_unet_graph({}, 1, 30, 32, false); }),
             "SdUnet: latents of shape [1,4,30,32]; it takes [N, 4, H, W] with H and W multiples of 4");
}

TEST(SdUnet, TheBenchmarkSizeHasItsParameterCount) {
  Graph g;
  const models::SdUnet unet(g, {});
  int64_t count = 0;
  for (const Node& n : g.nodes())
    if (n.op == Op::Parameter) count += numel(n.shape);
  EXPECT_EQ(count, 5294080);  // the PyTorch module's, "about 5.3M"
}

}  // namespace
}  // namespace mntest
