// Optimizer updates of many parameters, one dispatch a pack: the parameters' storage is laid out
// one after another in a packed tensor, their gradients in another laid out alike (element for
// element), and their optimizer states and accumulated sums likewise, so that an update is one
// elementwise pass over the pack (what PyTorch's foreach and fused optimizers do over lists of
// tensors): SmolLM2's 273 update dispatches become 17. Each pack still starts as soon as its
// gradients are ready (the planner schedules by dependencies), beside the rest of the backward.
// A parameter joins when every parameter sharing its storage (a matmul group's packed weights)
// is updated with the same hyperparameters, and its gradient is a tensor of its own of the
// parameter's size.
#include <algorithm>
#include <map>
#include <set>

#include "lower/fuse/pass.hpp"
#include "lower/packing.hpp"

namespace meganeura::lower {

namespace {

// One update's operands (node ids): its parameter, gradient, accumulation and states.
struct Update {
  int node = -1, param = -1, grad = -1;
  int accumulate = -1, sum = -1;  // with accumulation: the accumulate node and its State sum
  std::vector<int> states;        // State leaves (momentum, or Adam's m and v)
};

Update operands(const Graph& g, int id) {
  const Node& n = g.node(id);
  Update u;
  u.node = id;
  u.param = n.inputs[0];
  u.grad = n.inputs[1];
  if (g.node(u.grad).op == Op::Accumulate) {
    u.accumulate = u.grad;
    u.sum = g.node(u.accumulate).inputs[0];
    u.grad = g.node(u.accumulate).inputs[1];
  }
  u.states.assign(n.inputs.begin() + 3, n.inputs.end());
  return u;
}

// A State leaf of the parameter's size that no pack holds yet.
bool free_state(const Lowered& out, const Graph& g, int id, uint64_t bytes) {
  const TensorDesc& t = out.tensors[static_cast<size_t>(id)];
  return g.node(id).op == Op::State && t.alias_of < 0 && t.bytes == bytes;
}

class Packer {
 public:
  Packer(PassContext& c, Grouping& groups) : c_(c), groups_(groups) {}

  // Whether the updates of one storage root may join a pack.
  bool packable(int root, const std::vector<Update>& members, size_t parameters_there) {
    const Lowered& out = c_.out;
    if (out.tensors[static_cast<size_t>(root)].role != Role::Parameter || parameters_there != members.size())
      return false;
    for (const Update& u : members) {
      const int grad = out.root(u.grad);
      const TensorDesc& gd = out.tensors[static_cast<size_t>(grad)];
      const uint64_t bytes = out.tensors[static_cast<size_t>(u.param)].bytes;
      bool ok = c_.node(u.node).attrs == c_.node(members[0].node).attrs && gd.role == Role::Intermediate &&
                out.offset_in_root(u.grad) == 0 && gd.bytes == bytes && grad_roots_.insert(grad).second &&
                (u.accumulate < 0 || (groups_.alone(u.accumulate) && free_state(out, c_.g, u.sum, bytes)));
      for (int s : u.states) ok = ok && free_state(out, c_.g, s, bytes);
      if (!ok) return false;
    }
    return true;
  }

  // Adds a unit (a storage root and its updates) to the pack being filled, closing it first
  // where the unit would make it larger than max_bytes.
  void add(int root, std::vector<Update> members, uint64_t max_bytes) {
    const uint64_t bytes = c_.out.tensors[static_cast<size_t>(root)].bytes;
    if (fill_ > 0 && fill_ + bytes > max_bytes) close();
    open_.push_back({root, fill_, std::move(members)});
    fill_ = pack_offset(fill_ + bytes);
  }

  // Lays out the open pack's tensors and makes its updates (and accumulations) one group each.
  void close() {
    if (open_.empty()) return;
    if (open_.size() > 1 || open_[0].members.size() > 1) make_pack();  // else nothing to share a dispatch with
    open_.clear();
    fill_ = 0;
  }

 private:
  struct Unit {
    int root;
    uint64_t at;
    std::vector<Update> members;
  };

  int new_tensor(Role role) {
    TensorDesc t;
    t.bytes = fill_;
    t.role = role;
    t.output = role == Role::Intermediate;  // the gradients: read after the step
    c_.out.tensors.push_back(t);
    return static_cast<int>(c_.out.tensors.size()) - 1;
  }
  void place(int tensor, int pack, uint64_t offset) {
    TensorDesc& t = c_.out.tensors[static_cast<size_t>(c_.out.root(tensor))];
    t.alias_of = pack;
    t.alias_offset = offset;
  }

  void make_pack() {
    const Update& first = open_[0].members[0];
    const bool accumulating = first.accumulate >= 0;
    const int params = new_tensor(Role::Parameter), grads = new_tensor(Role::Intermediate);
    const int sums = accumulating ? new_tensor(Role::State) : -1;
    std::vector<int> states;
    for (size_t s = 0; s < first.states.size(); ++s) states.push_back(new_tensor(Role::State));
    std::vector<int> updates, accumulations;
    for (const Unit& unit : open_) {
      for (const Update& u : unit.members) {
        const uint64_t offset = unit.at + c_.out.offset_in_root(u.param);  // before the root moves
        place(u.grad, grads, offset);
        if (accumulating) place(u.sum, sums, offset);
        for (size_t s = 0; s < states.size(); ++s) place(u.states[s], states[s], offset);
        updates.push_back(u.node);
        if (accumulating) accumulations.push_back(u.accumulate);
      }
      place(unit.root, params, unit.at);
    }
    std::vector<int> update_packs = {params, accumulating ? sums : grads};
    update_packs.insert(update_packs.end(), states.begin(), states.end());
    group(updates, update_packs);
    if (accumulating) group(accumulations, {sums, grads});
  }

  void group(const std::vector<int>& nodes, std::vector<int> packs) {
    const int anchor = *std::min_element(nodes.begin(), nodes.end());
    groups_.group(groups_.merge(Archetype::Training, anchor, nodes)).packs = std::move(packs);
  }

  PassContext& c_;
  Grouping& groups_;
  std::set<int> grad_roots_;
  std::vector<Unit> open_;
  uint64_t fill_ = 0;
};

}  // namespace

void update_packs(PassContext& c, Grouping& groups) {
  if (c.options.update_pack_bytes == 0) return;
  std::map<int, size_t> parameters_in;  // storage root -> how many graph parameters live there
  for (int id = 0; id < c.g.size(); ++id)
    if (c.node(id).op == Op::Parameter) ++parameters_in[c.out.root(id)];
  std::map<int, std::vector<Update>> units;  // by storage root: deterministic order
  for (int id = 0; id < c.g.size(); ++id)
    if (c.node(id).op == Op::OptimizerUpdate && groups.alone(id)) {
      Update u = operands(c.g, id);
      units[c.out.root(u.param)].push_back(u);
    }
  // Greedy, in storage order, one run of packs per set of hyperparameters (an lr multiplier).
  std::map<std::vector<double>, std::vector<int>> by_values;
  Packer packer(c, groups);
  for (auto& [root, members] : units)
    if (packer.packable(root, members, parameters_in[root]))
      by_values[c.node(members[0].node).attrs.values].push_back(root);
  for (auto& [values, roots] : by_values) {
    for (int root : roots) packer.add(root, units[root], c.options.update_pack_bytes);
    packer.close();
  }
}

}  // namespace meganeura::lower
