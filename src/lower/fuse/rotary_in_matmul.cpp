// A q/k rotary pair (rotary_pairs) whose inputs are two products of one matmul group (through
// reshapes), with cos and sin computed before the group: the group's split-K summing pass
// rotates them as it stores (emit_matmul.cpp; a pass after the products where there is none).
#include <algorithm>

#include "lower/fuse/pass.hpp"

namespace meganeura::lower {

namespace {

struct ProductOf {
  int group = -1;
  int index = -1;  // among the group's products
};

// x (or what it reshapes) as a product of a group of several.
ProductOf product_of(const PassContext& c, const Grouping& groups, int x) {
  if (c.node(x).op == Op::Reshape) x = c.node(x).inputs[0];
  const int grp = groups.owner(x);
  if (grp < 0 || groups.group(grp).archetype != Archetype::MatMul || groups.group(grp).packed_b < 0) return {};
  const std::vector<int>& products = groups.group(grp).nodes;
  return {grp, static_cast<int>(std::find(products.begin(), products.end(), x) - products.begin())};
}

}  // namespace

void rotary_in_matmul(PassContext& c, Grouping& groups) {
  for (int a = 0; a < c.g.size(); ++a) {
    const int pair = groups.owner(a);
    if (pair < 0 || groups.group(pair).archetype != Archetype::Rotary || groups.group(pair).anchor != a) continue;
    const int b = groups.group(pair).extra(FusedAs::Partner);
    if (b < 0) continue;
    const auto ma = match(c.g, a, rotary_pattern()), mb = match(c.g, b, rotary_pattern());
    if (!ma || !mb || c.node(a).attrs.count != 0 || c.node(b).attrs.count != 0) continue;
    const ProductOf pa = product_of(c, groups, (*ma)["x"]), pb = product_of(c, groups, (*mb)["x"]);
    if (pa.group < 0 || pb.group != pa.group || pa.index == pb.index ||
        groups.group(pa.group).extra(FusedAs::Rotary) >= 0)
      continue;
    const std::vector<int>& products = groups.group(pa.group).nodes;
    auto whole = [&](int r, int index) {  // the rotary covers all of the product, in f32
      return c.node(r).dtype == DType::f32 &&
             numel(c.node(r).shape) == numel(c.node(products[static_cast<size_t>(index)]).shape);
    };
    if (!whole(a, pa.index) || !whole(b, pb.index) || (*ma)["cos"] >= products[0] || (*ma)["sin"] >= products[0])
      continue;
    groups.absorb(pa.group, a, FusedAs::Rotary, static_cast<uint32_t>(pa.index));
    groups.absorb(pa.group, b, FusedAs::Rotary, static_cast<uint32_t>(pb.index));
  }
}

}  // namespace meganeura::lower
