// add(d x, other) where d x is a norm backward's result that only the add reads, and other a
// tensor of its shape (the residual stream's gradient): the norm backward adds other as it
// stores, at the add's place.
#include "lower/fuse/pass.hpp"

namespace meganeura::lower {

void add_in_norm_backward(PassContext& c, Grouping& groups) {
  static const std::vector<Pattern> adds = {node(Op::Add, {var("dx"), var("other")}),
                                            node(Op::Add, {var("other"), var("dx")})};
  for (int id = 0; id < c.g.size(); ++id) {
    const Node& add = c.node(id);
    if (add.op != Op::Add || !groups.alone(id) || add.dtype != DType::f32 || add.inputs[0] == add.inputs[1]) continue;
    for (const Pattern& p : adds) {
      const auto m = match(c.g, id, p);
      if (!m) continue;
      const Node &dx = c.node((*m)["dx"]), &other = c.node((*m)["other"]);
      if ((dx.op == Op::RmsNormBackward || dx.op == Op::LayerNormBackward) && c.dies_in_one_reader((*m)["dx"]) &&
          dx.shape == add.shape && other.shape == add.shape && other.dtype == DType::f32 && groups.alone((*m)["dx"])) {
        const int grp = groups.merge(Archetype::NormBackward, id, {(*m)["dx"]});
        groups.group(grp).extras.push_back({FusedAs::Add, id});
        break;
      }
    }
  }
}

}  // namespace meganeura::lower
