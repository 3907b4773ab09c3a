// group_norm and instance_norm (meganeura/ops.hpp): a layer_norm over each sample's group of
// channels (x viewed as [N, groups, rest]), then the per-channel affine broadcast over N and
// the spatial dimensions: autodiff and the lowering see layer_norm, reshape and products.
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

}  // namespace

Tensor group_norm(Tensor x, int64_t groups, Tensor weight, Tensor bias, float eps) {
  graph::graph_of("group_norm", {{"x", x}, graph::Arg::optional("weight", weight), graph::Arg::optional("bias", bias)});
  const Shape shape = x.shape();  // a copy: adding nodes may move the graph's storage
  const std::string what = "group_norm of " + shape_str(shape) + " in " + std::to_string(groups) + " groups";
  if (shape.size() < 2) throw ShapeError(what + ": the input is [N, C, *]");
  const int64_t channels = shape[1];
  if (groups < 1 || channels % groups != 0)
    throw ShapeError(what + ": the groups must divide the " + std::to_string(channels) + " channels");
  if (bias.valid() && !weight.valid()) throw Error(what + ": a bias without a weight; pass a weight of ones");
  for (const auto& [t, name] : {std::pair{weight, "weight"}, std::pair{bias, "bias"}})
    if (t.valid() && t.shape() != Shape{channels})
      throw ShapeError(what + ": " + name + " has shape " + shape_str(t.shape()) + ", one value a channel needs [" +
                       std::to_string(channels) + "]");
  Tensor y = reshape(layer_norm(reshape(x, {shape[0], groups, -1}), {}, {}, eps), shape);
  if (weight.valid()) y = y * per_channel(weight, shape.size());
  if (bias.valid()) y = y + per_channel(bias, shape.size());
  return y;
}

Tensor instance_norm(Tensor x, Tensor weight, Tensor bias, float eps) {
  graph::graph_of("instance_norm", {{"x", x}});
  if (x.shape().size() < 2) throw ShapeError("instance_norm of " + shape_str(x.shape()) + ": the input is [N, C, *]");
  return group_norm(x, x.shape()[1], weight, bias, eps);
}

}  // namespace meganeura
