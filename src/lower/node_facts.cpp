#include "lower/node_facts.hpp"

namespace meganeura::lower {

bool is_view(const Graph& g, const Node& n) {
  if (n.op == Op::Reshape) return true;
  if (n.op != Op::Permute) return false;
  const Shape& in = g.node(n.inputs[0]).shape;
  int64_t last = -1;
  for (int64_t axis : n.attrs.axes) {
    if (in[static_cast<size_t>(axis)] == 1) continue;
    if (axis < last) return false;
    last = axis;
  }
  return true;
}

bool writes_in_place(Op op) {
  return op == Op::CacheWrite || op == Op::Assign || op == Op::Accumulate || op == Op::ClipGradNorm ||
         op == Op::OptimizerUpdate;
}

// Marks every node some output depends on.
std::vector<bool> reaching(const Graph& g, const std::vector<int>& roots) {
  std::vector<bool> live(static_cast<size_t>(g.size()), false);
  for (int id : roots) live[static_cast<size_t>(id)] = true;
  for (int id = g.size() - 1; id >= 0; --id)
    if (live[static_cast<size_t>(id)])
      for (int in : g.node(id).inputs) live[static_cast<size_t>(in)] = true;
  return live;
}

NodeUses node_uses(const Graph& g, const std::vector<bool>& live, const std::vector<int>& keep) {
  NodeUses u{std::vector<std::vector<int>>(static_cast<size_t>(g.size())),
             std::vector<bool>(static_cast<size_t>(g.size()), false)};
  for (int id : keep) u.kept[static_cast<size_t>(id)] = true;
  for (int id = 0; id < g.size(); ++id)
    if (live[static_cast<size_t>(id)])
      for (int in : g.node(id).inputs) u.readers[static_cast<size_t>(in)].push_back(id);
  return u;
}

bool dies_in_one_reader(const NodeUses& uses, const Lowered& out, int id) {
  const auto i = static_cast<size_t>(id);
  return uses.readers[i].size() == 1 && !uses.kept[i] && !out.tensors[i].output;
}

}  // namespace meganeura::lower
