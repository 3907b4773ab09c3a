// The ops users call to build graphs, PyTorch-named where PyTorch has a name. Negative axes
// count from the end. Every function checks shapes and dtypes at once and throws on misuse.
#pragma once
#include <array>
#include <vector>

#include "meganeura/graph.hpp"

namespace meganeura {

// elementwise unary
Tensor neg(Tensor x);
Tensor abs(Tensor x);
Tensor exp(Tensor x);
Tensor log(Tensor x);
Tensor sqrt(Tensor x);
Tensor rsqrt(Tensor x);
Tensor reciprocal(Tensor x);
Tensor relu(Tensor x);
Tensor gelu(Tensor x);       // erf form
Tensor gelu_tanh(Tensor x);  // tanh approximation
Tensor silu(Tensor x);
Tensor sigmoid(Tensor x);
Tensor tanh(Tensor x);
Tensor erf(Tensor x);
Tensor sin(Tensor x);
Tensor cos(Tensor x);
Tensor pow(Tensor x, float exponent);

// elementwise binary, NumPy broadcasting
Tensor add(Tensor a, Tensor b);
Tensor sub(Tensor a, Tensor b);
Tensor mul(Tensor a, Tensor b);
Tensor div(Tensor a, Tensor b);
Tensor maximum(Tensor a, Tensor b);
Tensor minimum(Tensor a, Tensor b);
Tensor swiglu(Tensor g,
              Tensor u);        // silu(g) * u (the gated MLP of Llama models); the optimizer fuses silu(g) * u into it
Tensor eq(Tensor a, Tensor b);  // comparisons give a u32 mask of 0 and 1
Tensor ne(Tensor a, Tensor b);
Tensor lt(Tensor a, Tensor b);
Tensor le(Tensor a, Tensor b);
Tensor gt(Tensor a, Tensor b);
Tensor ge(Tensor a, Tensor b);
Tensor where(Tensor cond, Tensor a, Tensor b);
// Rotary position embedding (Llama's half-split form): x*cos + cat(-x2, x1)*sin, x2/x1 the halves
// of x's last axis; cos and sin broadcast to x ([seq, head_dim] against [..., seq, head_dim]).
Tensor rotary(Tensor x, Tensor cos, Tensor sin);  // cond: u32/i32/f32, nonzero selects a
Tensor cast(Tensor x, DType to);

Tensor operator+(Tensor a, Tensor b);
Tensor operator-(Tensor a, Tensor b);
Tensor operator*(Tensor a, Tensor b);
Tensor operator/(Tensor a, Tensor b);
Tensor operator-(Tensor a);
Tensor operator+(Tensor a, float b);
Tensor operator-(Tensor a, float b);
Tensor operator*(Tensor a, float b);
Tensor operator/(Tensor a, float b);
Tensor operator+(float a, Tensor b);
Tensor operator-(float a, Tensor b);
Tensor operator*(float a, Tensor b);
Tensor operator/(float a, Tensor b);

// a: [..., M, K] (or [..., K, M] with transpose_a), b: [..., K, N] (or [..., N, K]); batch dims broadcast.
struct MatMulOptions {
  bool transpose_a = false, transpose_b = false;
};
Tensor matmul(Tensor a, Tensor b, MatMulOptions o = {});
// linear: act(matmul(a, b) + bias) + residual in one kernel (the matmul's store epilogue).
// bias: [N] (broadcast over rows and batch); residual: the output's shape or broadcastable to it.
// The optimizer fuses matmul + bias, an activation after it and a residual add into it.
enum LinearAct : int64_t { kLinearNone = 0, kLinearRelu = 1, kLinearGelu = 2, kLinearGeluTanh = 3, kLinearSilu = 4 };
Tensor linear(Tensor a, Tensor b, Tensor bias, MatMulOptions o = {}, LinearAct act = kLinearNone);
Tensor linear(Tensor a, Tensor b, Tensor bias, Tensor residual, MatMulOptions o = {}, LinearAct act = kLinearNone);
// matmul(a, b) + residual in one kernel (residual broadcasts to the output); the optimizer
// fuses `x + matmul(a, b)` into it.
Tensor matmul_add(Tensor a, Tensor b, Tensor residual, MatMulOptions o = {});

// Scaled dot-product attention: softmax(q·kᵀ·scale [+ causal mask])·v, computed without the
// [Sq, Sk] score matrix (online softmax). q: [..., Hq, Sq, D], k: [..., Hkv, Sk, D],
// v: [..., Hkv, Sk, Dv] with Hq a multiple of Hkv (grouped-query attention; axis -3 is the head
// axis when the rank is >= 3) and equal leading dims; D, Dv <= 256. Query i sits at position
// p + i among the keys, where p = Sk - Sq (the queries are the last keys' positions) or, with
// `position` (an i32 [1] tensor, e.g. a KV cache's fill level), its value. Causal: query i sees
// keys j <= p + i (with a position and no causal mask: keys j < p + Sq, the filled part).
// window > 0: only the last `window` of those (sliding-window attention, Mistral-style).
// seq_major: q, k, v and the output are [..., S, H, D] instead (rank >= 3): the layout a
// projection [B, S, H·D] reshapes to without a copy, so no permute runs before or after (what
// FlashAttention takes; nn::MultiHeadAttention uses it).
// The optimizer also finds this op in softmax(q·kᵀ·s [+ causal mask constant])·v.
struct AttentionOptions {
  bool causal = false;
  float scale = 0;     // 0: 1/sqrt(D)
  int64_t window = 0;  // 0: no sliding window
  bool seq_major = false;
};
inline constexpr int64_t kAttentionCausal = 1;
inline constexpr int64_t kMaxAttentionHeadDim = 256;
Tensor attention(Tensor q, Tensor k, Tensor v, AttentionOptions o = {});
Tensor attention(Tensor q, Tensor k, Tensor v, Tensor position, AttentionOptions o = {});
// state (a Graph::state, e.g. a KV cache [B, H, slots, D]) with rows [B, H, S, D] written at
// slots [position, position + S): in place, so that it persists. A write past the last slot is
// reported by the step (an index error naming the node).
Tensor cache_write(Tensor state, Tensor rows, Tensor position);
// target (a Graph::buffer or Graph::state) overwritten with value (same shape, f32), in place:
// PyTorch's target.copy_(value) under no_grad. Every step runs it, though nothing reads the
// result, after the rest of the step has read target's old value (Graph::effects); evaluate()
// and SessionOptions::programs do not. Not differentiated.
Tensor assign(Tensor target, Tensor value);

// reductions; an empty axes list reduces over every axis
Tensor sum(Tensor x, std::vector<int64_t> axes = {}, bool keepdim = false);
Tensor mean(Tensor x, std::vector<int64_t> axes = {}, bool keepdim = false);
Tensor max(Tensor x, std::vector<int64_t> axes = {}, bool keepdim = false);
Tensor argmax(Tensor x, int64_t axis, bool keepdim = false);  // i32; first index among ties
Tensor softmax(Tensor x, int64_t axis = -1);
Tensor log_softmax(Tensor x, int64_t axis = -1);

// normalisation over the last axis; weight/bias of shape [D] are optional (pass Tensor{})
Tensor rms_norm(Tensor x, Tensor weight = {}, float eps = 1e-6f);
Tensor layer_norm(Tensor x, Tensor weight = {}, Tensor bias = {}, float eps = 1e-5f);
// F.group_norm on x [N, C, *]: each sample's C / groups channels of a group normalised together
// (biased variance), then weight and bias [C] per channel (optional: bias needs weight). A
// layer_norm of x as [N, groups, rest]. instance_norm is groups = C (PyTorch's input-statistics
// form, nn.InstanceNorm's default).
Tensor group_norm(Tensor x, int64_t groups, Tensor weight = {}, Tensor bias = {}, float eps = 1e-5f);
Tensor instance_norm(Tensor x, Tensor weight = {}, Tensor bias = {}, float eps = 1e-5f);
// F.batch_norm on x [N, C, *] (PyTorch's argument order): training normalises by each channel's
// mean and biased variance over N and the spatial dimensions, and, where running_mean and
// running_var are given (Graph::buffer, as nn::BatchNorm makes them), updates them in place
// each step as PyTorch does: running = (1 - momentum) · running + momentum · batch, with the
// unbiased variance (momentum 0: left alone; PyTorch's momentum=None, a cumulative average, is
// not offered). Eval normalises by running_mean and running_var [C] (any tensors). Then weight
// and bias [C] per channel (optional: bias needs weight).
Tensor batch_norm(Tensor x, Tensor running_mean, Tensor running_var, Tensor weight = {}, Tensor bias = {},
                  bool training = false, float momentum = 0.1f, float eps = 1e-5f);

// data movement
Tensor reshape(Tensor x, Shape shape);  // one dim may be -1
Tensor permute(Tensor x, std::vector<int64_t> perm);
Tensor transpose(Tensor x, int64_t dim0 = -2, int64_t dim1 = -1);
Tensor slice(Tensor x, int64_t axis, int64_t start, int64_t end, int64_t step = 1);  // Python rules
Tensor concat(const std::vector<Tensor>& xs, int64_t axis);
std::vector<Tensor> split(Tensor x, const std::vector<int64_t>& sizes, int64_t axis);
Tensor broadcast_to(Tensor x, Shape shape);
// torch.nn.functional.pad: `pads` holds (left, right) pairs from the last dimension backwards,
// (left of the last, right of the last, left of the one before, ...), at most one pair a
// dimension. constant fills with `value` (f32 only; a negative pad crops); reflect mirrors about
// the edge without repeating it (pads below the dimension's size); replicate repeats the edge;
// circular wraps around (pads up to the size). Composed of concat/slice (constant) or one gather
// a padded dimension (the others), so gradients follow theirs.
enum class PadMode : uint8_t { constant, reflect, replicate, circular };
Tensor pad(Tensor x, const std::vector<int64_t>& pads, PadMode mode = PadMode::constant, float value = 0.0f);
// F.interpolate's nearest and (bi/tri)linear modes over x's last size.size() dimensions (x is
// [N, C, *spatial] as in PyTorch): nearest takes input floor(o * in / out); linear weighs the two
// nearest inputs, at (o + 0.5) * in / out - 0.5 (clamped at 0), or o * (in - 1) / (out - 1) with
// align_corners. Composed of gathers and products with constant weights, a dimension at a time.
enum class UpsampleMode : uint8_t { nearest, linear };
Tensor upsample(Tensor x, const Shape& size, UpsampleMode mode = UpsampleMode::nearest, bool align_corners = false);
// F.avg_pool2d over the last two dimensions of [N, C, H, W] (or [C, H, W]): kernel, stride
// (default: the kernel), zero padding, ceil_mode and count_include_pad as in PyTorch. And
// F.adaptive_avg_pool2d to an output of `size`. Both are separable: a product with a constant
// [out, in] averaging matrix along each of the two dimensions.
struct AvgPool2d {
  std::array<int64_t, 2> kernel;
  std::array<int64_t, 2> stride = {0, 0};  // 0: the kernel
  std::array<int64_t, 2> padding = {0, 0};
  bool ceil_mode = false;
  bool count_include_pad = true;
};
Tensor avg_pool2d(Tensor x, const AvgPool2d& o);
Tensor adaptive_avg_pool2d(Tensor x, std::array<int64_t, 2> size);
// F.conv1d / conv2d / conv3d: x [N, C, *spatial] (or [C, *spatial]), weight [C_out, C / groups,
// *kernel] (1 to 3 kernel dimensions: conv takes as many as the weight has), bias [C_out] or none.
// stride and dilation: one value for every spatial dimension or one each (empty: 1). padding:
// one value, one a spatial dimension (both sides), or (before, after) pairs a dimension in order
// (asymmetric: {top, bottom, left, right} for conv2d); `same` keeps the size at stride 1 (the odd
// padding after, as PyTorch). padding_mode as F.pad's (PyTorch's "zeros" is constant). groups
// divide both channel counts (depthwise: groups = C). One gather of every kernel tap at every
// output position (zero padding in its index map: a tap in the padding reads 0; other modes pad
// the input first), and one batched product with the weight: gradients of x, the weight and the
// bias follow those ops'.
struct ConvOptions {
  std::vector<int64_t> stride = {};
  std::vector<int64_t> padding = {};
  bool same = false;
  std::vector<int64_t> dilation = {};
  int64_t groups = 1;
  PadMode padding_mode = PadMode::constant;
};
Tensor conv(Tensor x, Tensor weight, Tensor bias = {}, const ConvOptions& o = {});
Tensor conv1d(Tensor x, Tensor weight, Tensor bias = {}, const ConvOptions& o = {});  // weight of rank 3
Tensor conv2d(Tensor x, Tensor weight, Tensor bias = {}, const ConvOptions& o = {});  // rank 4
Tensor conv3d(Tensor x, Tensor weight, Tensor bias = {}, const ConvOptions& o = {});  // rank 5
// F.conv_transpose1d / 2d (the gradient of a conv with respect to its input): weight [C,
// C_out / groups, *kernel]; the output is (in - 1) * stride - 2 * padding + dilation * (k - 1) +
// output_padding + 1 long, output_padding smaller than the stride or the dilation. The product of
// the weight's transpose with x, then one scatter_add of every tap into the output (a tap in the
// cropped padding adds nothing).
struct ConvTransposeOptions {
  std::vector<int64_t> stride = {};
  std::vector<int64_t> padding = {};  // symmetric: one value, or one a spatial dimension
  std::vector<int64_t> output_padding = {};
  std::vector<int64_t> dilation = {};
  int64_t groups = 1;
};
Tensor conv_transpose(Tensor x, Tensor weight, Tensor bias = {}, const ConvTransposeOptions& o = {});
Tensor conv_transpose1d(Tensor x, Tensor weight, Tensor bias = {}, const ConvTransposeOptions& o = {});
Tensor conv_transpose2d(Tensor x, Tensor weight, Tensor bias = {}, const ConvTransposeOptions& o = {});
// F.max_pool2d over the last two dimensions of [N, C, H, W] (or [C, H, W]): kernel, stride (0:
// the kernel), padding (at most half the kernel's reach, never chosen), dilation and ceil_mode
// as in PyTorch. The gradient goes to each window's first largest element in row-major order
// (PyTorch's choice among ties).
struct MaxPool2d {
  std::array<int64_t, 2> kernel;
  std::array<int64_t, 2> stride = {0, 0};
  std::array<int64_t, 2> padding = {0, 0};
  std::array<int64_t, 2> dilation = {1, 1};
  bool ceil_mode = false;
};
Tensor max_pool2d(Tensor x, const MaxPool2d& o);
// torch.flatten: dimensions start_dim..end_dim (inclusive, negative from the end) as one.
Tensor flatten(Tensor x, int64_t start_dim = 0, int64_t end_dim = -1);
// out = x.shape[:axis] + indices.shape + x.shape[axis+1:]; indices i32/u32, negative wrap once
Tensor gather(Tensor x, Tensor indices, int64_t axis = 0);
Tensor embedding(Tensor table, Tensor ids);           // gather(table, ids, 0)
Tensor one_hot(Tensor indices, int64_t num_classes);  // f32 [..., num_classes]
// The inverse of gather: base + updates added at indices along axis.
Tensor scatter_add(Tensor base, Tensor indices, Tensor updates, int64_t axis = 0);

// losses (mean reduction, rank-0 result)
// logits [..., C], labels [...] i32; rows whose label is ignore_index do not count
Tensor cross_entropy(Tensor logits, Tensor labels, int64_t ignore_index = -100);
Tensor mse_loss(Tensor prediction, Tensor target);
Tensor binary_cross_entropy(Tensor probability, Tensor target);  // log clamped at -100 like PyTorch
Tensor binary_cross_entropy_with_logits(Tensor logits, Tensor target);

}  // namespace meganeura
