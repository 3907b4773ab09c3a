// pad and upsample against PyTorch's own outputs (tests/data/resample/torch.json, made by
// tools/fixtures/make_resample_fixtures.py with Debian's python3-torch): every mode, the
// argument orders and the rounding of source positions as PyTorch has them.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "test_util.hpp"

namespace mntest {
namespace {

using namespace meganeura;

// Element i of every fixture input, as the generator makes it: exact in f32.
std::vector<float> fixture_input(const Shape& shape) {
  std::vector<float> v(static_cast<size_t>(numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(static_cast<int64_t>((37 * i) % 101) - 50) / 64.0f;
  return v;
}

PadMode pad_mode(const std::string& name) {
  if (name == "reflect") return PadMode::reflect;
  if (name == "replicate") return PadMode::replicate;
  if (name == "circular") return PadMode::circular;
  return PadMode::constant;
}

TEST(ResampleAgainstTorch, PadAndUpsample) {
  std::ifstream file(std::string(MEGANEURA_TEST_DATA) + "/resample/torch.json");
  ASSERT_TRUE(file) << "tests/data/resample/torch.json";
  const nlohmann::json fixture = nlohmann::json::parse(file);
  int checked = 0;
  for (const nlohmann::json& c : fixture.at("cases")) {
    SCOPED_TRACE(c.at("op").get<std::string>() + " " + c.at("mode").get<std::string>() + " " + c.at("shape").dump());
    const Shape shape = c.at("shape").get<Shape>();
    std::function<Tensor(Tensor)> op;
    if (c.at("op") == "pad") {
      const auto pads = c.at("pads").get<std::vector<int64_t>>();
      const PadMode mode = pad_mode(c.at("mode").get<std::string>());
      const auto value = c.at("value").get<float>();
      op = [=](Tensor x) { return pad(x, pads, mode, value); };
    } else {
      const Shape size = c.at("size").get<Shape>();
      const UpsampleMode mode = c.at("mode") == "nearest" ? UpsampleMode::nearest : UpsampleMode::linear;
      const bool align = c.at("align_corners").get<bool>();
      op = [=](Tensor x) { return upsample(x, size, mode, align); };
    }
    const HostTensor y = run_on(op, shape, fixture_input(shape));
    ASSERT_EQ(y.shape, c.at("out_shape").get<Shape>());
    const auto want = c.at("output").get<std::vector<double>>();
    const std::vector<float> got = y.to_f32();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 2e-6) << "element " << i;
    ++checked;
  }
  EXPECT_EQ(checked, 14);
}

}  // namespace
}  // namespace mntest
