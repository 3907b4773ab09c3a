// Overflow-checked size arithmetic, for sizes that come from files (config.json, headers): a
// product that does not fit 64 bits is an Error naming what was being sized, never a wrap.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "meganeura/error.hpp"

namespace meganeura::util {

// a * b for non-negative sizes; `what` names the product in the error ("nn::Rotary: max_positions * head_dim").
inline int64_t checked_mul(int64_t a, int64_t b, std::string_view what) {
  int64_t r = 0;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r))
    throw SizeError(std::string(what) + ": " + std::to_string(a) + " * " + std::to_string(b) +
                    (a < 0 || b < 0 ? " has a negative factor" : " overflows 64 bits"));
  return r;
}

}  // namespace meganeura::util
