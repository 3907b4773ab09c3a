// The convolutional layers (nn.Conv*d, nn.ConvTranspose*d), the channel norms (nn.BatchNorm*d,
// nn.GroupNorm) and nn.Upsample: parameters and buffers created once with PyTorch's names,
// layouts and initialisers; ops added per call.
#include <cmath>

#include "meganeura/nn.hpp"
#include "nn/layer_checks.hpp"

namespace meganeura::nn {

namespace {

void check_groups(const char* kind, const std::string& name, int64_t in, int64_t out, int64_t groups) {
  if (groups < 1 || in % groups != 0 || out % groups != 0)
    throw ShapeError(std::string(kind) + " \"" + name + "\": " + std::to_string(in) + " input and " +
                     std::to_string(out) + " output channels in " + std::to_string(groups) + " groups");
}

// <name>.weight [a, b, *kernel] and, with a bias, <name>.bias [out]: both U(±1/sqrt(fan_in)) with
// the fan-in PyTorch computes from the weight, b · prod(kernel).
void kernel_parameters(Graph& g, const std::string& name, int64_t a, int64_t b, int64_t out,
                       const std::vector<int64_t>& kernel, bool with_bias, Tensor& weight, Tensor& bias) {
  Shape shape{a, b};
  int64_t fan_in = b;
  for (int64_t k : kernel) {
    shape.push_back(k);
    fan_in *= k;
  }
  const float bound = fan_in_bound(fan_in);
  weight = g.parameter(name + ".weight", shape, f32, Init::uniform(bound));
  if (with_bias) bias = g.parameter(name + ".bias", {out}, f32, Init::uniform(bound));
}

}  // namespace

Conv::Conv(Graph& g, const std::string& name, int64_t in, int64_t out, const std::vector<int64_t>& kernel,
           const ConvOptions& o, bool with_bias)
    : options(o) {
  check_groups("nn::Conv", name, in, out, o.groups);
  kernel_parameters(g, name, out, in / o.groups, out, kernel, with_bias, weight, bias);
}

Tensor Conv::operator()(Tensor x) const {
  check_call("nn::Conv", weight, ".weight", {{"x", x}});
  return conv(x, weight, bias, options);
}

ConvTranspose::ConvTranspose(Graph& g, const std::string& name, int64_t in, int64_t out,
                             const std::vector<int64_t>& kernel, const ConvTransposeOptions& o, bool with_bias)
    : options(o) {
  check_groups("nn::ConvTranspose", name, in, out, o.groups);
  kernel_parameters(g, name, in, out / o.groups, out, kernel, with_bias, weight, bias);
}

Tensor ConvTranspose::operator()(Tensor x) const {
  check_call("nn::ConvTranspose", weight, ".weight", {{"x", x}});
  return conv_transpose(x, weight, bias, options);
}

BatchNorm::BatchNorm(Graph& g, const std::string& name, int64_t features, const BatchNormOptions& o) : options(o) {
  if (o.affine) {
    weight = g.parameter(name + ".weight", {features}, f32, Init::constant(1.0f));
    bias = g.parameter(name + ".bias", {features}, f32, Init::constant(0.0f));
  }
  if (o.track_running_stats) {
    running_mean = g.buffer(name + ".running_mean", {features}, Init::constant(0.0f));
    running_var = g.buffer(name + ".running_var", {features}, Init::constant(1.0f));
  }
}

Tensor BatchNorm::operator()(Tensor x) const {
  const Tensor& any = weight.valid() ? weight : running_mean;
  const char* suffix = weight.valid() ? ".weight" : ".running_mean";
  if (any.valid()) check_call("nn::BatchNorm", any, suffix, {{"x", x}});
  const bool batch_statistics = training || !running_mean.valid();
  return batch_norm(x, running_mean, running_var, weight, bias, batch_statistics, options.momentum, options.eps);
}

GroupNorm::GroupNorm(Graph& g, const std::string& name, int64_t groups_, int64_t channels, float eps_, bool affine)
    : groups(groups_), eps(eps_) {
  if (groups < 1 || channels % groups != 0)
    throw ShapeError("nn::GroupNorm \"" + name + "\": " + std::to_string(channels) + " channels in " +
                     std::to_string(groups) + " groups");
  if (affine) {
    weight = g.parameter(name + ".weight", {channels}, f32, Init::constant(1.0f));
    bias = g.parameter(name + ".bias", {channels}, f32, Init::constant(0.0f));
  }
}

Tensor GroupNorm::operator()(Tensor x) const {
  if (weight.valid()) check_call("nn::GroupNorm", weight, ".weight", {{"x", x}});
  return group_norm(x, groups, weight, bias, eps);
}

Tensor Upsample::operator()(Tensor x) const {
  graph::graph_of("nn::Upsample", {{"x", x}});
  const Shape shape = x.shape();
  if (size.empty() == scale_factor.empty()) throw Error("nn::Upsample: give either an output size or a scale factor");
  if (!size.empty()) return upsample(x, size, mode, align_corners);
  const size_t spatial = shape.size() < 3 ? 0 : shape.size() - 2;
  if (spatial == 0 || (scale_factor.size() != 1 && scale_factor.size() != spatial))
    throw ShapeError("nn::Upsample of " + shape_str(shape) + ": " + std::to_string(scale_factor.size()) +
                     " scale factors for [N, C, *spatial]");
  Shape out;
  for (size_t d = 0; d < spatial; ++d) {
    const double scale = scale_factor[scale_factor.size() == 1 ? 0 : d];
    if (!(scale > 0)) throw Error("nn::Upsample: scale factor " + std::to_string(scale) + " is not positive");
    out.push_back(static_cast<int64_t>(std::floor(static_cast<double>(shape[2 + d]) * scale)));
  }
  return upsample(x, out, mode, align_corners);
}

}  // namespace meganeura::nn
