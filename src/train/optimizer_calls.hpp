// The training stage of lowering: after forward and backward are lowered, append the calls
// that accumulate gradients, clip them by global norm and apply the optimizer, in place.
#pragma once
#include "lower/lowered.hpp"
#include "runtime/session_impl.hpp"

namespace meganeura::train {

struct ParamGrad {
  int param;  // graph node (and lowered tensor) of the parameter
  int grad;   // graph node of its gradient
};

// The size of an update pack: each pack's update is recorded as soon as its gradients are ready
// (plan/schedule.hpp), beside the rest of the backward, instead of one pass over every parameter
// at the end of the step (an H100: 0.57 ms for SmolLM2-135M's 538 MB). Small enough that an
// update takes no longer than the backward dispatch it runs beside. MEGANEURA_UPDATE_PACK_MIB
// sets it (MiB; 0: one pack as large as the device's largest buffer).
uint64_t update_pack_bytes(uint64_t largest_buffer);

// Adds the state tensors and calls to `low`; fills `tr` (hyper block, per-parameter state).
// Parameters are updated in packs of up to max_pack_bytes (update_packs.hpp), one dispatch each.
void append_optimizer_calls(const Graph& g, lower::Lowered& low, const std::vector<ParamGrad>& params,
                            Session::Impl::Training& tr, uint64_t max_pack_bytes);

}  // namespace meganeura::train
