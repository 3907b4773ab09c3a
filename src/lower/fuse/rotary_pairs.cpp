// Two rotaries with the same cos, sin and direction (a layer's q and k): one dispatch.
#include "lower/fuse/pass.hpp"

namespace meganeura::lower {

namespace {

bool same_rotation(const Graph& g, int a, int b) {
  static const Pattern rotary = node(Op::Rotary, {var("x"), var("cos"), var("sin")});
  const auto x = match(g, a, rotary), y = match(g, b, rotary);
  return x && y && (*x)["cos"] == (*y)["cos"] && (*x)["sin"] == (*y)["sin"] &&
         g.node(a).attrs.count == g.node(b).attrs.count;
}

}  // namespace

void rotary_pairs(PassContext& c, Grouping& groups) { pair_nodes(c, groups, same_rotation); }

}  // namespace meganeura::lower
