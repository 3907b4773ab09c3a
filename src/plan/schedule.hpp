// The order a step's kernel calls are recorded in. Lowering emits them in graph order, which
// chains independent work behind barriers (a training step's weight gradients wait for the whole
// backward; an attention's d q for its d k / d v and the products after them). Here each call
// gets a level: one more than the highest level of the earlier calls it must follow (it reads
// what they write, or writes what they read or write). Calls of one level are independent, so
// recording them level by level lets a single barrier stand between levels, and work off the
// critical path runs beside it.
#pragma once
#include <vector>

#include "lower/lowered.hpp"

namespace meganeura::plan {

struct Schedule {
  std::vector<size_t> order;  // call indices in recording order: by level, then lowering's order
  std::vector<int> level;     // per call (lowering's index)
};

// With by_level false, lowering's order and one level per call (MEGANEURA_SCHEDULE=program).
Schedule schedule_calls(const lower::Lowered& low, bool by_level);

}  // namespace meganeura::plan
