// A training step after its backward pass, as graph ops (op_list.hpp, "training ops"): the step's
// scalars from step counters on the device (learning-rate schedule, Adam's bias corrections,
// whether this micro-step applies), gradient accumulation into State sums, global-norm clipping,
// and each trainable parameter's optimizer update with its State moments. Lowering runs them like
// any op (fuse/update_packs.cpp packs the updates); nothing is left for the host to do per step.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "meganeura/train.hpp"

namespace meganeura::train {

struct UpdateGraph {
  int counters = -1;       // State u32 [4]: micro-steps, optimizer steps
  int settings = -1;       // Constant f32 [8]: what step_scalars computes from (step_settings)
  std::vector<int> roots;  // the nodes to keep: the step's scalars and every update
  struct Param {
    std::string name;
    int grad = -1;                                   // this step's gradient (node id)
    std::vector<std::pair<std::string, int>> state;  // ("m", State leaf), ("v", ...), ("grad_sum", ...)
  };
  std::vector<Param> params;  // as `params` was given
};

// Appends the ops to `g`. params and grads: node ids of the trainable parameters and their
// gradients, in the same order.
UpdateGraph append_update_graph(Graph& g, const std::vector<int>& params, const std::vector<int>& grads,
                                const TrainConfig& config);

// The settings tensor's values (graph/train_ops.hpp StepValue) for `config`. Throws Error where a
// schedule's step count is too large to hold exactly.
std::vector<float> step_settings(const TrainConfig& config);

}  // namespace meganeura::train
