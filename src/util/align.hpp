// Rounding sizes and offsets up to an alignment (buffer offsets, arenas, planned slices).
#pragma once
#include <cstdint>

namespace meganeura::util {

// v rounded up to a multiple of a (a > 0).
constexpr uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

}  // namespace meganeura::util
