// A decoding step's KV cache appends in its rotary's dispatch: a cache_write whose rows are (through
// reshapes) one of a rotary pair's outputs — a layer's k — joins the pair's group (a rotary group,
// or the q/k/v matmul group that rotary_in_matmul gave it), and then a cache_write at the same
// position whose rows are ready by then — the layer's v. The RotaryAppend kernel (emit_rotary.cpp)
// rotates q and k and writes k and v into their caches: one dispatch where three were, each
// costing a few µs of launch and drain when a token is a few hundred of them. Where the matmul
// group rotates in its split-K summing pass instead, the appends follow it as CacheWrite calls. The appends move to the
// rotary's place: nothing else may read their caches in between.
#include <algorithm>
#include <array>

#include "lower/fuse/pass.hpp"

namespace meganeura::lower {

namespace {

int through_views(const Graph& g, int id) {
  while (g.node(id).op == Op::Reshape) id = g.node(id).inputs[0];
  return id;
}

// Its value exists before group `grp` rotates: a leaf, a node of a group emitted before it or one
// of the group's own products (a matmul group rotates after them), or a view of such.
bool ready_before(const PassContext& c, const Grouping& groups, int node, int grp) {
  const Node& n = c.node(node);
  if (is_view(c.g, n))
    return std::all_of(n.inputs.begin(), n.inputs.end(), [&](int in) { return ready_before(c, groups, in, grp); });
  const int owner = groups.owner(node);
  if (owner == grp && groups.group(grp).archetype == Archetype::MatMul) {
    const std::vector<int>& products = groups.group(grp).nodes;
    return std::find(products.begin(), products.end(), node) != products.end();
  }
  return owner < 0 || groups.group(owner).anchor < groups.group(grp).anchor;
}

// The rotary parts of group `grp`: a rotary group's anchor and partner, or a matmul group's
// rotary pair (FusedAs::Rotary, in the order its emitter takes them); -1 where there is none.
std::array<int, 2> rotary_parts(const Grouping& groups, int grp) {
  const DispatchGroup& group = groups.group(grp);
  if (group.archetype == Archetype::Rotary) return {group.anchor, group.extra(FusedAs::Partner)};
  std::array<int, 2> parts = {-1, -1};
  size_t k = 0;
  for (const Fused& f : group.extras)
    if (f.as == FusedAs::Rotary && k < 2) parts[k++] = f.node;
  return parts;
}

// Nothing reads `w`'s value (the cache after the append) before group `grp` runs.
bool read_after(const PassContext& c, const Grouping& groups, int w, int grp) {
  const int anchor = groups.group(grp).anchor;
  for (int r : c.uses.readers[static_cast<size_t>(w)]) {
    const int owner = groups.owner(r);
    if (r <= anchor || (owner >= 0 && groups.group(owner).anchor <= anchor)) return false;
    if (is_view(c.g, c.node(r)) && !read_after(c, groups, r, grp)) return false;
  }
  return true;
}

// Where a node runs: its group's anchor (a view, which has none, at its own place).
int runs_at(const Grouping& groups, int node) {
  const int owner = groups.owner(node);
  return owner >= 0 ? groups.group(owner).anchor : node;
}

// No other reader of append `w`'s cache runs between `w` and group `grp`, so that moving the
// append there changes what none of them sees (a generator's graph holds the prefill's append too).
bool moves_past_no_reader(const PassContext& c, const Grouping& groups, int w, int grp) {
  const int anchor = groups.group(grp).anchor, from = std::min(anchor, w), to = std::max(anchor, w);
  for (int r : c.uses.readers[static_cast<size_t>(c.node(w).inputs[0])]) {
    const int at = runs_at(groups, r);
    if (r != w && at >= from && at <= to) return false;
  }
  return true;
}

// Where append `w` would take its rows in rotary group `grp`: part 0 or 1, the copied rows, or -1.
int source_in(const PassContext& c, const Grouping& groups, int grp, int w) {
  const int rows = through_views(c.g, c.node(w).inputs[1]);
  const std::array<int, 2> parts = rotary_parts(groups, grp);
  if (parts[0] < 0) return -1;
  if (rows == parts[0]) return 0;
  if (rows == parts[1]) return 1;
  return ready_before(c, groups, c.node(w).inputs[1], grp) ? static_cast<int>(kernels::kAppendFromRows) : -1;
}

// Whether append `w` may join rotary group `grp` with its rows from `source`.
bool can_join(const PassContext& c, const Grouping& groups, int grp, int w, int source) {
  const Node& n = c.node(w);
  const DispatchGroup& group = groups.group(grp);
  if (source < 0 || c.node(rotary_parts(groups, grp)[0]).attrs.count != 0) return false;  // not a transposed one
  int appends = 0, position = -1;
  bool copies = false;
  for (const Fused& f : group.extras) {
    if (f.as != FusedAs::Append) continue;
    ++appends;
    position = c.node(f.node).inputs[2];
    copies = copies || f.slot == kernels::kAppendFromRows;
  }
  const bool copy = source == static_cast<int>(kernels::kAppendFromRows);
  return appends < 2 && (position < 0 || position == n.inputs[2]) && !(copy && copies) &&
         ready_before(c, groups, n.inputs[2], grp) && moves_past_no_reader(c, groups, w, grp) &&
         read_after(c, groups, w, grp);
}

bool is_append(const PassContext& c, const Grouping& groups, int w) {
  const Node& n = c.node(w);
  return c.is_live(w) && n.op == Op::CacheWrite && groups.alone(w) && dtype_size(n.dtype) == 4;
}

}  // namespace

void cache_appends_in_rotary(PassContext& c, Grouping& groups) {
  // First the appends of a rotary's own rows (k), each to its rotary's group.
  std::vector<int> rotary_groups;
  for (int w = 0; w < c.g.size(); ++w) {
    if (!is_append(c, groups, w)) continue;
    const int grp = groups.owner(through_views(c.g, c.node(w).inputs[1]));
    if (grp < 0) continue;
    const int source = source_in(c, groups, grp, w);
    if (source == static_cast<int>(kernels::kAppendFromRows) || !can_join(c, groups, grp, w, source)) continue;
    groups.absorb(grp, w, FusedAs::Append, static_cast<uint32_t>(source));
    rotary_groups.push_back(grp);
  }
  // Then an append at the same position of rows ready before one of those groups (v).
  for (int w = 0; w < c.g.size(); ++w) {
    if (!is_append(c, groups, w)) continue;
    for (int grp : rotary_groups) {
      const int source = source_in(c, groups, grp, w);
      if (source != static_cast<int>(kernels::kAppendFromRows) || !can_join(c, groups, grp, w, source)) continue;
      groups.absorb(grp, w, FusedAs::Append, static_cast<uint32_t>(source));
      break;
    }
  }
}

}  // namespace meganeura::lower
