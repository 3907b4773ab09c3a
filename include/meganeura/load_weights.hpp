// Loading a model's weights by name, whatever the model (Llama, ResNet, a graph of one's own).
#pragma once
#include "meganeura/graph.hpp"
#include "meganeura/io.hpp"
#include "meganeura/session.hpp"

namespace meganeura::models {

// Sets every parameter and buffer of g in the session from the checkpoint's tensor of the same
// name, converting f16/bf16 to the parameter's dtype; tensors the graph lacks (a state dict's
// num_batches_tracked) are ignored. A missing tensor or a shape that differs is an Error naming
// the checkpoint, the tensor and both shapes; a tied lm_head has no tensor of its own.
void load_weights(Session& session, const Graph& g, const Checkpoint& checkpoint);

}  // namespace meganeura::models
