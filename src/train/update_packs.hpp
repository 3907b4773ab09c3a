// Which parameters one optimizer dispatch updates together. Their storage is packed into one
// tensor and their gradients into another laid out alike, element for element, so that the
// update is one elementwise pass over the pack (what PyTorch's foreach and fused optimizers do
// over lists of tensors): SmolLM2's 272 update dispatches become 17.
#pragma once
#include <cstdint>
#include <vector>

#include "lower/lowered.hpp"
#include "train/optimizer_calls.hpp"

namespace meganeura::train {

struct UpdatePack {
  std::vector<size_t> members;    // indices into the ParamGrad list
  std::vector<uint64_t> offset;   // each member's byte offset in the pack's tensors
  uint64_t bytes = 0;             // of each of the pack's tensors
  int params = -1, grads = -1;    // the packed tensors (lowered)
  float lr_scale = 1.0f;
};

struct UpdatePlan {
  std::vector<UpdatePack> packs;
  std::vector<size_t> alone;  // updated one dispatch each, where they are
};

// Packs every parameter it can into packs of at most max_bytes. A parameter joins when every
// parameter sharing its storage (a horizontally fused matmul's packed weights) is trained with
// the same lr scale as it, and its gradient is a tensor of its own of the parameter's size. Sets
// the alias_of of the parameters' and gradients' storage to the new packed tensors.
UpdatePlan pack_updates(const Graph& g, lower::Lowered& low, const std::vector<ParamGrad>& params,
                        const std::vector<float>& lr_scale, uint64_t max_bytes);

}  // namespace meganeura::train
