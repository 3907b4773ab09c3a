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
  std::vector<std::pair<size_t, Touch>> mine;                   // this call's accesses, by root
  for (size_t c = 0; c < n; ++c) {
    int level = 0;
    mine.clear();
    for (const lower::Access& a : low.calls[c].tensors) {
      const uint64_t begin = low.offset_in_root(a.tensor);
      mine.push_back({static_cast<size_t>(low.root(a.tensor)),
                      {begin, begin + low.tensors[static_cast<size_t>(a.tensor)].bytes, a.write, 0}});
    }
    for (const auto& [root, x] : mine)
      for (const Touch& t : touched[root])
        if ((t.write || x.write) && t.begin < x.end && x.begin < t.end) level = std::max(level, t.level + 1);
    s.level[c] = level;
    for (auto& [root, x] : mine) {
      x.level = level;
      touched[root].push_back(x);
    }
  }
  std::stable_sort(s.order.begin(), s.order.end(), [&](size_t a, size_t b) { return s.level[a] < s.level[b]; });
  return s;
}

}  // namespace meganeura::plan
