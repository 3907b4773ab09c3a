#include "plan/arena.hpp"

#include <algorithm>
#include <numeric>

#include "util/align.hpp"

namespace meganeura::plan {

using util::align_up;

namespace {

struct Packer {
  const std::vector<Lifetime>& items;
  uint64_t alignment, capacity;
  Arenas out;
  std::vector<std::vector<size_t>> placed{{}};  // per arena, the items in it (the first is open)

  // The lowest offset in `arena` where `t` overlaps no item alive with it (maybe past capacity).
  uint64_t lowest_free(size_t arena, const Lifetime& t) const {
    std::vector<std::pair<uint64_t, uint64_t>> busy;  // [begin, end) of items alive with t
    for (size_t j : placed[arena])
      if (items[j].first <= t.last && t.first <= items[j].last)
        busy.emplace_back(out.at[j].offset, out.at[j].offset + items[j].bytes);
    std::sort(busy.begin(), busy.end());
    uint64_t at = 0;
    for (auto& [b, e] : busy) {
      if (at + t.bytes <= b) break;
      at = std::max(at, align_up(e, alignment));
    }
    return at;
  }

  void put(size_t i, size_t arena, uint64_t offset) {
    if (arena == placed.size()) {
      placed.emplace_back();
      out.size.push_back(0);
    }
    out.at[i] = {static_cast<uint32_t>(arena), offset};
    placed[arena].push_back(i);
    out.size[arena] = std::max(out.size[arena], align_up(offset + items[i].bytes, alignment));
  }

  void reusing(size_t i) {
    for (size_t a = 0; a < placed.size(); ++a)
      if (uint64_t at = lowest_free(a, items[i]); at + items[i].bytes <= capacity) return put(i, a, at);
    put(i, placed.size(), 0);
  }

  void appending(size_t i) {
    size_t a = placed.size() - 1;
    uint64_t at = out.size[a];
    if (at > 0 && at + items[i].bytes > capacity) ++a, at = 0;
    put(i, a, at);
  }
};

}  // namespace

Arenas place(const std::vector<Lifetime>& items, uint64_t alignment, bool reuse, uint64_t capacity) {
  Packer p{items, alignment, capacity, {std::vector<Placement>(items.size()), {0}}};
  if (!reuse) {
    for (size_t i = 0; i < items.size(); ++i) p.appending(i);
  } else {
    std::vector<size_t> order(items.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return items[a].bytes > items[b].bytes; });
    for (size_t i : order) p.reusing(i);
  }
  return p.out;
}

}  // namespace meganeura::plan
