#include "models/llama_primitives.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "meganeura/error.hpp"
#include "meganeura/ops.hpp"

namespace meganeura::models {

namespace {

// x * rsqrt(mean(x*x, -1, keepdim) + eps) * w
Tensor rms_norm_primitive(Tensor x, Tensor w, float eps) {
  Graph& g = x.graph();
  Tensor ms = mean(x * x, {-1}, /*keepdim=*/true);
  return (x * rsqrt(ms + g.scalar(eps))) * w;
}

// exp(s - max(s)) / sum(exp(s - max(s))) along the last axis
Tensor softmax_primitive(Tensor s) {
  Tensor e = exp(s - max(s, {-1}, /*keepdim=*/true));
  return e / sum(e, {-1}, /*keepdim=*/true);
}

// Rotary embedding, Hugging Face's rotate_half form: t*cos + cat(-t2, t1)*sin; t [..., seq, head_dim].
Tensor rope(Tensor t, Tensor cos_t, Tensor sin_t, int64_t head_dim) {
  Tensor t1 = slice(t, -1, 0, head_dim / 2);
  Tensor t2 = slice(t, -1, head_dim / 2, head_dim);
  Tensor rotated = concat({-t2, t1}, -1);
  return t * cos_t + rotated * sin_t;
}

}  // namespace

Tensor llama_from_primitives(Graph& g, const LlamaShape& s) {
  if (s.layers < 0 || s.heads % s.kv_heads != 0 || s.head_dim % 2 != 0)
    throw Error("llama_from_primitives: layers >= 0, heads a multiple of kv_heads, head_dim even");
  const int64_t b = s.batch, n = s.seq, hd = s.head_dim, kv = s.kv_heads, groups = s.heads / s.kv_heads;

  Tensor ids = g.input("input_ids", {b, n}, i32);
  Tensor labels = g.input("labels", {b, n}, i32);
  Tensor cos_t = g.input("rope_cos", {n, hd});
  Tensor sin_t = g.input("rope_sin", {n, hd});
  std::vector<float> mask_values(static_cast<size_t>(n * n));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) mask_values[static_cast<size_t>(i * n + j)] = j <= i ? 0.0f : -1e9f;
  Tensor mask = g.constant(mask_values, {n, n});
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));

  Tensor embed = g.parameter("model.embed_tokens.weight", {s.vocab, s.hidden});
  Tensor x;
  {
    auto scope = g.scope("model.embed_tokens");
    x = gather(embed, ids, 0);  // [b, n, hidden]
  }

  for (int l = 0; l < s.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l);
    Tensor h;
    {
      auto scope = g.scope(p + ".input_layernorm");
      h = rms_norm_primitive(x, g.parameter(p + ".input_layernorm.weight", {s.hidden}), s.eps);
    }
    {
      auto scope = g.scope(p + ".self_attn");
      const std::string a = p + ".self_attn.";
      Tensor wq = g.parameter(a + "q_proj.weight", {s.hidden, s.heads * hd});
      Tensor wk = g.parameter(a + "k_proj.weight", {s.hidden, kv * hd});
      Tensor wv = g.parameter(a + "v_proj.weight", {s.hidden, kv * hd});
      Tensor wo = g.parameter(a + "o_proj.weight", {s.heads * hd, s.hidden});
      // [b, n, H*hd] -> [b, H, n, hd]
      Tensor q = permute(reshape(matmul(h, wq), {b, n, s.heads, hd}), {0, 2, 1, 3});
      Tensor k = permute(reshape(matmul(h, wk), {b, n, kv, hd}), {0, 2, 1, 3});
      Tensor v = permute(reshape(matmul(h, wv), {b, n, kv, hd}), {0, 2, 1, 3});
      q = rope(q, cos_t, sin_t, hd);
      k = rope(k, cos_t, sin_t, hd);
      // Grouped-query attention: query head kv*groups + j reads key/value head kv.
      q = reshape(q, {b, kv, groups, n, hd});
      Tensor k5 = broadcast_to(reshape(k, {b, kv, 1, n, hd}), {b, kv, groups, n, hd});
      Tensor v5 = broadcast_to(reshape(v, {b, kv, 1, n, hd}), {b, kv, groups, n, hd});
      Tensor scores = matmul(q, k5, {.transpose_b = true}) * scale + mask;  // [b, kv, groups, n, n]
      Tensor o = matmul(softmax_primitive(scores), v5);                     // [b, kv, groups, n, hd]
      o = reshape(permute(reshape(o, {b, s.heads, n, hd}), {0, 2, 1, 3}), {b, n, s.heads * hd});
      x = x + matmul(o, wo);
    }
    {
      auto scope = g.scope(p + ".post_attention_layernorm");
      h = rms_norm_primitive(x, g.parameter(p + ".post_attention_layernorm.weight", {s.hidden}), s.eps);
    }
    {
      auto scope = g.scope(p + ".mlp");
      const std::string m = p + ".mlp.";
      Tensor gate = matmul(h, g.parameter(m + "gate_proj.weight", {s.hidden, s.ffn}));
      Tensor up = matmul(h, g.parameter(m + "up_proj.weight", {s.hidden, s.ffn}));
      Tensor act = (gate * sigmoid(gate)) * up;
      x = x + matmul(act, g.parameter(m + "down_proj.weight", {s.ffn, s.hidden}));
    }
  }

  Tensor loss;
  {
    auto scope = g.scope("model.norm");
    x = rms_norm_primitive(x, g.parameter("model.norm.weight", {s.hidden}), s.eps);
  }
  {
    auto scope = g.scope("lm_head");
    Tensor logits = matmul(x, embed, {.transpose_b = true});  // tied: [b, n, vocab]
    loss = cross_entropy(logits, labels);
  }
  g.output("loss", loss);
  return loss;
}

}  // namespace meganeura::models
