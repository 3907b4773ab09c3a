// Two nodes one dispatch computes, at the first when the second's inputs are ready there, else at
// the second when nothing reads the first's bytes before it.
#include <algorithm>

#include "lower/fuse/pass.hpp"

namespace meganeura::lower {

void pair_nodes(PassContext& c, Grouping& groups, bool (*match)(const Graph&, int a, int b)) {
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
  for (int a = 0; a < g.size(); ++a) {
    if (!free(a)) continue;
    for (int b = a + 1; b < g.size(); ++b) {
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
