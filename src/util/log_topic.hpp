// MEGANEURA_LOG is a list of topics to log to stderr (docs/environment.md). Read at the edges
// (session build, the device, the kernel cache); stages get what to log through their options.
#pragma once
#include <string>

#include "util/env.hpp"

namespace meganeura::util {

inline bool log_topic(const char* topic) { return env("MEGANEURA_LOG").find(topic) != std::string::npos; }

}  // namespace meganeura::util
