// What every layer checks when called: that it was constructed with a graph, and that its tensor
// arguments are valid tensors of the layer's graph. Errors name the layer by its parameters'
// prefix: nn::Linear "fc1".
#pragma once
#include <cmath>
#include <initializer_list>
#include <string>
#include <string_view>

#include "graph/op_args.hpp"
#include "meganeura/error.hpp"

namespace meganeura::nn {

// PyTorch's reset_parameters for Linear and the convolutions: kaiming_uniform(a = sqrt(5)) for
// the weight, which is U(±1/sqrt(fan_in)), and the same bound for the bias.
inline float fan_in_bound(int64_t fan_in) { return fan_in > 0 ? 1.0f / std::sqrt(static_cast<float>(fan_in)) : 0.0f; }

// The label of a layer whose `param` is named "<prefix><suffix>" (fc1 + .weight): nn::Linear "fc1".
inline std::string layer_label(std::string_view kind, const Tensor& param, std::string_view suffix) {
  std::string name = param.node().name;
  if (name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
    name.resize(name.size() - suffix.size());
  return std::string(kind) + " \"" + name + "\"";
}

// Checks a call of the layer owning `param` (see layer_label); returns the layer's label.
inline std::string check_call(std::string_view kind, const Tensor& param, std::string_view suffix,
                              std::initializer_list<graph::Arg> args) {
  if (!param.valid()) throw Error(std::string(kind) + " used before it was constructed with a graph");
  const std::string label = layer_label(kind, param, suffix);
  if (&graph::graph_of(label, args) != &param.graph())
    throw Error(label + ": called on tensors of another graph than the layer's parameters");
  return label;
}

}  // namespace meganeura::nn
