// The graph a training session runs: the user's forward graph, fused by the optimizer, then
// differentiated (so the fused ops' own backward rules apply), then optimized again as a whole.
#pragma once
#include <memory>
#include <vector>

#include "meganeura/train.hpp"
#include "optimize/optimize.hpp"

namespace meganeura::train {

inline constexpr const char* kTrainingLossOutput = "meganeura.loss";

struct TrainingGraph {
  std::unique_ptr<Graph> graph;             // its last output is the loss (kTrainingLossOutput)
  std::vector<int> params, grads;           // trainable parameters and their gradients, node ids
  int forward_end = 0;                      // nodes below this id are the forward pass
  bool optimized = false;                   // it went through the optimizer (MEGANEURA_OPTIMIZE allowing)
  optimize::Report forward_report, report;  // the two optimizer runs (empty when disabled)
};

// Checks the loss and the config's parameter names; throws naming what is wrong.
// `limits` bound each of the two optimizer runs.
TrainingGraph build_training_graph(const Graph& g, Tensor loss, const TrainConfig& config,
                                   const optimize::Limits& limits = {});

}  // namespace meganeura::train
