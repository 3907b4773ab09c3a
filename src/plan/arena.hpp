// Offsets for tensors with known lifetimes in one arena: greedy by size, each placed at the
// lowest offset that no tensor alive at the same time occupies.
#pragma once
#include <cstdint>
#include <vector>

namespace meganeura::plan {

struct Lifetime {
  uint64_t bytes;
  int first, last;  // inclusive command indices
};

// Returns one offset per lifetime; `size` gets the arena size. Without reuse every tensor
// gets bytes of its own.
std::vector<uint64_t> place(const std::vector<Lifetime>& items, uint64_t alignment, bool reuse, uint64_t& size);

}  // namespace meganeura::plan
