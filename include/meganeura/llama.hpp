// Llama-family decoders (Llama 2/3, SmolLM2, Mistral-style sliding window) built from a Hugging
// Face config.json, with Hugging Face's parameter names, so their safetensors load by name.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "meganeura/graph.hpp"
#include "meganeura/io.hpp"
#include "meganeura/load_weights.hpp"
#include "meganeura/nn.hpp"
#include "meganeura/session.hpp"

namespace meganeura {
class PersistentDecoder;  // runtime/persistent_decode.hpp
}

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
  // The same decoder over a KV cache: ids [B, S] at rotary positions [S] and cache position
  // `start` (i32 [1]); each layer appends its k/v rows to its cache (states [B, slots, Hkv*D])
  // at `start` and attends to slots [0, start + i]. Returns the hidden state [B, S, hidden].
  struct Cache {
    Tensor k, v;
  };
  Shape cache_shape(int64_t batch, int64_t slots) const;  // of each k or v state: [B, slots, Hkv*D]
  Tensor forward_cached(Tensor ids, Tensor positions, Tensor start, const std::vector<Cache>& caches) const;

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

// Text generation with a KV cache that stays on the GPU: ONE session holds the weights, the
// per-layer caches and two recorded programs — prefill (a chunk of prompt tokens) and decode
// (one token) — so both share the weights and the cache by construction. A prompt longer than
// a chunk runs as several chunks; the last is padded (its padding slots are overwritten by the
// tokens that follow before anything reads them).
struct GeneratorOptions {
  int64_t max_seq = 2048;      // tokens of prompt and output together
  int64_t prefill_chunk = 64;  // prompt tokens per prefill run
  SessionOptions session{};
  // Decode each token with one persistent dispatch where the device allows it (docs/concepts.md,
  // "Persistent decoding"; GPUs only unless MEGANEURA_PERSISTENT=1); false, or
  // MEGANEURA_PERSISTENT=0, keeps the recorded program.
  bool persistent = true;
};
class Generator {
 public:
  Generator(const LlamaConfig& config, const GeneratorOptions& options = {});
  ~Generator();
  void load(const Checkpoint& checkpoint);  // the model's weights (load_weights)
  Session& session() { return session_; }
  const Graph& graph() const { return *graph_; }
  // Starts a new sequence with `prompt` (at least one token); returns the logits [vocab] that
  // predict the token after it.
  std::vector<float> prefill(const std::vector<int32_t>& prompt);
  // Appends `token`; returns the logits of the next one.
  std::vector<float> decode(int32_t token);
  // decode() without reading the logits back: they stay on the device.
  void advance(int32_t token);
  int64_t position() const { return position_; }  // tokens in the cache
  // The persistent dispatch decodes (false: the decode program does, or it fell back after a
  // grid barrier's wait ran out). Its workgroups, 0 when it does not.
  bool persistent() const { return persistent_ != nullptr; }
  uint32_t persistent_grid() const;
  // The weights the persistent dispatch reads: "f16" (a copy, each row scaled by a power of two
  // into f16's range, at matmul precision high or medium: half the bytes a step), "f32" (as they
  // are: MEGANEURA_MATMUL_PRECISION=highest or MEGANEURA_DECODE_WEIGHTS=f32); "" when it does not decode.
  std::string persistent_weights() const;
  // With SessionOptions::profile: (label, GPU ns) of each dispatch of the last decoding step —
  // the persistent dispatch, or the decoding program's (session().profile(1)).
  std::vector<std::pair<std::string, double>> decode_profile() const;
  // Tests: the next persistent step's grid barrier waits in vain, as a grid that is not all
  // resident would: the step falls back to the decode program, and persistent() turns false.
  void arm_persistent_timeout_for_test();

 private:
  void start_persistent();
  LlamaConfig config_;
  GeneratorOptions options_;
  std::unique_ptr<Graph> graph_;
  int rope_cos_ = -1, rope_sin_ = -1;  // the rotary tables' graph nodes
  Session session_;
  std::unique_ptr<PersistentDecoder> persistent_;
  bool logits_persistent_ = false;  // the last decode's logits are the persistent decoder's
  int64_t position_ = 0;
};

// Picking the next token from logits: greedy (temperature 0), or sampled at a temperature from
// the top_k most likely (0: all) within the smallest set whose probability reaches top_p.
struct SamplingOptions {
  float temperature = 0.0f;
  int64_t top_k = 0;
  float top_p = 1.0f;
};
int32_t sample_token(const std::vector<float>& logits, const SamplingOptions& options, std::mt19937_64& rng);

// A whole model directory (a Hugging Face snapshot: config.json, tokenizer.json, safetensors)
// completing `prompt`: on_text receives the text as it is produced, never half a character.
// Generation stops after max_tokens or at an end-of-sequence token (config.json's eos_token_id,
// else the tokenizer's).
struct GenerateOptions {
  int64_t max_tokens = 64;
  SamplingOptions sampling{};
  uint64_t seed = 0;
  int64_t max_seq = 2048;  // capped at the prompt plus max_tokens
  int64_t prefill_chunk = 64;
};
struct GenerateStats {
  int64_t prompt_tokens = 0, generated_tokens = 0;
  double load_seconds = 0, prefill_seconds = 0, decode_seconds = 0;
  bool stopped_at_eos = false;
};
GenerateStats generate(const std::string& model_dir, const std::string& prompt, const GenerateOptions& options,
                       const std::function<void(std::string_view)>& on_text);

}  // namespace meganeura::models
