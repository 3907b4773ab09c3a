#include "meganeura/init.hpp"

#include <cmath>
#include <random>

#include "meganeura/error.hpp"

namespace meganeura::init {

static Shape shape_of(Session& s, std::string_view name) { return s.read_parameter(name).shape; }

void uniform(Session& s, std::string_view name, float bound, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-bound, bound);
  std::vector<float> v(static_cast<size_t>(numel(shape_of(s, name))));
  for (float& x : v) x = dist(rng);
  s.set_parameter(name, v);
}

void constant(Session& s, std::string_view name, float value) {
  s.set_parameter(name, std::vector<float>(static_cast<size_t>(numel(shape_of(s, name))), value));
}

void linear(Session& s, std::string_view weight, std::string_view bias, uint64_t seed) {
  Shape w = shape_of(s, weight);
  if (w.size() != 2) throw ShapeError("init::linear: \"" + std::string(weight) + "\" is " + shape_str(w) + ", not [in, out]");
  float bound = 1.0f / std::sqrt(static_cast<float>(w[0]));
  uniform(s, weight, bound, seed);
  if (!bias.empty()) uniform(s, bias, bound, seed ^ 0x9e3779b97f4a7c15ull);
}

}  // namespace meganeura::init
