// Matmuls that read the same A with f32 weight parameters as B (a transformer's q/k/v or gate/up
// projections) run as one dispatch. Their weights stay the user's parameters (save, load and
// read_parameter see their names) but are laid out one after another in a packed tensor, and
// their outputs likewise, so that the grouped kernel binds one B and one C and indexes each
// product's part by offset. A lowering decision, not an e-graph rewrite: one e-class holds one
// value, and a group has several.
#include <algorithm>
#include <map>
#include <tuple>

#include "kernels/kernel_abi.hpp"
#include "lower/fuse/pass.hpp"
#include "lower/packing.hpp"

namespace meganeura::lower {

namespace {

// A matmul that can join a group: plain, f32, B an f32 rank-2 parameter.
bool candidate(const Graph& g, const Grouping& groups, int id) {
  const Node& n = g.node(id);
  if (n.op != Op::MatMul || !groups.alone(id) || numel(n.shape) == 0) return false;
  const Node& b = g.node(n.inputs[1]);
  return b.op == Op::Parameter && b.dtype == f32 && b.shape.size() == 2 && g.node(n.inputs[0]).dtype == f32;
}

// A tensor holding `members` one after another (each padded to kPackAlignment), which they view.
int pack(Lowered& out, const std::vector<int>& members, Role role) {
  TensorDesc packed;
  packed.role = role;
  for (int m : members) {
    TensorDesc& t = out.tensors[static_cast<size_t>(m)];
    t.alias_of = static_cast<int>(out.tensors.size());
    t.alias_offset = packed.bytes;
    packed.bytes += pack_offset(t.bytes);
  }
  out.tensors.push_back(packed);
  return static_cast<int>(out.tensors.size()) - 1;
}

}  // namespace

void matmul_siblings(PassContext& c, Grouping& groups) {
  if (!c.options.group_matmuls) return;
  const Graph& g = c.g;
  // Same A, same transposes: the products differ only in B and N. A weight appears once a list.
  std::map<std::tuple<int, bool, bool>, std::vector<int>> by_input;
  for (int id = 0; id < g.size(); ++id) {
    const Node& n = g.node(id);
    if (!candidate(g, groups, id)) continue;
    std::vector<int>& ids = by_input[{n.inputs[0], n.attrs.transpose_a, n.attrs.transpose_b}];
    if (std::none_of(ids.begin(), ids.end(), [&](int m) { return g.node(m).inputs[1] == n.inputs[1]; }))
      ids.push_back(id);
  }
  // Weights are packed once: a second group of the same weights in the same order (a generator's
  // decoding step beside its prefill) shares the packing; other arrangements stay ungrouped.
  std::map<std::vector<int>, int> packed_weights;
  std::vector<bool> weight_packed(static_cast<size_t>(g.size()), false);
  for (auto& [key, ids] : by_input)
    for (size_t first = 0; first + 1 < ids.size(); first += kernels::kMatMulMaxGroups) {
      const size_t last = std::min(ids.size(), first + kernels::kMatMulMaxGroups);
      std::vector<int> members(ids.begin() + static_cast<std::ptrdiff_t>(first),
                               ids.begin() + static_cast<std::ptrdiff_t>(last));
      if (members.size() < 2) break;
      std::vector<int> weights;
      for (int m : members) weights.push_back(g.node(m).inputs[1]);
      auto packed = packed_weights.find(weights);
      if (packed == packed_weights.end()) {
        if (std::any_of(weights.begin(), weights.end(), [&](int w) { return weight_packed[static_cast<size_t>(w)]; }))
          continue;
        for (int w : weights) weight_packed[static_cast<size_t>(w)] = true;
        packed = packed_weights.emplace(weights, pack(c.out, weights, Role::Parameter)).first;
      }
      const int packed_c = pack(c.out, members, Role::Intermediate);
      DispatchGroup& grp = groups.group(groups.merge(Archetype::MatMul, members[0], members));
      grp.packed_b = packed->second;
      grp.packed_c = packed_c;
    }
}

}  // namespace meganeura::lower
