// Parameter initialisation on the host (init.hpp): the explicit initialisers, init::linear's
// fan-in from a layout it knows, and the per-name streams of the layers' default initialisers.
#include "meganeura/init.hpp"

#include <cmath>
#include <random>

#include "meganeura/error.hpp"

namespace meganeura::init {

static Shape shape_of(Session& s, std::string_view name) { return s.parameter_info(name).shape; }

static std::vector<float> uniform_values(int64_t n, float bound, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-bound, bound);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng);
  return v;
}

static std::vector<float> normal_values(int64_t n, float std, uint64_t seed) {
  std::vector<float> v(static_cast<size_t>(n), 0.0f);
  if (std == 0) return v;  // normal_distribution needs a positive std
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist(0.0f, std);
  for (float& x : v) x = dist(rng);
  return v;
}

void uniform(Session& s, std::string_view name, float bound, uint64_t seed) {
  s.set_parameter(name, uniform_values(numel(shape_of(s, name)), bound, seed));
}

void normal(Session& s, std::string_view name, float std, uint64_t seed) {
  if (!(std >= 0))
    throw Error("init::normal: \"" + std::string(name) + "\": std " + std::to_string(std) + " is negative");
  s.set_parameter(name, normal_values(numel(shape_of(s, name)), std, seed));
}

void constant(Session& s, std::string_view name, float value) {
  s.set_parameter(name, std::vector<float>(static_cast<size_t>(numel(shape_of(s, name))), value));
}

static const char* layout_name(WeightLayout l) { return l == WeightLayout::in_out ? "[in, out]" : "[out, in]"; }
static int64_t out_dim(WeightLayout l, const Shape& w) { return l == WeightLayout::in_out ? w[1] : w[0]; }

// The layout a bias of length `out` implies for weight `w`: unknown when it fits neither axis.
static WeightLayout layout_from_bias(const Shape& w, int64_t out) {
  if (w[1] == out) return WeightLayout::in_out;  // a square weight: either, the fan-in is the same
  if (w[0] == out) return WeightLayout::out_in;
  return WeightLayout::unknown;
}

// The size of the weight's input axis: from the stated layout, the recorded one or the bias;
// a ShapeError where none of them tells and the weight is not square.
static int64_t fan_in(Session& s, std::string_view weight, std::string_view bias, WeightLayout stated) {
  const ParameterInfo w = s.parameter_info(weight);
  const std::string what = "init::linear: weight \"" + std::string(weight) + "\" " + shape_str(w.shape);
  if (w.shape.size() != 2) throw ShapeError(what + " is not a matrix ([in, out] or [out, in])");
  const WeightLayout recorded = w.init.layout;
  if (stated != WeightLayout::unknown && recorded != WeightLayout::unknown && stated != recorded)
    throw ShapeError(what + " is recorded as " + layout_name(recorded) + " (by nn::Linear or its Init), not " +
                     layout_name(stated));
  WeightLayout layout = stated != WeightLayout::unknown ? stated : recorded;
  if (!bias.empty()) {
    const Shape b = shape_of(s, bias);
    const std::string with_bias = what + " and bias \"" + std::string(bias) + "\" " + shape_str(b);
    if (b.size() != 1) throw ShapeError(with_bias + ": the bias is not a vector");
    if (layout == WeightLayout::unknown) layout = layout_from_bias(w.shape, b[0]);
    if (layout == WeightLayout::unknown)
      throw ShapeError(with_bias + ": the bias's length is neither of the weight's dims");
    if (out_dim(layout, w.shape) != b[0])
      throw ShapeError(with_bias + ": read as " + layout_name(layout) + ", the weight's output dim is " +
                       std::to_string(out_dim(layout, w.shape)));
  }
  if (layout == WeightLayout::unknown && w.shape[0] != w.shape[1])
    throw ShapeError(what +
                     ": which dim is the input (fan-in)? Pass WeightLayout::in_out (used as x·W) or "
                     "WeightLayout::out_in (x·Wᵀ, PyTorch's nn.Linear), or its bias, or build it with nn::Linear");
  return layout == WeightLayout::out_in ? w.shape[1] : w.shape[0];
}

void linear(Session& s, std::string_view weight, std::string_view bias, uint64_t seed, WeightLayout layout) {
  const int64_t in = fan_in(s, weight, bias, layout);
  const float bound = in > 0 ? 1.0f / std::sqrt(static_cast<float>(in)) : 0.0f;
  uniform(s, weight, bound, seed);
  if (!bias.empty()) uniform(s, bias, bound, seed ^ 0x9e3779b97f4a7c15ull);
}

static uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// One stream per (seed, name): FNV-1a of the name, mixed with the seed.
static uint64_t stream_of(std::string_view name, uint64_t seed) {
  uint64_t h = 14695981039346656037ull;
  for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return splitmix64(h ^ splitmix64(seed));
}

std::vector<float> draw(const Init& init, const Shape& shape, std::string_view name, uint64_t seed) {
  const int64_t n = numel(shape);
  switch (init.kind) {
    case Init::Kind::uniform: return uniform_values(n, init.value, stream_of(name, seed));
    case Init::Kind::normal: return normal_values(n, init.value, stream_of(name, seed));
    case Init::Kind::constant: return std::vector<float>(static_cast<size_t>(n), init.value);
    case Init::Kind::none: break;
  }
  throw Error("init::draw: parameter \"" + std::string(name) + "\" has no default initialiser");
}

void defaults(Session& s, uint64_t seed) {
  for (const std::string& name : s.parameter_names()) {
    const ParameterInfo p = s.parameter_info(name);
    if (p.init.kind != Init::Kind::none) s.set_parameter(name, draw(p.init, p.shape, name, seed));
  }
}

}  // namespace meganeura::init
