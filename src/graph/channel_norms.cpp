// Norms of [N, C, *] by channel (meganeura/ops.hpp). group_norm and instance_norm: a layer_norm
// over each sample's group of channels (x viewed as [N, groups, rest]); batch_norm: each channel's
// mean and variance over N and the spatial dimensions (reductions), or the running ones given.
// Then the per-channel affine broadcast over N and the spatial dimensions: autodiff and the
// lowering see layer_norm, reductions, reshape and products.
#include <string>

#include "graph/op_args.hpp"
#include "meganeura/error.hpp"
#include "meganeura/ops.hpp"

namespace meganeura {

namespace {

// A per-channel vector [C] as [C, 1, ...] for an x of `rank`: broadcast over the dimensions after C.
Tensor per_channel(Tensor v, size_t rank) {
  Shape s(rank - 1, 1);
  s[0] = v.shape()[0];
  return reshape(v, s);
}

// weight and bias [C], each optional (bias needs weight), checked for `what`.
void check_affine(Tensor weight, Tensor bias, int64_t channels, const std::string& what) {
  if (bias.valid() && !weight.valid()) throw Error(what + ": a bias without a weight; pass a weight of ones");
  for (const auto& [t, name] : {std::pair{weight, "weight"}, std::pair{bias, "bias"}})
    if (t.valid() && t.shape() != Shape{channels})
      throw ShapeError(what + ": " + name + " has shape " + shape_str(t.shape()) + ", one value a channel needs [" +
                       std::to_string(channels) + "]");
}

// y * weight + bias, per channel of y [N, C, *].
Tensor affine(Tensor y, Tensor weight, Tensor bias, size_t rank) {
  if (weight.valid()) y = y * per_channel(weight, rank);
  if (bias.valid()) y = y + per_channel(bias, rank);
  return y;
}

void check_running(Tensor running_mean, Tensor running_var, int64_t channels, const std::string& what) {
  for (const auto& [t, name] : {std::pair{running_mean, "running_mean"}, std::pair{running_var, "running_var"}})
    if (t.shape() != Shape{channels})
      throw ShapeError(what + ": " + name + " has shape " + shape_str(t.shape()) + ", one value a channel needs [" +
                       std::to_string(channels) + "]");
}

}  // namespace

Tensor group_norm(Tensor x, int64_t groups, Tensor weight, Tensor bias, float eps) {
  graph::graph_of("group_norm", {{"x", x}, graph::Arg::optional("weight", weight), graph::Arg::optional("bias", bias)});
  const Shape shape = x.shape();  // a copy: adding nodes may move the graph's storage
  const std::string what = "group_norm of " + shape_str(shape) + " in " + std::to_string(groups) + " groups";
  if (shape.size() < 2) throw ShapeError(what + ": the input is [N, C, *]");
  const int64_t channels = shape[1];
  if (groups < 1 || channels % groups != 0)
    throw ShapeError(what + ": the groups must divide the " + std::to_string(channels) + " channels");
  check_affine(weight, bias, channels, what);
  return affine(reshape(layer_norm(reshape(x, {shape[0], groups, -1}), {}, {}, eps), shape), weight, bias,
                shape.size());
}

Tensor batch_norm(Tensor x, Tensor running_mean, Tensor running_var, Tensor weight, Tensor bias, bool training,
                  float momentum, float eps) {
  graph::graph_of("batch_norm", {{"x", x},
                                 graph::Arg::optional("running_mean", running_mean),
                                 graph::Arg::optional("running_var", running_var),
                                 graph::Arg::optional("weight", weight),
                                 graph::Arg::optional("bias", bias)});
  const Shape shape = x.shape();
  const std::string what = "batch_norm of " + shape_str(shape) + (training ? " (training)" : " (eval)");
  if (shape.size() < 2) throw ShapeError(what + ": the input is [N, C, *]");
  const int64_t channels = shape[1];
  check_affine(weight, bias, channels, what);
  if (x.dtype() != f32) throw DTypeError(what + ": the input is " + std::string(dtype_name(x.dtype())) + "; f32 only");
  if (training) {
    std::vector<int64_t> axes{0};
    for (int64_t d = 2; d < static_cast<int64_t>(shape.size()); ++d) axes.push_back(d);
    const int64_t count = numel(shape) / channels;
    if (count < 2) throw ShapeError(what + ": training needs more than one value a channel (as PyTorch)");
    if (running_mean.valid() != running_var.valid())
      throw Error(what + ": pass both running statistics to update them, or neither");
    if (!(momentum >= 0.0f && momentum <= 1.0f))
      throw Error(what + ": momentum " + std::to_string(momentum) + " is outside [0, 1]");
    const Tensor batch_mean = mean(x, axes, true);
    const Tensor centred = x - batch_mean;
    const Tensor var = mean(centred * centred, axes, true);  // biased, as PyTorch normalises
    if (running_mean.valid() && momentum > 0.0f) {
      check_running(running_mean, running_var, channels, what);
      const auto blend = [&](Tensor running, Tensor batch) {
        return assign(running, running * (1.0f - momentum) + reshape(batch, {channels}) * momentum);
      };
      blend(running_mean, batch_mean);
      blend(running_var, var * (static_cast<float>(count) / static_cast<float>(count - 1)));  // unbiased
    }
    return affine(centred * rsqrt(var + eps), weight, bias, shape.size());
  }
  if (!running_mean.valid() || !running_var.valid())
    throw Error(what + ": eval mode normalises by the running mean and variance; pass both");
  check_running(running_mean, running_var, channels, what);
  const Tensor centred = x - per_channel(running_mean, shape.size());
  return affine(centred * rsqrt(per_channel(running_var, shape.size()) + eps), weight, bias, shape.size());
}

Tensor instance_norm(Tensor x, Tensor weight, Tensor bias, float eps) {
  graph::graph_of("instance_norm", {{"x", x}});
  if (x.shape().size() < 2) throw ShapeError("instance_norm of " + shape_str(x.shape()) + ": the input is [N, C, *]");
  return group_norm(x, x.shape()[1], weight, bias, eps);
}

}  // namespace meganeura
