// Multi-head attention with grouped-query heads, on the fused attention op. Heads stay where the
// projections put them ([B, S, H, D], seq-major attention): no permute runs, forward or backward.
#include "meganeura/error.hpp"
#include "meganeura/nn.hpp"
#include "nn/layer_checks.hpp"
#include "util/checked.hpp"

namespace meganeura::nn {

MultiHeadAttention::MultiHeadAttention(Graph& g, const std::string& name, const MultiHeadAttentionOptions& o)
    : options(o) {
  if (options.head_dim == 0 && o.heads > 0) options.head_dim = o.hidden / o.heads;
  const int64_t h = options.heads, kv = options.kv_heads, d = options.head_dim;
  if (h <= 0 || kv <= 0 || h % kv != 0 || d <= 0)
    throw ShapeError("nn::MultiHeadAttention \"" + name + "\": heads (" + std::to_string(h) +
                     ") must be a positive multiple of kv_heads (" + std::to_string(kv) + ") and head_dim positive");
  const std::string label = "nn::MultiHeadAttention \"" + name + "\"";
  const int64_t hd = util::checked_mul(h, d, label + ": heads * head_dim");
  const int64_t kvd = util::checked_mul(kv, d, label + ": kv_heads * head_dim");
  q_proj = Linear(g, name + ".q_proj", o.hidden, hd, o.bias);
  k_proj = Linear(g, name + ".k_proj", o.hidden, kvd, o.bias);
  v_proj = Linear(g, name + ".v_proj", o.hidden, kvd, o.bias);
  o_proj = Linear(g, name + ".o_proj", hd, o.hidden, o.bias);
}

static constexpr const char* kLayer = "nn::MultiHeadAttention";
static constexpr const char* kSuffix = ".q_proj.weight";  // the layer's name is q_proj's prefix

Tensor MultiHeadAttention::heads_of(Tensor projected, int64_t heads) const {
  check_call(kLayer, q_proj.weight, kSuffix, {{"projected", projected}});
  const Shape s = projected.shape();  // [B, S, heads * head_dim]
  return reshape(projected, {s[0], s[1], heads, options.head_dim});
}

Tensor MultiHeadAttention::merge_heads(Tensor attended) const {
  check_call(kLayer, q_proj.weight, kSuffix, {{"attended", attended}});
  const Shape s = attended.shape();  // [B, S, H, D]
  return reshape(attended, {s[0], s[1], s[2] * s[3]});
}

Tensor MultiHeadAttention::operator()(Tensor x, Tensor positions, const Rotary* rope) const {
  const std::string label =
      check_call(kLayer, q_proj.weight, kSuffix,
                 {{"x", x}, rope ? graph::Arg("positions", positions) : graph::Arg::optional("positions", positions)});
  if (x.rank() != 3) throw ShapeError(label + ": x must be [batch, seq, hidden], got " + shape_str(x.shape()));
  Tensor q = heads_of(q_proj(x), options.heads), k = heads_of(k_proj(x), options.kv_heads);
  Tensor v = heads_of(v_proj(x), options.kv_heads);
  if (rope) {
    q = (*rope)(q, positions, /*seq_major=*/true);
    k = (*rope)(k, positions, /*seq_major=*/true);
  }
  Tensor a = attention(q, k, v, {.causal = options.causal, .window = options.window, .seq_major = true});
  return o_proj(merge_heads(a));
}

Tensor MultiHeadAttention::cross(Tensor x, Tensor memory) const {
  check_call(kLayer, q_proj.weight, kSuffix, {{"x", x}, {"memory", memory}});
  Tensor q = heads_of(q_proj(x), options.heads), k = heads_of(k_proj(memory), options.kv_heads);
  Tensor v = heads_of(v_proj(memory), options.kv_heads);
  return o_proj(merge_heads(attention(q, k, v, {.seq_major = true})));
}

}  // namespace meganeura::nn
