// MEGANEURA_LOG is a list of topics to log to stderr (docs/environment.md).
#pragma once
#include <cstdlib>
#include <cstring>

namespace meganeura::kernels {

inline bool log_topic(const char* topic) {
  const char* v = std::getenv("MEGANEURA_LOG");
  return v && std::strstr(v, topic);
}

}  // namespace meganeura::kernels
