#include "lower/horizontal.hpp"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <tuple>

#include "kernels/kernel_abi.hpp"
#include "kernels/log_topic.hpp"
#include "util/env.hpp"

namespace meganeura::lower {

namespace {


// A matmul that can join a group: live, plain, f32, B an f32 rank-2 parameter.
bool candidate(const Graph& g, const Node& n, bool live) {
  if (!live || n.op != Op::MatMul || numel(n.shape) == 0) return false;
  const Node& b = g.node(n.inputs[1]);
  return b.op == Op::Parameter && b.dtype == f32 && b.shape.size() == 2 && g.node(n.inputs[0]).dtype == f32;
}

// A tensor of `bytes` (the sum of its members' padded sizes) with the members viewing it.
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

bool horizontal_fusion_enabled() { return util::env_on("MEGANEURA_HORIZONTAL_FUSION"); }

std::vector<MatMulGroup> group_matmuls(const Graph& g, const std::vector<bool>& live, Lowered& out,
                                       std::vector<int>& group_of) {
  group_of.assign(static_cast<size_t>(g.size()), -1);
  // Same A, same transposes: the products differ only in B and N.
  std::map<std::tuple<int, bool, bool>, std::vector<int>> by_input;
  std::vector<bool> weight_taken(static_cast<size_t>(g.size()), false);
  for (int id = 0; id < g.size(); ++id) {
    const Node& n = g.node(id);
    if (!candidate(g, n, live[static_cast<size_t>(id)]) || weight_taken[static_cast<size_t>(n.inputs[1])]) continue;
    weight_taken[static_cast<size_t>(n.inputs[1])] = true;  // a weight joins one group at most
    by_input[{n.inputs[0], n.attrs.transpose_a, n.attrs.transpose_b}].push_back(id);
  }
  std::vector<MatMulGroup> groups;
  for (auto& [key, ids] : by_input)
    for (size_t first = 0; first + 1 < ids.size(); first += kernels::kMatMulMaxGroups) {
      MatMulGroup grp;
      grp.members.assign(ids.begin() + static_cast<std::ptrdiff_t>(first),
                         ids.begin() + static_cast<std::ptrdiff_t>(std::min(ids.size(), first + kernels::kMatMulMaxGroups)));
      if (grp.members.size() < 2) break;
      std::vector<int> weights;
      for (int m : grp.members) weights.push_back(g.node(m).inputs[1]);
      grp.weights = pack(out, weights, Role::Parameter);
      grp.outputs = pack(out, grp.members, Role::Intermediate);
      for (int m : grp.members) group_of[static_cast<size_t>(m)] = static_cast<int>(groups.size());
      groups.push_back(std::move(grp));
    }
  if (kernels::log_topic("optimize"))
    for (const MatMulGroup& grp : groups) {  // e.g. "matmuls sharing %12: q_proj.weight, k_proj.weight"
      std::string names;
      for (int m : grp.members) names += (names.empty() ? "" : ", ") + g.node(g.node(m).inputs[1]).name;
      std::fprintf(stderr, "meganeura: lower: one dispatch for the matmuls of %%%d by %s\n", g.node(grp.members[0]).inputs[0],
                   names.c_str());
    }
  return groups;
}

}  // namespace meganeura::lower
