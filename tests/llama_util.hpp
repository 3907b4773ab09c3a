// Shared by the Llama tests: greedy decoding the way transformers' generate(use_cache=False)
// does it, the whole sequence again for every new token.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "meganeura/meganeura.hpp"

namespace mntest {

// Extends `prompt` to `total` tokens greedily with the model of `lg`, whose weights `set_weights`
// puts into the session (causal: the unfilled tail does not change earlier logits).
template <class SetWeights>
std::vector<int32_t> greedy_uncached(const meganeura::models::LlamaConfig& c, const std::vector<int32_t>& prompt,
                                     int64_t total, SetWeights&& set_weights) {
  using namespace meganeura;
  models::LlamaGraph lg = models::llama_graph(c, 1, total);
  Session s = build_inference_session(*lg.graph);
  set_weights(s, *lg.graph);
  std::vector<int32_t> positions(static_cast<size_t>(total));
  for (int64_t i = 0; i < total; ++i) positions[static_cast<size_t>(i)] = static_cast<int32_t>(i);
  s.set_input("positions", HostTensor::i32s({total}, positions));
  std::vector<int32_t> ids = prompt;
  ids.resize(static_cast<size_t>(total), 0);
  for (size_t t = prompt.size(); t < static_cast<size_t>(total); ++t) {
    s.set_input("input_ids", HostTensor::i32s({1, total}, ids));
    s.step();
    const std::vector<float> logits = s.read_output("logits").to_f32();
    const float* row = logits.data() + (t - 1) * static_cast<size_t>(c.vocab_size);
    ids[t] = static_cast<int32_t>(std::max_element(row, row + c.vocab_size) - row);
  }
  return ids;
}

}  // namespace mntest
