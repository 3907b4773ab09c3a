// A Llama-style decoder (SmolLM2-135M's shape by default) built ONLY from primitive ops: RMSNorm,
// SiLU and softmax are spelled out (x·rsqrt(mean(x²)+eps)·w, g·sigmoid(g), exp(s−max s)/Σ…), so
// the optimizer has something to fuse. Parameter names follow Hugging Face's
// (model.layers.0.self_attn.q_proj.weight ...), but projection weights are [in, out] (matmul
// without a transpose), not Hugging Face's [out, in]. Used by `meganeura optimize`; it is built
// for its graph, not run (no weights are loaded).
#pragma once
#include <cstdint>

#include "meganeura/graph.hpp"

namespace meganeura::models {

struct LlamaShape {
  int layers = 30;
  int64_t hidden = 576;
  int64_t heads = 9;
  int64_t kv_heads = 3;
  int64_t head_dim = 64;
  int64_t ffn = 1536;
  int64_t vocab = 49152;
  int64_t seq = 128;
  int64_t batch = 1;
  float eps = 1e-5f;  // rms_norm_eps
};

// Adds the model to g and returns the loss (rank 0, also g's output "loss"). Inputs:
// input_ids [batch, seq] i32, labels [batch, seq] i32, rope_cos and rope_sin [seq, head_dim].
// The lm_head is tied to model.embed_tokens.weight.
Tensor llama_from_primitives(Graph& g, const LlamaShape& s = {});

}  // namespace meganeura::models
