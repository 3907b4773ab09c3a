#include <cmath>
#include <numbers>

#include "meganeura/train.hpp"

namespace meganeura {

float schedule_factor(const Schedule& s, int64_t t) {
  if (const auto* step = std::get_if<StepLR>(&s))
    return std::pow(step->gamma, static_cast<float>(t / std::max<int64_t>(step->step_size, 1)));
  if (const auto* cos = std::get_if<Cosine>(&s)) {
    if (t < cos->warmup_steps) return static_cast<float>(t + 1) / static_cast<float>(cos->warmup_steps);
    if (cos->total_steps <= cos->warmup_steps) return 1.0f;
    double progress = std::min(
        1.0, static_cast<double>(t - cos->warmup_steps) / static_cast<double>(cos->total_steps - cos->warmup_steps));
    return static_cast<float>(cos->min_ratio +
                              (1.0 - cos->min_ratio) * 0.5 * (1.0 + std::cos(std::numbers::pi * progress)));
  }
  return 1.0f;  // Constant
}

}  // namespace meganeura
