// sum/mean(a * b) where nothing else reads the product (attention backward's delta), and
// sum/mean/max(|a|) where nothing else reads |a| (a norm, a checksum): one reduction that maps
// its operands as it loads them.
#include <algorithm>

#include "lower/fuse/pass.hpp"

namespace meganeura::lower {

namespace {

const std::vector<Pattern>& mapped_forms() {
  static const std::vector<Pattern> forms = [] {
    std::vector<Pattern> f;
    for (Op reduce : {Op::Sum, Op::Mean, Op::Max}) {
      if (reduce != Op::Max) f.push_back(node(reduce, {node(Op::Mul, {var("a"), var("b")}).as("map")}));
      f.push_back(node(reduce, {node(Op::Abs, {var("a")}).as("map")}));
    }
    return f;
  }();
  return forms;
}

}  // namespace

void map_in_reduction(PassContext& c, Grouping& groups) {
  for (int id = 0; id < c.g.size(); ++id) {
    if (!c.is_live(id) || c.node(id).dtype != DType::f32 || groups.owner(id) < 0) continue;
    const auto m = match_any(c.g, id, mapped_forms());
    if (!m) continue;
    const int map = (*m)["map"];
    const Node& mn = c.node(map);
    if (!c.dies_in_one_reader(map) || !groups.alone(map)) continue;
    const bool same = std::all_of(mn.inputs.begin(), mn.inputs.end(), [&](int in) {
      return c.node(in).shape == mn.shape && c.node(in).dtype == DType::f32;
    });
    if (same) groups.absorb(groups.owner(id), map, FusedAs::Map);
  }
}

}  // namespace meganeura::lower
