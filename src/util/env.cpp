#include "util/env.hpp"

#include <cstdlib>

#include "meganeura/error.hpp"

namespace meganeura::util {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::string env_choice(const char* name, std::initializer_list<std::string_view> choices) {
  const std::string v = env(name);
  if (v.empty()) return v;
  std::string expected;
  size_t i = 0;
  for (std::string_view c : choices) {
    if (v == c) return v;
    expected += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + std::string(c);
    ++i;
  }
  throw Error(std::string(name) + "=" + v + ": expected " + expected);
}

bool env_on(const char* name) { return env(name) != "0"; }

uint64_t env_number(const char* name, uint64_t max, uint64_t fallback, std::string_view what) {
  const std::string v = env(name);
  if (v.empty()) return fallback;
  char* end = nullptr;
  const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
  if (v[0] == '-' || v[0] == '+' || v[0] == ' ' || *end != '\0' || n > max)
    throw Error(std::string(name) + "=" + v + ": expected " + std::string(what));
  return n;
}

}  // namespace meganeura::util
