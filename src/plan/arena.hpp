// Offsets for tensors with known lifetimes in arenas of at most `capacity` bytes each: greedy
// by size, each placed at the lowest offset of the first arena where no tensor alive at the
// same time occupies its bytes; an arena is opened when none has room. One arena unless the
// tensors alive at once outgrow a single buffer (a device's maxMemoryAllocationSize).
#pragma once
#include <cstdint>
#include <vector>

namespace meganeura::plan {

struct Lifetime {
  uint64_t bytes;   // at most the capacity (the caller names a tensor that is not)
  int first, last;  // inclusive command indices
};

struct Placement {
  uint32_t arena = 0;
  uint64_t offset = 0;
};

struct Arenas {
  std::vector<Placement> at;   // one per lifetime
  std::vector<uint64_t> size;  // one per arena opened (at least one)
};

// Without reuse every tensor gets bytes of its own.
Arenas place(const std::vector<Lifetime>& items, uint64_t alignment, bool reuse, uint64_t capacity = UINT64_MAX);

}  // namespace meganeura::plan
