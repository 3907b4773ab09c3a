// Rotary position embedding as transformers computes it (LlamaRotaryEmbedding, default rope type):
// inv_freq[i] = 1 / theta^(2i/d) in f32, angle = position * inv_freq in f32, emb = cat(angle,
// angle); cos and sin are then rounded to f32 (computed here in double, within an ulp of torch).
#include <cmath>
#include <vector>

#include "graph/op_args.hpp"
#include "meganeura/error.hpp"
#include "meganeura/nn.hpp"
#include "util/checked.hpp"

namespace meganeura::nn {

static constexpr int64_t kMaxTableElements = (int64_t{1} << 31) - 1;

Rotary::Rotary(Graph& g, const RotaryOptions& o) : options(o) {
  const int64_t d = o.head_dim, n = o.max_positions;
  if (d <= 0 || d % 2 != 0 || n <= 0)
    throw ShapeError("nn::Rotary: head_dim must be even and positive, max_positions positive (got " +
                     std::to_string(d) + ", " + std::to_string(n) + ")");
  // The tables are allocated here, from sizes that may come from a config file: their product is
  // checked, and bounded (2^31 values, 8 GiB each, is past any model's; positions are int32).
  const int64_t elements = util::checked_mul(n, d, "nn::Rotary: max_positions * head_dim");
  if (elements > kMaxTableElements)
    throw SizeError("nn::Rotary: tables of max_positions " + std::to_string(n) + " x head_dim " + std::to_string(d) +
                    " = " + std::to_string(elements) + " values exceed the limit of 2^31 - 1");
  std::vector<float> inv_freq(static_cast<size_t>(d / 2));
  for (int64_t i = 0; i < d / 2; ++i)
    inv_freq[static_cast<size_t>(i)] =
        1.0f / std::pow(static_cast<float>(o.theta), static_cast<float>(2 * i) / static_cast<float>(d));
  std::vector<float> cos_v(static_cast<size_t>(elements)), sin_v(static_cast<size_t>(elements));
  for (int64_t p = 0; p < n; ++p)
    for (int64_t i = 0; i < d; ++i) {
      const float angle = static_cast<float>(p) * inv_freq[static_cast<size_t>(i % (d / 2))];
      cos_v[static_cast<size_t>(p * d + i)] = static_cast<float>(std::cos(static_cast<double>(angle)));
      sin_v[static_cast<size_t>(p * d + i)] = static_cast<float>(std::sin(static_cast<double>(angle)));
    }
  cos_table = g.constant(cos_v, {n, d});
  sin_table = g.constant(sin_v, {n, d});
}

Tensor Rotary::operator()(Tensor x, Tensor positions, bool seq_major) const {
  if (!cos_table.valid()) throw Error("nn::Rotary used before it was constructed with a graph");
  if (&graph::graph_of("nn::Rotary", {{"x", x}, {"positions", positions}}) != &cos_table.graph())
    throw Error("nn::Rotary: called on tensors of another graph than its tables'");
  const int64_t d = options.head_dim;
  if (x.dim(-1) != d)
    throw ShapeError("nn::Rotary: the last dim of " + shape_str(x.shape()) + " is not head_dim " + std::to_string(d));
  if (seq_major && x.rank() < 3)
    throw ShapeError("nn::Rotary: seq-major x must be [..., S, H, head_dim], got " + shape_str(x.shape()));
  if (picked_.graph != &positions.graph() || picked_.positions != positions.id() || picked_.seq_major != seq_major) {
    Tensor cos_t = gather(cos_table, positions, 0), sin_t = gather(sin_table, positions, 0);  // [S, d]
    if (seq_major) {  // [S, 1, d]: the same angle for every head of a position
      const int64_t s = cos_t.dim(0);
      cos_t = reshape(cos_t, {s, 1, d});
      sin_t = reshape(sin_t, {s, 1, d});
    }
    picked_ = {&positions.graph(), positions.id(), seq_major, cos_t, sin_t};
  }
  return rotary(x, picked_.cos, picked_.sin);  // x*cos + cat(-x2, x1)*sin in one dispatch
}

}  // namespace meganeura::nn
