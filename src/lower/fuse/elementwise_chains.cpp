// Chains of elementwise nodes whose intermediate values nobody else needs run as ONE generated
// kernel (kernels/pointwise_source.hpp) instead of one dispatch and one tensor round trip per
// node. A member is an elementwise node (unary, binary, compare, where, 32-bit cast; autodiff's
// gelu/silu backward) with 32-bit dtypes and exactly the root's shape; a member other than the
// root is not pinned (an output or a kept tensor) and has every consumer inside the group.
// Inputs may broadcast (a bias [N] into [B,M,N]) and may be views (reshapes); movement ops and
// 16-bit casts are never members. A chain reads at most kernels::kPointwiseMaxInputs tensors.
#include <algorithm>
#include <queue>

#include "kernels/pointwise_source.hpp"
#include "lower/fuse/pass.hpp"

namespace meganeura::lower {

namespace {

bool word_dtype(DType t) { return t == DType::f32 || t == DType::i32 || t == DType::u32; }

// Whether the node can be computed inside a generated pointwise kernel at all.
bool fusible(const Graph& g, const Grouping& groups, int id) {
  const Node& n = g.node(id);
  if (archetype_of(n.op) != Archetype::Elementwise || !groups.alone(id)) return false;
  if (!word_dtype(n.dtype) || numel(n.shape) == 0 || n.shape.size() > static_cast<size_t>(kernels::kMaxKernelRank))
    return false;
  return std::all_of(n.inputs.begin(), n.inputs.end(), [&](int in) { return word_dtype(g.node(in).dtype); });
}

class ChainBuilder {
 public:
  ChainBuilder(const PassContext& c, const Grouping& groups)
      : c_(c), groups_(groups), in_chain_(static_cast<size_t>(c.g.size()), false) {}

  // Grows a chain from `root` over its inputs, highest id first: every consumer of a node has a
  // higher id, so when a node is considered, all of its consumers that will ever join already have.
  std::vector<int> grow(int root) {
    std::vector<int> members{root};
    in_chain_[static_cast<size_t>(root)] = true;
    std::priority_queue<int> frontier;
    for (int in : c_.node(root).inputs) frontier.push(in);
    int last = -1;
    while (!frontier.empty()) {
      const int m = frontier.top();
      frontier.pop();
      if (m == last) continue;  // pushed by several members
      last = m;
      if (!joins(m, root, members)) continue;
      members.push_back(m);
      in_chain_[static_cast<size_t>(m)] = true;
      for (int in : c_.node(m).inputs) frontier.push(in);
    }
    std::sort(members.begin(), members.end());
    for (int m : members) in_chain_[static_cast<size_t>(m)] = false;  // ready for the next chain
    return members;
  }

  // Distinct nodes outside the chain that members read, ordered by the members (ascending ids).
  std::vector<int> inputs_of(std::vector<int> members) const {
    std::sort(members.begin(), members.end());
    std::vector<int> out;
    for (int m : members)
      for (int in : c_.node(m).inputs)
        if (!in_chain_[static_cast<size_t>(in)] && !std::binary_search(members.begin(), members.end(), in) &&
            std::find(out.begin(), out.end(), in) == out.end())
          out.push_back(in);
    return out;
  }

 private:
  bool joins(int m, int root, const std::vector<int>& members) {
    if (c_.pinned(m) || !fusible(c_.g, groups_, m)) return false;
    if (c_.node(m).shape != c_.node(root).shape) return false;  // members share the root's index space
    for (int reader : c_.uses.readers[static_cast<size_t>(m)])
      if (!in_chain_[static_cast<size_t>(reader)]) return false;  // someone else reads it: it must be stored
    std::vector<int> with = members;
    with.push_back(m);
    return inputs_of(with).size() <= kernels::kPointwiseMaxInputs;
  }

  const PassContext& c_;
  const Grouping& groups_;
  std::vector<bool> in_chain_;
};

}  // namespace

void elementwise_chains(PassContext& c, Grouping& groups) {
  if (!c.options.fuse_elementwise) return;
  ChainBuilder builder(c, groups);
  for (int root = c.g.size() - 1; root >= 0; --root) {
    if (!fusible(c.g, groups, root)) continue;
    std::vector<int> members = builder.grow(root);
    if (members.size() < 2) continue;  // nothing to save: the precompiled kernel runs it
    std::vector<int> reads = builder.inputs_of(members);
    groups.group(groups.merge(Archetype::Pointwise, root, std::move(members))).reads = std::move(reads);
  }
}

}  // namespace meganeura::lower
