#include "lower/pairs.hpp"

#include <algorithm>

#include "lower/emit.hpp"

namespace meganeura::lower {

std::vector<int> pair_nodes(const Graph& g, const std::vector<bool>& live, const std::function<bool(int, int)>& match) {
  const size_t n = static_cast<size_t>(g.size());
  // The first kernel reading each node's bytes: a view's readers read its input.
  std::vector<std::vector<int>> readers(n);
  for (int id = 0; id < g.size(); ++id)
    if (live[static_cast<size_t>(id)])
      for (int in : g.node(id).inputs) readers[static_cast<size_t>(in)].push_back(id);
  std::vector<int> first_use(n, g.size());
  for (int id = g.size() - 1; id >= 0; --id)
    for (int r : readers[static_cast<size_t>(id)])
      first_use[static_cast<size_t>(id)] =
          std::min(first_use[static_cast<size_t>(id)], is_view(g, g.node(r)) ? first_use[static_cast<size_t>(r)] : r);
  auto ready_at = [&](int b, int a) {
    return std::all_of(g.node(b).inputs.begin(), g.node(b).inputs.end(), [&](int in) { return in < a; });
  };
  std::vector<int> partner(n, -1);
  for (int a = 0; a < g.size(); ++a) {
    if (!live[static_cast<size_t>(a)] || partner[static_cast<size_t>(a)] != -1 || numel(g.node(a).shape) == 0) continue;
    for (int b = a + 1; b < g.size(); ++b) {
      if (!live[static_cast<size_t>(b)] || partner[static_cast<size_t>(b)] != -1 || numel(g.node(b).shape) == 0 || !match(a, b))
        continue;
      if (ready_at(b, a)) {
        partner[static_cast<size_t>(a)] = b;
        partner[static_cast<size_t>(b)] = kEmittedWithPartner;
        break;
      }
      if (first_use[static_cast<size_t>(a)] > b) {
        partner[static_cast<size_t>(b)] = a;
        partner[static_cast<size_t>(a)] = kEmittedWithPartner;
        break;
      }
    }
  }
  return partner;
}

}  // namespace meganeura::lower
