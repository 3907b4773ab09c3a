#include "plan/schedule.hpp"

#include <algorithm>
#include <numeric>

namespace meganeura::plan {

namespace {

// An access by an earlier call to bytes [begin, end) of a root tensor.
struct Touch {
  uint64_t begin, end;
  bool write;
  int level;
};

}  // namespace

Schedule schedule_calls(const lower::Lowered& low, bool by_level) {
  const size_t n = low.calls.size();
  Schedule s;
  s.order.resize(n);
  std::iota(s.order.begin(), s.order.end(), size_t{0});
  s.level.resize(n);
  if (!by_level) {
    std::iota(s.level.begin(), s.level.end(), 0);
    return s;
  }
  std::vector<std::vector<Touch>> touched(low.tensors.size());  // by root tensor
  for (size_t c = 0; c < n; ++c) {
    int level = 0;
    const auto& accesses = low.calls[c].tensors;
    for (const lower::Access& a : accesses) {
      const auto root = static_cast<size_t>(low.root(a.tensor));
      const uint64_t begin = low.offset_in_root(a.tensor), end = begin + low.tensors[static_cast<size_t>(a.tensor)].bytes;
      for (const Touch& t : touched[root])
        if ((t.write || a.write) && t.begin < end && begin < t.end) level = std::max(level, t.level + 1);
    }
    s.level[c] = level;
    for (const lower::Access& a : accesses) {
      const uint64_t begin = low.offset_in_root(a.tensor);
      touched[static_cast<size_t>(low.root(a.tensor))].push_back(
          {begin, begin + low.tensors[static_cast<size_t>(a.tensor)].bytes, a.write, level});
    }
  }
  std::stable_sort(s.order.begin(), s.order.end(), [&](size_t a, size_t b) { return s.level[a] < s.level[b]; });
  return s;
}

}  // namespace meganeura::plan
