// A decoding step's KV cache appends in its rotary's dispatch: a cache_write whose rows are (through
// reshapes) one of a rotary group's outputs — a layer's k — joins that group, and then a
// cache_write at the same position whose rows are ready before the group — the layer's v. The
// RotaryAppend kernel (emit_rotary.cpp) rotates q and k and writes k and v into their caches: one
// dispatch where three were, each costing a few µs of launch and drain when a token is a few
// hundred of them. The appends move to the rotary's place: nothing else may read their caches
// in between.
#include <algorithm>

#include "lower/fuse/pass.hpp"

namespace meganeura::lower {

namespace {

int through_views(const Graph& g, int id) {
  while (g.node(id).op == Op::Reshape) id = g.node(id).inputs[0];
  return id;
}

// Its value exists before group `grp` runs: a leaf, a node of a group emitted before it, or a
// view of such.
bool ready_before(const PassContext& c, const Grouping& groups, int node, int grp) {
  const Node& n = c.node(node);
  if (is_view(c.g, n))
    return std::all_of(n.inputs.begin(), n.inputs.end(), [&](int in) { return ready_before(c, groups, in, grp); });
  const int owner = groups.owner(node);
  return owner < 0 || groups.group(owner).anchor < groups.group(grp).anchor;
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
  const DispatchGroup& group = groups.group(grp);
  const int rows = through_views(c.g, c.node(w).inputs[1]);
  if (rows == group.anchor) return 0;
  if (rows == group.extra(FusedAs::Partner)) return 1;
  return ready_before(c, groups, c.node(w).inputs[1], grp) ? static_cast<int>(kernels::kAppendFromRows) : -1;
}

// Whether append `w` may join rotary group `grp` with its rows from `source`.
bool can_join(const PassContext& c, const Grouping& groups, int grp, int w, int source) {
  const Node& n = c.node(w);
  const DispatchGroup& group = groups.group(grp);
  if (source < 0 || c.node(group.anchor).attrs.count != 0) return false;  // not a transposed rotary
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
         ready_before(c, groups, n.inputs[2], grp) && moves_past_no_reader(c, groups, w, grp) && read_after(c, groups, w, grp);
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
    if (grp < 0 || groups.group(grp).archetype != Archetype::Rotary) continue;
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
