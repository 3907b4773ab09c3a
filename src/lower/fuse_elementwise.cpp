// Finds the groups of elementwise nodes that run as one generated kernel (see the header).
#include "lower/fuse_elementwise.hpp"

#include <algorithm>
#include <queue>

#include "util/env.hpp"

namespace meganeura::lower {

namespace {

bool word_dtype(DType t) { return t == DType::f32 || t == DType::i32 || t == DType::u32; }

// Whether the node can be computed inside a generated pointwise kernel at all.
bool fusible(const Graph& g, int id) {
  const Node& n = g.node(id);
  switch (op_kind(n.op)) {
    case OpKind::Unary: case OpKind::Binary: case OpKind::Compare: case OpKind::Select: case OpKind::Convert: break;
    default: return false;
  }
  if (!word_dtype(n.dtype) || numel(n.shape) == 0 || n.shape.size() > static_cast<size_t>(kernels::kMaxKernelRank))
    return false;
  for (int in : n.inputs)
    if (!word_dtype(g.node(in).dtype)) return false;  // 16-bit casts stay with their own kernel
  return true;
}

class GroupBuilder {
 public:
  GroupBuilder(const Graph& g, const std::vector<std::vector<int>>& consumers, const std::vector<bool>& pinned,
               const std::vector<int>& group_of)
      : g_(g), consumers_(consumers), pinned_(pinned), group_of_(group_of), in_group_(group_of.size(), false) {}

  // Grows a group from `root` over its inputs, highest id first: every consumer of a node has a
  // higher id, so when a node is considered, all of its consumers that will ever join already have.
  FusionGroup grow(int root) {
    FusionGroup grp;
    grp.root = root;
    std::vector<int> members{root};
    in_group_[static_cast<size_t>(root)] = true;
    std::priority_queue<int> frontier;
    for (int in : g_.node(root).inputs) frontier.push(in);
    int last = -1;
    while (!frontier.empty()) {
      const int m = frontier.top();
      frontier.pop();
      if (m == last) continue;  // pushed by several members
      last = m;
      if (!joins(m, root, members)) continue;
      members.push_back(m);
      in_group_[static_cast<size_t>(m)] = true;
      for (int in : g_.node(m).inputs) frontier.push(in);
    }
    std::sort(members.begin(), members.end());
    grp.inputs = inputs_of(members);
    for (int m : members) in_group_[static_cast<size_t>(m)] = false;  // ready for the next group
    grp.members = std::move(members);
    return grp;
  }

 private:
  bool joins(int m, int root, const std::vector<int>& members) {
    if (group_of_[static_cast<size_t>(m)] >= 0 || pinned_[static_cast<size_t>(m)] || !fusible(g_, m)) return false;
    if (g_.node(m).shape != g_.node(root).shape) return false;  // members share the root's index space
    for (int c : consumers_[static_cast<size_t>(m)])
      if (!in_group_[static_cast<size_t>(c)]) return false;  // someone else reads it: it must be stored
    std::vector<int> with = members;
    with.push_back(m);
    in_group_[static_cast<size_t>(m)] = true;
    const bool fits = inputs_of(with).size() <= kernels::kPointwiseMaxInputs;
    in_group_[static_cast<size_t>(m)] = false;
    return fits;
  }

  // Distinct nodes outside the group that members read, ordered by the members (ascending ids).
  std::vector<int> inputs_of(std::vector<int> members) const {
    std::sort(members.begin(), members.end());
    std::vector<int> out;
    for (int m : members)
      for (int in : g_.node(m).inputs)
        if (!in_group_[static_cast<size_t>(in)] && std::find(out.begin(), out.end(), in) == out.end()) out.push_back(in);
    return out;
  }

  const Graph& g_;
  const std::vector<std::vector<int>>& consumers_;
  const std::vector<bool>& pinned_;
  const std::vector<int>& group_of_;
  std::vector<bool> in_group_;
};

}  // namespace

bool fusion_allowed_by_env() { return util::env_on("MEGANEURA_FUSE_ELEMENTWISE"); }

Fusion find_fusion_groups(const Graph& g, const std::vector<bool>& live, const std::vector<bool>& pinned) {
  const auto n = static_cast<size_t>(g.size());
  std::vector<std::vector<int>> consumers(n);
  for (int id = 0; id < g.size(); ++id)
    if (live[static_cast<size_t>(id)])
      for (int in : g.node(id).inputs) consumers[static_cast<size_t>(in)].push_back(id);
  Fusion f;
  f.group_of.assign(n, -1);
  GroupBuilder builder(g, consumers, pinned, f.group_of);
  for (int root = g.size() - 1; root >= 0; --root) {
    if (!live[static_cast<size_t>(root)] || f.group_of[static_cast<size_t>(root)] >= 0 || !fusible(g, root)) continue;
    FusionGroup grp = builder.grow(root);
    if (grp.members.size() < 2) continue;  // nothing to save: the precompiled kernel runs it
    for (int m : grp.members) f.group_of[static_cast<size_t>(m)] = static_cast<int>(f.groups.size());
    f.groups.push_back(std::move(grp));
  }
  return f;
}

}  // namespace meganeura::lower
