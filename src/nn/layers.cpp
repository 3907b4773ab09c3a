// Linear, Embedding and the norms: parameters created once, ops added per call.
#include "meganeura/error.hpp"
#include "meganeura/nn.hpp"

namespace meganeura::nn {

Linear::Linear(Graph& g, const std::string& name, int64_t in, int64_t out, bool with_bias) {
  weight = g.parameter(name + ".weight", {out, in});
  if (with_bias) bias = g.parameter(name + ".bias", {out});
}

Tensor Linear::operator()(Tensor x) const {
  if (!weight.valid()) throw Error("nn::Linear used before it was constructed with a graph");
  const MatMulOptions transposed{.transpose_b = true};  // PyTorch's [out, in]
  return bias.valid() ? linear(x, weight, bias, transposed) : matmul(x, weight, transposed);
}

Embedding::Embedding(Graph& g, const std::string& name, int64_t count, int64_t dim)
    : weight(g.parameter(name + ".weight", {count, dim})) {}

Tensor Embedding::operator()(Tensor ids) const { return gather(weight, ids, 0); }

RMSNorm::RMSNorm(Graph& g, const std::string& name, int64_t dim, float eps_)
    : weight(g.parameter(name + ".weight", {dim})), eps(eps_) {}

Tensor RMSNorm::operator()(Tensor x) const { return rms_norm(x, weight, eps); }

LayerNorm::LayerNorm(Graph& g, const std::string& name, int64_t dim, float eps_, bool with_bias)
    : weight(g.parameter(name + ".weight", {dim})), eps(eps_) {
  if (with_bias) bias = g.parameter(name + ".bias", {dim});
}

Tensor LayerNorm::operator()(Tensor x) const { return layer_norm(x, weight, bias, eps); }

SwiGLU::SwiGLU(Graph& g, const std::string& name, int64_t hidden, int64_t intermediate, bool bias)
    : gate_proj(g, name + ".gate_proj", hidden, intermediate, bias),
      up_proj(g, name + ".up_proj", hidden, intermediate, bias),
      down_proj(g, name + ".down_proj", intermediate, hidden, bias) {}

Tensor SwiGLU::operator()(Tensor x) const { return down_proj(swiglu(gate_proj(x), up_proj(x))); }

}  // namespace meganeura::nn
