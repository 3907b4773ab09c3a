// config.json -> LlamaConfig, then the model a graph builds from it (host only: parameters are
// shapes, the rotary tables the only thing allocated; no device, no session). The parse promises
// sizes whose products fit 64 bits and rotary tables of at most 2^28 values: checked here. The
// graph is built with one layer (every layer is the same) and with tables of at most 2^16
// values, so that each input takes milliseconds — the limits themselves are the parse's.
#include <algorithm>
#include <string>

#include "input_file.hpp"
#include "meganeura/llama.hpp"

namespace mn = meganeura;

namespace {

constexpr int64_t kParseRotaryLimit = int64_t{1} << 28;  // models/llama_config.cpp's kMaxRotaryElements
constexpr int64_t kBuiltRotaryLimit = int64_t{1} << 16;

void check_parsed(const mn::models::LlamaConfig& c) {
  int64_t product = 0;
  if (c.head_dim <= 0 || c.max_position_embeddings <= 0 ||
      __builtin_mul_overflow(c.max_position_embeddings, c.head_dim, &product) || product > kParseRotaryLimit)
    mn::fuzz::fail("parse accepted rotary tables of " + std::to_string(c.max_position_embeddings) + " x " +
                   std::to_string(c.head_dim));
  const int64_t heads_width = c.num_attention_heads * c.head_dim;  // UBSan stops an overflow here
  const int64_t vocab_bytes = c.vocab_size * c.hidden_size * 4;
  const int64_t mlp_bytes = c.hidden_size * c.intermediate_size * 4;
  if (heads_width <= 0 || vocab_bytes <= 0 || mlp_bytes <= 0)
    mn::fuzz::fail("parse accepted a size that is not positive");
}

void build_graph(mn::models::LlamaConfig c) {
  c.num_hidden_layers = std::min<int64_t>(c.num_hidden_layers, 1);
  c.max_position_embeddings = std::min(c.max_position_embeddings, kBuiltRotaryLimit / c.head_dim);
  if (c.max_position_embeddings == 0) return;  // head_dim alone is past the built limit
  const int64_t seq = std::min<int64_t>(c.max_position_embeddings, 3);
  mn::fuzz::reads([&] { (void)mn::models::llama_graph(c, 2, seq, true); });
  mn::fuzz::reads([&] {
    mn::Graph g;
    const mn::models::Llama model(g, c);
    (void)model.cache_shape(2, c.max_position_embeddings);
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  mn::models::LlamaConfig config;
  if (!mn::fuzz::reads([&] { config = mn::models::LlamaConfig::parse(text); })) return 0;
  check_parsed(config);
  build_graph(config);
  return 0;
}
