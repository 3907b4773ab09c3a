// Linear, Embedding and the norms: parameters created once, each with PyTorch's default
// initialiser recorded (drawn by the session unless set or loaded); ops added per call.
#include "meganeura/nn.hpp"
#include "nn/layer_checks.hpp"

namespace meganeura::nn {

Linear::Linear(Graph& g, const std::string& name, int64_t in, int64_t out, bool with_bias) {
  const float bound = fan_in_bound(in);
  weight = g.parameter(name + ".weight", {out, in}, f32, Init::uniform(bound, WeightLayout::out_in));
  if (with_bias) bias = g.parameter(name + ".bias", {out}, f32, Init::uniform(bound));
}

Tensor Linear::operator()(Tensor x) const {
  check_call("nn::Linear", weight, ".weight", {{"x", x}});
  const MatMulOptions transposed{.transpose_b = true};  // PyTorch's [out, in]
  return bias.valid() ? linear(x, weight, bias, transposed) : matmul(x, weight, transposed);
}

// nn.Embedding: N(0, 1).
Embedding::Embedding(Graph& g, const std::string& name, int64_t count, int64_t dim)
    : weight(g.parameter(name + ".weight", {count, dim}, f32, Init::normal(1.0f))) {}

Tensor Embedding::operator()(Tensor ids) const {
  check_call("nn::Embedding", weight, ".weight", {{"ids", ids}});
  return embedding(weight, ids);
}

// The norms: weight 1, bias 0.
RMSNorm::RMSNorm(Graph& g, const std::string& name, int64_t dim, float eps_)
    : weight(g.parameter(name + ".weight", {dim}, f32, Init::constant(1.0f))), eps(eps_) {}

Tensor RMSNorm::operator()(Tensor x) const {
  check_call("nn::RMSNorm", weight, ".weight", {{"x", x}});
  return rms_norm(x, weight, eps);
}

LayerNorm::LayerNorm(Graph& g, const std::string& name, int64_t dim, float eps_, bool with_bias)
    : weight(g.parameter(name + ".weight", {dim}, f32, Init::constant(1.0f))), eps(eps_) {
  if (with_bias) bias = g.parameter(name + ".bias", {dim}, f32, Init::constant(0.0f));
}

Tensor LayerNorm::operator()(Tensor x) const {
  check_call("nn::LayerNorm", weight, ".weight", {{"x", x}});
  return layer_norm(x, weight, bias, eps);
}

SwiGLU::SwiGLU(Graph& g, const std::string& name, int64_t hidden, int64_t intermediate, bool bias)
    : gate_proj(g, name + ".gate_proj", hidden, intermediate, bias),
      up_proj(g, name + ".up_proj", hidden, intermediate, bias),
      down_proj(g, name + ".down_proj", intermediate, hidden, bias) {}

Tensor SwiGLU::operator()(Tensor x) const {
  check_call("nn::SwiGLU", gate_proj.weight, ".gate_proj.weight", {{"x", x}});
  return down_proj(swiglu(gate_proj(x), up_proj(x)));
}

}  // namespace meganeura::nn
