// The Llama decoder from nn layers, and loading its weights by name.
#include "meganeura/llama.hpp"

#include "meganeura/error.hpp"
#include "meganeura/ops.hpp"

namespace meganeura::models {

Llama::Llama(Graph& g, const LlamaConfig& c) : config(c) {
  embed_tokens = nn::Embedding(g, "model.embed_tokens", c.vocab_size, c.hidden_size);
  const nn::MultiHeadAttentionOptions attn{.hidden = c.hidden_size,
                                           .heads = c.num_attention_heads,
                                           .kv_heads = c.num_key_value_heads,
                                           .head_dim = c.head_dim,
                                           .bias = c.attention_bias,
                                           .causal = true,
                                           .window = c.sliding_window};
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l);
    auto eps = static_cast<float>(c.rms_norm_eps);
    layers.push_back({nn::RMSNorm(g, p + ".input_layernorm", c.hidden_size, eps),
                      nn::RMSNorm(g, p + ".post_attention_layernorm", c.hidden_size, eps),
                      nn::MultiHeadAttention(g, p + ".self_attn", attn),
                      nn::SwiGLU(g, p + ".mlp", c.hidden_size, c.intermediate_size, c.mlp_bias)});
  }
  norm = nn::RMSNorm(g, "model.norm", c.hidden_size, static_cast<float>(c.rms_norm_eps));
  if (!c.tie_word_embeddings) lm_head = nn::Linear(g, "lm_head", c.hidden_size, c.vocab_size, false);
  rope = nn::Rotary(g, {.head_dim = c.head_dim, .theta = c.rope_theta, .max_positions = c.max_position_embeddings});
}

Tensor Llama::head(Tensor hidden) const {
  Tensor x = norm(hidden);
  return lm_head.weight.valid() ? lm_head(x) : matmul(x, embed_tokens.weight, {.transpose_b = true});
}

Tensor Llama::operator()(Tensor ids, Tensor positions) const {
  Graph& g = ids.graph();
  Tensor x;
  {
    auto scope = g.scope("model.embed_tokens");
    x = embed_tokens(ids);
  }
  for (size_t l = 0; l < layers.size(); ++l) {
    const Layer& layer = layers[l];
    auto scope = g.scope("model.layers." + std::to_string(l));
    x = x + layer.self_attn(layer.input_layernorm(x), positions, &rope);
    x = x + layer.mlp(layer.post_attention_layernorm(x));
  }
  auto scope = g.scope("lm_head");
  return head(x);
}

Shape Llama::cache_shape(int64_t batch, int64_t slots) const {
  return {batch, slots, config.num_key_value_heads * config.head_dim};
}

Tensor Llama::forward_cached(Tensor ids, Tensor positions, Tensor start, const std::vector<Cache>& caches) const {
  Graph& g = ids.graph();
  if (caches.size() != layers.size()) throw Error("Llama::forward_cached: one cache per layer is needed");
  Tensor x;
  {
    auto scope = g.scope("model.embed_tokens");
    x = embed_tokens(ids);
  }
  for (size_t l = 0; l < layers.size(); ++l) {
    const Layer& layer = layers[l];
    const nn::MultiHeadAttention& attn = layer.self_attn;
    auto scope = g.scope("model.layers." + std::to_string(l));
    Tensor h = layer.input_layernorm(x);
    Tensor q = rope(attn.heads_of(attn.q_proj(h), attn.options.heads), positions, /*seq_major=*/true);
    Tensor k = rope(attn.heads_of(attn.k_proj(h), attn.options.kv_heads), positions, /*seq_major=*/true);
    // The new rows [B, S, Hkv*D] go into the cache's slots as they are; attention reads the
    // cache seq-major, [B, slots, Hkv, D].
    Tensor keys = cache_write(caches[l].k, attn.merge_heads(k), start);
    Tensor values = cache_write(caches[l].v, attn.v_proj(h), start);
    Tensor a = attention(q, attn.heads_of(keys, attn.options.kv_heads), attn.heads_of(values, attn.options.kv_heads),
                         start, {.causal = true, .window = attn.options.window, .seq_major = true});
    x = x + attn.o_proj(attn.merge_heads(a));
    x = x + layer.mlp(layer.post_attention_layernorm(x));
  }
  return x;
}

LlamaGraph llama_graph(const LlamaConfig& config, int64_t batch, int64_t seq, bool training) {
  LlamaGraph out;
  out.graph = std::make_unique<Graph>();
  Graph& g = *out.graph;
  Tensor ids = g.input("input_ids", {batch, seq}, i32);
  Tensor positions = g.input("positions", {seq}, i32);
  Llama model(g, config);
  out.logits = model(ids, positions);
  g.output("logits", out.logits);
  if (training) {
    Tensor labels = g.input("labels", {batch, seq}, i32);
    out.loss = cross_entropy(out.logits, labels);
    g.output("loss", out.loss);
  }
  return out;
}

}  // namespace meganeura::models
