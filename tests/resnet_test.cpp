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

#include "test_util.hpp"

namespace mntest {
namespace {

using namespace meganeura;
using models::ResNetConfig;

// u(k, i) of the fixture script: uniform in [-1/2, 1/2), exact in f32 on both sides.
double uniform(int64_t k, int64_t i) {
  const uint64_t h = (static_cast<uint64_t>(i) * 2654435761ULL + static_cast<uint64_t>(k) * 40503ULL) & 0xffffffffULL;
  return static_cast<double>(h >> 8) / 16777216.0 - 0.5;
}

// Element i of tensor k (the k-th name in sorted order), as the fixture script computes it.
float formula_value(const std::string& name, const Shape& shape, int64_t k, int64_t i) {
  const double u = uniform(k, i);
  if (name.ends_with("running_mean")) return static_cast<float>(u / 4);
  if (name.ends_with("running_var")) return static_cast<float>(1 + (u + 0.5) / 2);
  if (name.ends_with("bias")) return static_cast<float>(u / 8);
  if (shape.size() == 1) return static_cast<float>(1 + u / 4);
  return static_cast<float>(u * std::sqrt(6.0 / static_cast<double>(numel(shape) / shape[0])));
}

void set_formula_weights(Session& s, const std::vector<std::string>& names) {
  for (size_t k = 0; k < names.size(); ++k) {
    const Shape shape = s.parameter_info(names[k]).shape;
    std::vector<float> v(static_cast<size_t>(numel(shape)));
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = formula_value(names[k], shape, static_cast<int64_t>(k), static_cast<int64_t>(i));
    s.set_parameter(names[k], host_f32(shape, v));
  }
}

// Within `relative` of `scale` of the exact value, or within 4 times PyTorch's own f32 error
// where that is larger (an ill-conditioned value: train-mode batch norms over few values).
double tolerance(const nlohmann::json& pair, double relative, double scale) {
  return std::max(relative * scale, 4 * std::fabs(pair.at(0).get<double>() - pair.at(1).get<double>())) + 1e-9;
}

// A tensor against the fixture's summary: its sum, its largest magnitude and 8 sampled values.
void expect_summary(const std::vector<float>& got, const nlohmann::json& want, const std::string& what) {
  double sum = 0, largest = 0;
  for (float v : got) {
    sum += v;
    largest = std::max(largest, std::fabs(static_cast<double>(v)));
  }
  const double scale = want.at("max_abs").at(0).get<double>();
  // An element: 1e-3 of the largest, or 4 times PyTorch's largest f32 error in the tensor.
  const double element = std::max(1e-3 * scale, 4 * want.at("f32_error").get<double>()) + 1e-9;
  // The sum: PyTorch's f32 errors as noise, which grows with the square root of the count.
  const nlohmann::json& sums = want.at("sum");
  const double noise = 4 * std::sqrt(static_cast<double>(got.size())) * want.at("f32_error").get<double>();
  EXPECT_NEAR(sum, sums.at(0).get<double>(), std::max(tolerance(sums, 1e-3, want.at("abs_sum").get<double>()), noise))
      << what << ": sum";
  EXPECT_NEAR(largest, scale, element) << what << ": largest magnitude";
  for (const auto& sample : want.at("samples")) {
    const auto i = sample.at(0).get<size_t>();
    ASSERT_LT(i, got.size()) << what;
    EXPECT_NEAR(got[i], sample.at(1).get<double>(), element) << what << ": element " << i;
  }
}

// Logits within 1e-4 of the largest, or 4 times PyTorch's largest f32 error among them.
void expect_logits(const std::vector<float>& got, const nlohmann::json& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 1, f32_error = 0;
  for (const auto& pair : want) {
    scale = std::max(scale, std::fabs(pair.at(0).get<double>()));
    f32_error = std::max(f32_error, std::fabs(pair.at(0).get<double>() - pair.at(1).get<double>()));
  }
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i].at(0).get<double>(), std::max(1e-4 * scale, 4 * f32_error)) << what << " element " << i;
}

std::vector<nlohmann::json> cases() {
  std::ifstream file(std::string(MEGANEURA_TEST_DATA) + "/resnet/torch.json");
  EXPECT_TRUE(file) << "tests/data/resnet/torch.json";
  if (!file) return {};
  return nlohmann::json::parse(file).at("cases").get<std::vector<nlohmann::json>>();
}

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
  set_formula_weights(s, names);
  s.set_input("images", images);
  s.set_input("labels", HostTensor::i32s({batch}, labels));
  s.step();
  expect_logits(s.read_output("logits").to_f32(), c.at("logits"), "training logits");
  EXPECT_NEAR(s.read_loss(), c.at("loss").at(0).get<double>(), tolerance(c.at("loss"), 1e-5, 1));
  for (const auto& [name, want] : c.at("grads").items()) expect_summary(s.read_grad(name).to_f32(), want, "d " + name);
  for (const auto& [name, want] : c.at("running").items())
    expect_summary(s.read_parameter(name).to_f32(), want, name + " after the step");

  const models::ResNetGraph eval = models::resnet_graph(config_of(c), batch, height, width, false);
  Session e = build_inference_session(*eval.graph);
  set_formula_weights(e, names);
  e.set_input("images", images);
  e.step();
  expect_logits(e.read_output("logits").to_f32(), c.at("eval_logits"), "eval logits");
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
