// Layers (PyTorch's torch.nn, Hugging Face's names): each creates its parameters in the graph
// under `name` when constructed ("<name>.weight", "<name>.bias") and adds its ops when called.
// Weights use PyTorch's layout, so Hugging Face checkpoints load by name with no transposes:
// Linear's weight is [out, in] and the matmul reads it transposed.
// Each parameter carries PyTorch's default initialiser (Graph::parameter's Init): Linear
// U(±1/sqrt(in)) for weight and bias, Embedding N(0, 1), norms weight 1 and bias 0. A session
// draws it on first use unless the parameter was set or loaded (init::defaults redraws them all
// from a seed). A new layer passes an Init with every parameter it creates.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "meganeura/graph.hpp"
#include "meganeura/ops.hpp"

namespace meganeura::nn {

class Linear {
 public:
  Linear() = default;
  Linear(Graph& g, const std::string& name, int64_t in, int64_t out, bool bias = true);
  Tensor operator()(Tensor x) const;  // x [..., in] -> [..., out]: x·Wᵀ + b
  Tensor weight, bias;                // [out, in] (WeightLayout::out_in), [out] (invalid without a bias)
};

class Embedding {
 public:
  Embedding() = default;
  Embedding(Graph& g, const std::string& name, int64_t count, int64_t dim);
  Tensor operator()(Tensor ids) const;  // ids (i32) [...] -> [..., dim]
  Tensor weight;                        // [count, dim]
};

class RMSNorm {
 public:
  RMSNorm() = default;
  RMSNorm(Graph& g, const std::string& name, int64_t dim, float eps = 1e-6f);
  Tensor operator()(Tensor x) const;
  Tensor weight;
  float eps = 1e-6f;
};

class LayerNorm {
 public:
  LayerNorm() = default;
  LayerNorm(Graph& g, const std::string& name, int64_t dim, float eps = 1e-5f, bool bias = true);
  Tensor operator()(Tensor x) const;
  Tensor weight, bias;
  float eps = 1e-5f;
};

// nn.Conv1d / Conv2d / Conv3d (as many as `kernel` has sizes): weight [out, in / groups, *kernel]
// and bias [out], both U(±1/sqrt(in / groups · prod(kernel))) as PyTorch initialises them; the
// stride, padding, dilation, groups and padding mode in `options` (ConvOptions, ops.hpp).
class Conv {
 public:
  Conv() = default;
  Conv(Graph& g, const std::string& name, int64_t in, int64_t out, const std::vector<int64_t>& kernel,
       const ConvOptions& options = {}, bool bias = true);
  Tensor operator()(Tensor x) const;  // x [N, in, *spatial] or [in, *spatial]
  Tensor weight, bias;                // bias invalid without one
  ConvOptions options;
};

// nn.ConvTranspose1d / 2d: weight [in, out / groups, *kernel] and bias [out], both
// U(±1/sqrt(out / groups · prod(kernel))) as PyTorch initialises them (its fan-in is the weight's
// second dimension times the kernel).
class ConvTranspose {
 public:
  ConvTranspose() = default;
  ConvTranspose(Graph& g, const std::string& name, int64_t in, int64_t out, const std::vector<int64_t>& kernel,
                const ConvTransposeOptions& options = {}, bool bias = true);
  Tensor operator()(Tensor x) const;  // x [N, in, *spatial] or [in, *spatial]
  Tensor weight, bias;
  ConvTransposeOptions options;
};

// nn.BatchNorm1d / 2d / 3d: weight (1) and bias (0) [features] when affine; running_mean (0) and
// running_var (1) as Graph::buffers when tracking running statistics (PyTorch's
// num_batches_tracked is not kept: a state dict's copy is ignored on load). `training` is
// PyTorch's module.train() / .eval() for the graph the next call builds: batch statistics (the
// running ones updated each step with the momentum), or the running ones. Without running
// statistics it always normalises by the batch's, as PyTorch does.
struct BatchNormOptions {
  float eps = 1e-5f;
  float momentum = 0.1f;
  bool affine = true;
  bool track_running_stats = true;
};
class BatchNorm {
 public:
  BatchNorm() = default;
  BatchNorm(Graph& g, const std::string& name, int64_t features, const BatchNormOptions& options = {});
  Tensor operator()(Tensor x) const;               // x [N, features, *]
  Tensor weight, bias, running_mean, running_var;  // each invalid when not kept
  BatchNormOptions options;
  bool training = true;
};

// nn.GroupNorm: weight (1) and bias (0) [channels] when affine.
class GroupNorm {
 public:
  GroupNorm() = default;
  GroupNorm(Graph& g, const std::string& name, int64_t groups, int64_t channels, float eps = 1e-5f, bool affine = true);
  Tensor operator()(Tensor x) const;  // x [N, channels, *]
  Tensor weight, bias;
  int64_t groups = 1;
  float eps = 1e-5f;
};

// The parameter-free layers, for models written as PyTorch writes them: each holds its options
// (ops.hpp) and applies its function.
struct MaxPool2d {
  meganeura::MaxPool2d options;
  Tensor operator()(Tensor x) const { return max_pool2d(x, options); }
};
struct AvgPool2d {
  meganeura::AvgPool2d options;
  Tensor operator()(Tensor x) const { return avg_pool2d(x, options); }
};
struct AdaptiveAvgPool2d {
  std::array<int64_t, 2> size = {1, 1};
  Tensor operator()(Tensor x) const { return adaptive_avg_pool2d(x, size); }
};
// nn.Upsample by an output size, or by a scale factor a spatial dimension (one for all, or one
// each): the size is floor(in · scale), and the sampling follows the sizes (PyTorch's
// recompute_scale_factor=True; the same as its default for integer factors).
struct Upsample {
  Shape size = {};
  std::vector<double> scale_factor = {};
  UpsampleMode mode = UpsampleMode::nearest;
  bool align_corners = false;
  Tensor operator()(Tensor x) const;
};

// Rotary position embedding, Hugging Face's half-split form (rotate_half): x·cos + rot(x)·sin,
// rot(x) = cat(-x[d/2:], x[:d/2]), with inv_freq = theta^(-2i/d) computed in f32 as
// transformers does. The cos/sin tables [max_positions, head_dim] are constants; `positions`
// (i32, [S]) picks their rows, so a KV-cache step passes its offset positions.
struct RotaryOptions {
  int64_t head_dim = 64;
  double theta = 10000.0;
  int64_t max_positions = 2048;
};
class Rotary {
 public:
  Rotary() = default;
  Rotary(Graph& g, const RotaryOptions& o);
  // x [..., S, head_dim] or, seq_major, [..., S, H, head_dim] (every head of a position turns alike).
  Tensor operator()(Tensor x, Tensor positions, bool seq_major = false) const;
  Tensor cos_table, sin_table;
  RotaryOptions options;

