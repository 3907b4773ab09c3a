// Llama-family decoders (Llama 2/3, SmolLM2, Mistral-style sliding window) built from a Hugging
// Face config.json, with Hugging Face's parameter names, so their safetensors load by name.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "meganeura/graph.hpp"
#include "meganeura/io.hpp"
#include "meganeura/nn.hpp"
#include "meganeura/session.hpp"

namespace meganeura::models {

struct LlamaConfig {
  std::string model_type = "llama";
  int64_t vocab_size = 0, hidden_size = 0, intermediate_size = 0, num_hidden_layers = 0;
  int64_t num_attention_heads = 0, num_key_value_heads = 0, head_dim = 0;  // head_dim 0: hidden / heads
  int64_t max_position_embeddings = 2048;
  double rms_norm_eps = 1e-6, rope_theta = 10000.0;
  bool tie_word_embeddings = false, attention_bias = false, mlp_bias = false;
  int64_t sliding_window = 0;  // 0: none
  int64_t bos_token_id = -1;
  std::vector<int64_t> eos_token_ids;

  // Parses a Hugging Face config.json; an unsupported field value (a rope_scaling type, a
  // hidden_act other than silu) or a missing field is an Error naming the file and the field.
  static LlamaConfig from_file(const std::string& path);
  static LlamaConfig parse(const std::string& json_text, const std::string& source = "config.json");
};

// The decoder's layers in a graph: parameters named as transformers names them
// (model.embed_tokens.weight, model.layers.N.self_attn.q_proj.weight, ..., lm_head.weight).
class Llama {
 public:
  struct Layer {
    nn::RMSNorm input_layernorm, post_attention_layernorm;
    nn::MultiHeadAttention self_attn;
    nn::SwiGLU mlp;
  };
  Llama(Graph& g, const LlamaConfig& config);
  // logits [B, S, vocab] of ids [B, S] (i32), rotary positions [S] (i32).
  Tensor operator()(Tensor ids, Tensor positions) const;
  Tensor head(Tensor hidden) const;  // final norm and lm_head (tied: embed_tokens transposed)

  LlamaConfig config;
  nn::Embedding embed_tokens;
  std::vector<Layer> layers;
  nn::RMSNorm norm;
  nn::Linear lm_head;  // invalid when tied
  nn::Rotary rope;
};

// A whole graph: inputs "input_ids" [batch, seq] i32 and "positions" [seq] i32; output "logits"
// [batch, seq, vocab]; with training, input "labels" [batch, seq] i32 — the token each position
// predicts (Hugging Face's labels shifted left by one; -100 is ignored) — and output "loss", the
// mean cross-entropy over the whole vocabulary.
struct LlamaGraph {
  std::unique_ptr<Graph> graph;
  Tensor logits, loss;
};
LlamaGraph llama_graph(const LlamaConfig& config, int64_t batch, int64_t seq, bool training = false);

// Sets every parameter of g in the session from the checkpoint, converting f16/bf16 to the
// parameter's dtype. A missing tensor or a shape that differs is an Error naming the
// checkpoint, the tensor and both shapes; a tied lm_head has no tensor of its own.
void load_weights(Session& session, const Graph& g, const Checkpoint& checkpoint);

}  // namespace meganeura::models
