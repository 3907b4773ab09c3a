// torchvision's ResNet-18 and ResNet-50 against PyTorch (tests/data/resnet/torch.json, made by
// tools/fixtures/make_resnet_fixtures.py with Debian's python3-torch and python3-torchvision):
// the same names (every parameter and buffer of the state dict, num_batches_tracked aside), one
// training step's logits, loss, every parameter's gradient and every running statistic after
// it, and the eval-mode logits — weights from a hash both sides compute. Each against PyTorch in
// f64, within 1e-3 of the tensor's largest value (1e-4 for logits) or 4 times PyTorch's own
// largest f32 error in it where that is larger (train-mode ResNet-50 is ill-conditioned: its last
// batch norms see the pooled loss's gradient, the same at every position, and their backward
// cancels it almost entirely). Also: a torchvision
// state dict saved as safetensors, I64 counters included, loads by name.
#include "meganeura/resnet.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "formula_fixture.hpp"
#include "test_util.hpp"

namespace mntest {
namespace {

using namespace meganeura;
using models::ResNetConfig;

std::vector<nlohmann::json> cases() { return fixture_cases(std::string(MEGANEURA_TEST_DATA) + "/resnet/torch.json"); }

ResNetConfig config_of(const nlohmann::json& c) {
  ResNetConfig config = c.at("model") == "resnet18" ? ResNetConfig::resnet18() : ResNetConfig::resnet50();
  config.num_classes = c.at("classes").get<int64_t>();
  return config;
}

class ResNetAgainstTorch : public ::testing::TestWithParam<size_t> {};

TEST_P(ResNetAgainstTorch, TrainingStepAndEval) {
  const std::vector<nlohmann::json> all = cases();
  ASSERT_LT(GetParam(), all.size());
  const nlohmann::json& c = all[GetParam()];
  SCOPED_TRACE(c.at("model").get<std::string>());
  const int64_t batch = c.at("batch"), height = c.at("height"), width = c.at("width"), classes = c.at("classes");
  const std::vector<std::string> names = c.at("names").get<std::vector<std::string>>();
  std::vector<float> pixels(static_cast<size_t>(batch * 3 * height * width));
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<float>(2 * uniform(1000, static_cast<int64_t>(i)));
  const HostTensor images = host_f32({batch, 3, height, width}, pixels);
  std::vector<int32_t> labels(static_cast<size_t>(batch));
  for (int64_t i = 0; i < batch; ++i) labels[static_cast<size_t>(i)] = static_cast<int32_t>(i % classes);

  const models::ResNetGraph train = models::resnet_graph(config_of(c), batch, height, width, true);
  Session s = build_session(*train.graph, train.loss, {.optimizer = SGD{.lr = 0.0f}});
  std::vector<std::string> ours = s.parameter_names();
  std::sort(ours.begin(), ours.end());
  ASSERT_EQ(ours, names) << "torchvision's state dict names";
  set_formula_weights(s);
  s.set_input("images", images);
  s.set_input("labels", HostTensor::i32s({batch}, labels));
  s.step();
  expect_values(s.read_output("logits").to_f32(), c.at("logits"), "training logits");
  EXPECT_NEAR(s.read_loss(), c.at("loss").at(0).get<double>(), tolerance(c.at("loss"), 1e-5, 1));
  for (const auto& [name, want] : c.at("grads").items()) expect_summary(s.read_grad(name).to_f32(), want, "d " + name);
  for (const auto& [name, want] : c.at("running").items())
    expect_summary(s.read_parameter(name).to_f32(), want, name + " after the step");

  const models::ResNetGraph eval = models::resnet_graph(config_of(c), batch, height, width, false);
  Session e = build_inference_session(*eval.graph);
  set_formula_weights(e);
  e.set_input("images", images);
  e.step();
  expect_values(e.read_output("logits").to_f32(), c.at("eval_logits"), "eval logits");
}

INSTANTIATE_TEST_SUITE_P(Models, ResNetAgainstTorch, ::testing::Values(0, 1),
                         [](const ::testing::TestParamInfo<size_t>& i) {
                           return i.param == 0 ? "resnet18" : "resnet50";
                         });

// A torchvision state dict as safetensors — F32 tensors and each batch norm's I64
// num_batches_tracked, written here as torch's save_file writes them — loads into the graph by
// name; the counters are ignored.
TEST(ResNet, LoadsATorchvisionStateDictByName) {
  const models::ResNetGraph r = models::resnet_graph(ResNetConfig::resnet18(), 1, 32, 32, false);
  Session s = build_inference_session(*r.graph);
  std::vector<std::string> names = s.parameter_names();
  std::sort(names.begin(), names.end());
  nlohmann::json header = nlohmann::json::object();
  std::string data;
  for (size_t k = 0; k < names.size(); ++k) {
    const Shape shape = s.parameter_info(names[k]).shape;
    std::vector<float> v(static_cast<size_t>(numel(shape)));
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = formula_value(names[k], shape, static_cast<int64_t>(k), static_cast<int64_t>(i));
    header[names[k]] = {
        {"dtype", "F32"}, {"shape", shape}, {"data_offsets", {data.size(), data.size() + v.size() * 4}}};
    data.append(reinterpret_cast<const char*>(v.data()), v.size() * 4);
    const std::string counter = names[k].ends_with(".running_var")
                                    ? names[k].substr(0, names[k].size() - 11) + "num_batches_tracked"
                                    : std::string();
    if (!counter.empty()) {
      header[counter] = {{"dtype", "I64"}, {"shape", Shape{}}, {"data_offsets", {data.size(), data.size() + 8}}};
      data.append(std::string("\x2a\0\0\0\0\0\0\0", 8));
    }
  }
  const std::string text = header.dump();
  const uint64_t length = text.size();
  const std::string path = ::testing::TempDir() + "resnet18.safetensors";
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(&length), 8);
    out << text << data;
  }
  models::load_weights(s, *r.graph, Checkpoint::open(path));
  for (const char* name : {"conv1.weight", "layer2.0.downsample.1.running_var", "fc.bias"}) {
    const auto k = static_cast<int64_t>(std::find(names.begin(), names.end(), name) - names.begin());
    const std::vector<float> got = s.read_parameter(name).to_f32();
    for (size_t i = 0; i < got.size(); i += 97)
      ASSERT_EQ(got[i], formula_value(name, s.parameter_info(name).shape, k, static_cast<int64_t>(i))) << name;
  }
}

}  // namespace
}  // namespace mntest
