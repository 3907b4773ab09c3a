// A decoding step's KV cache appends: a cache_write whose rows are (through reshapes) the whole
// of a product of a GEMV-sized matmul group, or of the rotary that group computes, joins the
// group: the subgroup GEMV writes the rows into the cache as it stores them (emit_matmul.cpp), so
// the append needs no dispatch of its own. At most two a group (a layer's k and v), sharing one
// position. Where the emitter cannot (another GEMV kernel), it emits them after the products.
#include <algorithm>

#include "lower/fuse/pass.hpp"

namespace meganeura::lower {

namespace {

// The slot a cache of `rows` takes in group `grp`: the product's index, 4 + the rotary part's, or -1.
int slot_of(const Grouping& groups, int grp, int rows) {
  const DispatchGroup& group = groups.group(grp);
  const auto product = std::find(group.nodes.begin(), group.nodes.end(), rows);
  if (product != group.nodes.end()) return static_cast<int>(product - group.nodes.begin());
  int part = 0;
  for (const Fused& f : group.extras) {
    if (f.as != FusedAs::Rotary) continue;
    if (f.node == rows) return 4 + part;
    ++part;
  }
  return -1;
}

}  // namespace

void cache_write_in_gemv(PassContext& c, Grouping& groups) {
  const MatMulTiers& tiers = c.options.matmul;
  if (!tiers.gemv || !tiers.gemv_subgroup || !(tiers.force.empty() || tiers.force == "gemv")) return;
  for (int w = 0; w < c.g.size(); ++w) {
    const Node& n = c.node(w);
    if (!c.is_live(w) || n.op != Op::CacheWrite || !groups.alone(w) || n.dtype != DType::f32) continue;
    int rows = n.inputs[1];
    while (c.node(rows).op == Op::Reshape) rows = c.node(rows).inputs[0];
    const int grp = groups.owner(rows);
    if (grp < 0 || groups.group(grp).archetype != Archetype::MatMul) continue;
    const DispatchGroup& group = groups.group(grp);
    const Shape& product = c.node(group.nodes[0]).shape;
    const int slot = slot_of(groups, grp, rows);
    // A few rows (the GEMV), the state read by nothing else (the append moves up to the
    // products), the position ready before them, and one position for the group's appends.
    const std::vector<int>& state_readers = c.uses.readers[static_cast<size_t>(n.inputs[0])];
    const int first_cache = group.extra(FusedAs::Cache);
    int caches = 0;
    for (const Fused& f : group.extras) caches += f.as == FusedAs::Cache;
    if (slot < 0 || product.size() < 2 || product[product.size() - 2] > 4 || state_readers.size() != 1 ||
        n.inputs[2] >= group.nodes[0] || caches >= 2 ||
        (first_cache >= 0 && c.node(first_cache).inputs[2] != n.inputs[2]))
      continue;
    groups.absorb(grp, w, FusedAs::Cache, static_cast<uint32_t>(slot));
  }
}

}  // namespace meganeura::lower
