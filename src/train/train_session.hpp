// What the trainer changes in a built training session.
#pragma once
#include "runtime/session_impl.hpp"

namespace meganeura::train {

// Rewrites the schedule step_scalars follows (a cosine schedule learns its length when fit()
// starts); takes effect at the next step.
void set_schedule(Session::Impl& impl, const Schedule& schedule);

}  // namespace meganeura::train
