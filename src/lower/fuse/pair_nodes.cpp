// Two nodes one dispatch computes, at the first when the second's inputs are ready there, else at
// the second when nothing reads the first's bytes before it.
#include <algorithm>

#include "lower/fuse/pass.hpp"

namespace meganeura::lower {

void pair_nodes(PassContext& c, Grouping& groups, Op op, bool (*match)(const Graph&, int a, int b)) {
  const Graph& g = c.g;
  // The first kernel reading each node's bytes: a view's readers read its input.
  std::vector<int> first_use(static_cast<size_t>(g.size()), g.size());
  for (int id = g.size() - 1; id >= 0; --id)
    for (int r : c.uses.readers[static_cast<size_t>(id)])
      first_use[static_cast<size_t>(id)] =
          std::min(first_use[static_cast<size_t>(id)], is_view(g, g.node(r)) ? first_use[static_cast<size_t>(r)] : r);
  auto ready_at = [&](int b, int a) {
    return std::all_of(g.node(b).inputs.begin(), g.node(b).inputs.end(), [&](int in) { return in < a; });
  };
  auto free = [&](int id) { return groups.alone(id) && numel(g.node(id).shape) > 0; };
  // Only nodes of `op` can pair: the pairs are sought among them (a training graph has tens of
  // thousands of nodes and a few dozen of each kind paired).
  std::vector<int> candidates;
  for (int id = 0; id < g.size(); ++id)
    if (g.node(id).op == op) candidates.push_back(id);
  for (size_t i = 0; i < candidates.size(); ++i) {
    const int a = candidates[i];
    if (!free(a)) continue;
    for (size_t j = i + 1; j < candidates.size(); ++j) {
      const int b = candidates[j];
      if (!free(b) || !match(g, a, b)) continue;
      if (ready_at(b, a)) {
        groups.absorb(groups.owner(a), b, FusedAs::Partner);
        break;
      }
      if (first_use[static_cast<size_t>(a)] > b) {
        groups.absorb(groups.owner(b), a, FusedAs::Partner);
        break;
      }
    }
  }
}

}  // namespace meganeura::lower
