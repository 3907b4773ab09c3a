// Two rotaries with the same cos, sin and direction (a layer's q and k): one dispatch.
#include "lower/fuse/pass.hpp"

namespace meganeura::lower {

namespace {

bool same_rotation(const Graph& g, int a, int b) {
  const auto x = match(g, a, rotary_pattern()), y = match(g, b, rotary_pattern());
  return x && y && (*x)["cos"] == (*y)["cos"] && (*x)["sin"] == (*y)["sin"] &&
         g.node(a).attrs.count == g.node(b).attrs.count;
}

}  // namespace

const Pattern& rotary_pattern() {
  static const Pattern rotary = node(Op::Rotary, {var("x"), var("cos"), var("sin")});
  return rotary;
}

void rotary_pairs(PassContext& c, Grouping& groups) { pair_nodes(c, groups, Op::Rotary, same_rotation); }

}  // namespace meganeura::lower
