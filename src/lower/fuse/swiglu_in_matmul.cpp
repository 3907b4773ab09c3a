// swiglu(gate, up) where gate and up are the two products of one matmul group and nothing else
// is read: the group computes it too (in the tensor-core or GEMV kernel's store; emit_matmul.cpp
// runs it after the products on tiers that cannot).
#include "lower/fuse/pass.hpp"

namespace meganeura::lower {

void swiglu_in_matmul(PassContext& c, Grouping& groups) {
  static const Pattern glu = node(Op::SwiGlu, {var("gate"), var("up")});
  for (int id = 0; id < c.g.size(); ++id) {
    const auto m = match(c.g, id, glu);
    if (!m || !groups.alone(id) || c.node(id).dtype != DType::f32) continue;
    const int grp = groups.owner((*m)["gate"]);
    if (grp < 0) continue;
    const DispatchGroup& products = groups.group(grp);
    if (products.archetype != Archetype::MatMul || products.nodes != std::vector<int>{(*m)["gate"], (*m)["up"]} ||
        products.extra(FusedAs::Glu) >= 0 || c.node((*m)["gate"]).shape != c.node(id).shape)
      continue;
    groups.absorb(grp, id, FusedAs::Glu);
  }
}

}  // namespace meganeura::lower