 private:
  // The rows of the tables last picked: every layer's q and k at the same positions share one
  // gather, so their rotaries (and their gradients) pair up in one dispatch each.
  struct Picked {
    const Graph* graph = nullptr;
    int positions = -1;
    bool seq_major = false;
    Tensor cos, sin;
  };
  mutable Picked picked_;
};

// Multi-head attention with grouped-query heads (kv_heads divides heads): q/k/v/o projections
// named <name>.q_proj ... <name>.o_proj, rotary embedding on q and k, the fused attention op.
struct MultiHeadAttentionOptions {
  int64_t hidden = 0, heads = 0, kv_heads = 0, head_dim = 0;  // head_dim 0: hidden / heads
  bool bias = false;  // biases on q/k/v/o (Qwen2-style: set o_bias separately if needed)
  bool causal = true;
  int64_t window = 0;  // sliding window (0: none)
};
class MultiHeadAttention {
 public:
  MultiHeadAttention() = default;
  MultiHeadAttention(Graph& g, const std::string& name, const MultiHeadAttentionOptions& o);
  // Self-attention over x [B, S, hidden]; rope applied at `positions` (i32 [S]) when given.
  Tensor operator()(Tensor x, Tensor positions = {}, const Rotary* rope = nullptr) const;
  // Cross-attention: queries from x [B, S, hidden], keys and values from memory [B, T, hidden]
  // (no mask, no rope).
  Tensor cross(Tensor x, Tensor memory) const;
  // The pieces, for callers that keep k/v elsewhere (a KV cache). Attention runs seq-major
  // (AttentionOptions::seq_major), so both are reshapes, never copies:
  // [B, S, H*D] -> [B, S, H, D] and back.
  Tensor heads_of(Tensor projected, int64_t heads) const;
  Tensor merge_heads(Tensor attended) const;
  Linear q_proj, k_proj, v_proj, o_proj;
  MultiHeadAttentionOptions options;
};

// The Llama MLP: down(silu(gate(x)) * up(x)).
class SwiGLU {
 public:
  SwiGLU() = default;
  SwiGLU(Graph& g, const std::string& name, int64_t hidden, int64_t intermediate, bool bias = false);
  Tensor operator()(Tensor x) const;
  Linear gate_proj, up_proj, down_proj;
};

}  // namespace meganeura::nn
