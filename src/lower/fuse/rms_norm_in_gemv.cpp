// An rms_norm whose only readers are the A of one matmul group, or of products that each run
// alone, on the GEMV tier (a decoding step's few rows): the GEMV normalises as it loads (x·w, and
// the row's rstd at the store). Takes the norm back from norm_after_matmul's claim.
#include <algorithm>

#include "lower/fuse/pass.hpp"

namespace meganeura::lower {

namespace {

// Product `id` reads `norm` as its A, and only there.
bool reads_as_a(const Graph& g, int id, int norm) {
  const Node& m = g.node(id);
  return archetype_of(m.op) == Archetype::MatMul && m.inputs[0] == norm &&
         std::count(m.inputs.begin(), m.inputs.end(), norm) == 1 && !m.attrs.transpose_a;
}

}  // namespace

void rms_norm_in_gemv(PassContext& c, Grouping& groups) {
  const MatMulTiers& tiers = c.options.matmul;
  if (!tiers.gemv || !(tiers.force.empty() || tiers.force == "gemv")) return;
  static const Pattern rms_norm = node(Op::RmsNorm, {var("x"), var("weight")});
  for (int r = 0; r < c.g.size(); ++r) {
    const Node& n = c.node(r);
    if (!c.is_live(r) || !match(c.g, r, rms_norm) || n.dtype != DType::f32 || n.shape.size() < 2 ||
        n.shape[n.shape.size() - 2] > 4 || c.pinned(r))
      continue;
    const std::vector<int>& products =
        c.uses.readers[static_cast<size_t>(r)];  // a node reading r twice fails reads_as_a
    if (products.empty() ||
        !std::all_of(products.begin(), products.end(), [&](int id) { return reads_as_a(c.g, id, r); }))
      continue;
    auto group_of = [&](int id) -> const DispatchGroup* {
      const int o = groups.owner(id);
      return o >= 0 && groups.group(o).archetype == Archetype::MatMul ? &groups.group(o) : nullptr;
    };
    const DispatchGroup* first = group_of(products[0]);
    const bool grouped = first && first->packed_b >= 0 && first->nodes == products;
    const bool each_alone = std::all_of(products.begin(), products.end(), [&](int id) {
      const DispatchGroup* grp = group_of(id);
      return grp && grp->packed_b < 0 && grp->anchor == id;
    });
    if (!grouped && !each_alone) continue;
    groups.absorb(groups.owner(products[0]), r, FusedAs::NormA);
    if (!grouped)
      for (size_t k = 1; k < products.size(); ++k) groups.share(groups.owner(products[k]), r, FusedAs::NormA);
  }
}

}  // namespace meganeura::lower
