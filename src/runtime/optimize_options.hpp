// The optimizer's switches from the environment (read at the edge, stage_options.cpp): whether a
// session optimizes its graph, and the report it prints.
#pragma once
#include <string>

namespace meganeura::runtime {

// Whether a session optimizes its graph: its option, unless MEGANEURA_OPTIMIZE=0 turns it off.
bool optimizing(bool option);
// Prints an optimizer run's report where MEGANEURA_LOG has `optimize`.
void log_optimize(const std::string& report);

}  // namespace meganeura::runtime
