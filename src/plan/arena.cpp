#include "plan/arena.hpp"

#include <algorithm>
#include <numeric>

namespace meganeura::plan {

static uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

std::vector<uint64_t> place(const std::vector<Lifetime>& items, uint64_t alignment, bool reuse, uint64_t& size) {
  std::vector<uint64_t> offset(items.size(), 0);
  size = 0;
  if (!reuse) {
    for (size_t i = 0; i < items.size(); ++i) {
      offset[i] = size;
      size = align_up(size + items[i].bytes, alignment);
    }
    return offset;
  }
  std::vector<size_t> order(items.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return items[a].bytes > items[b].bytes; });
  std::vector<size_t> placed;
  for (size_t i : order) {
    const Lifetime& t = items[i];
    std::vector<std::pair<uint64_t, uint64_t>> busy;  // [begin, end) of tensors alive with t
    for (size_t j : placed)
      if (items[j].first <= t.last && t.first <= items[j].last)
        busy.emplace_back(offset[j], offset[j] + items[j].bytes);
    std::sort(busy.begin(), busy.end());
    uint64_t at = 0;
    for (auto& [b, e] : busy) {
      if (at + t.bytes <= b) break;
      at = std::max(at, align_up(e, alignment));
    }
    offset[i] = at;
    size = std::max(size, align_up(at + t.bytes, alignment));
    placed.push_back(i);
  }
  return offset;
}

}  // namespace meganeura::plan
