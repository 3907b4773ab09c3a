// PyTorch fixtures of whole models (tools/fixtures/make_resnet_fixtures.py, make_sd_unet_fixtures.py):
// the weights both sides compute from a hash, and the checks of values recorded exact (PyTorch in
// f64) and as PyTorch's f32 run has them.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fixtures/formula.hpp"
#include "meganeura/session.hpp"
#include "test_util.hpp"

namespace mntest {

using meganeura::numel;
using meganeura::Session;
using meganeura::Shape;

using meganeura::fixtures::formula_value;
using meganeura::fixtures::set_formula_weights;
using meganeura::fixtures::uniform;

// The "cases" of a fixture file (tests/data/<model>/torch.json); a failure naming it if unreadable.
inline std::vector<nlohmann::json> fixture_cases(const std::string& path) {
  std::ifstream file(path);
  EXPECT_TRUE(file) << path;
  if (!file) return {};
  return nlohmann::json::parse(file).at("cases").get<std::vector<nlohmann::json>>();
}

// Within `relative` of `scale` of the exact value, or within 4 times PyTorch's own f32 error
// where that is larger (an ill-conditioned value: train-mode batch norms over few values).
inline double tolerance(const nlohmann::json& pair, double relative, double scale) {
  return std::max(relative * scale, 4 * std::fabs(pair.at(0).get<double>() - pair.at(1).get<double>())) + 1e-9;
}

// A tensor against the fixture's summary: its sum, its largest magnitude and 8 sampled values.
inline void expect_summary(const std::vector<float>& got, const nlohmann::json& want, const std::string& what) {
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

// Values (logits, a prediction) within 1e-4 of the largest, or 4 times PyTorch's largest f32 error among them.
inline void expect_values(const std::vector<float>& got, const nlohmann::json& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 1, f32_error = 0;
  for (const auto& pair : want) {
    scale = std::max(scale, std::fabs(pair.at(0).get<double>()));
    f32_error = std::max(f32_error, std::fabs(pair.at(0).get<double>() - pair.at(1).get<double>()));
  }
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i].at(0).get<double>(), std::max(1e-4 * scale, 4 * f32_error)) << what << " element " << i;
}

}  // namespace mntest
