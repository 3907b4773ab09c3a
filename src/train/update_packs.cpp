#include "train/update_packs.hpp"

#include <map>
#include <set>

#include "lower/packing.hpp"

namespace meganeura::train {

using lower::Role;

namespace {

// A parameter's storage (its root tensor) and the trained parameters in it.
struct Unit {
  int root;
  std::vector<size_t> members;
};

int add_root(lower::Lowered& low, uint64_t bytes, Role role) {
  lower::TensorDesc t;
  t.bytes = bytes;
  t.role = role;
  t.output = role == Role::Intermediate;  // the gradients: alive to the end of the step
  low.tensors.push_back(t);
  return static_cast<int>(low.tensors.size()) - 1;
}

}  // namespace

UpdatePlan pack_updates(const Graph& g, lower::Lowered& low, const std::vector<ParamGrad>& params,
                        const std::vector<float>& lr_scale, uint64_t max_bytes) {
  UpdatePlan plan;
  std::map<int, size_t> parameters_in;  // storage root -> how many graph parameters live there
  for (int id = 0; id < g.size(); ++id)
    if (g.node(id).op == Op::Parameter) ++parameters_in[low.root(id)];
  std::map<int, Unit> units;  // by root: deterministic order
  for (size_t i = 0; i < params.size(); ++i) {
    const int root = low.root(params[i].param);
    units.emplace(root, Unit{root, {}}).first->second.members.push_back(i);
  }

  std::set<int> grad_roots;
  std::vector<Unit> packable;
  for (auto& [root, unit] : units) {
    bool ok = low.tensors[static_cast<size_t>(root)].role == Role::Parameter && parameters_in[root] == unit.members.size();
    for (size_t i : unit.members) {
      const int grad = low.root(params[i].grad);
      const lower::TensorDesc& gd = low.tensors[static_cast<size_t>(grad)];
      ok = ok && lr_scale[i] == lr_scale[unit.members[0]] && gd.role == Role::Intermediate &&
           low.offset_in_root(params[i].grad) == 0 && gd.bytes == low.tensors[static_cast<size_t>(params[i].param)].bytes &&
           grad_roots.insert(grad).second;
    }
    if (ok) packable.push_back(unit);
    else plan.alone.insert(plan.alone.end(), unit.members.begin(), unit.members.end());
  }

  // Greedy, in storage order, one run of packs per lr scale.
  std::map<float, std::vector<const Unit*>> by_scale;
  for (const Unit& u : packable) by_scale[lr_scale[u.members[0]]].push_back(&u);
  for (auto& [scale, list] : by_scale) {
    std::vector<std::pair<const Unit*, uint64_t>> open;  // units of the pack being filled, at offsets
    uint64_t fill = 0;
    auto close = [&, scale = scale] {
      if (open.empty()) return;
      if (open.size() == 1 && open[0].first->members.size() == 1) {  // nothing to share a dispatch with
        plan.alone.push_back(open[0].first->members[0]);
      } else {
        UpdatePack pack;
        pack.lr_scale = scale;
        pack.bytes = fill;
        pack.params = add_root(low, fill, Role::Parameter);
        pack.grads = add_root(low, fill, Role::Intermediate);
        for (auto [unit, at] : open) {
          for (size_t i : unit->members) {
            const uint64_t offset = at + low.offset_in_root(params[i].param);  // before the root moves
            auto& grad = low.tensors[static_cast<size_t>(low.root(params[i].grad))];
            grad.alias_of = pack.grads;
            grad.alias_offset = offset;
            pack.members.push_back(i);
            pack.offset.push_back(offset);
          }
          auto& storage = low.tensors[static_cast<size_t>(unit->root)];
          storage.alias_of = pack.params;
          storage.alias_offset = at;
        }
        plan.packs.push_back(std::move(pack));
      }
      open.clear();
      fill = 0;
    };
    for (const Unit* u : list) {
      const uint64_t bytes = low.tensors[static_cast<size_t>(u->root)].bytes;
      if (fill > 0 && fill + bytes > max_bytes) close();
      open.push_back({u, fill});
      fill = lower::pack_offset(fill + bytes);
    }
    close();
  }
  return plan;
}

}  // namespace meganeura::train
