// Lowering: gives every live node a tensor (views alias their source), groups the nodes into
// dispatches (one per node, then the fusion passes of src/lower/fuse/ merge them) and emits each
// group's kernel calls at its anchor's place in graph order (src/lower/emit/).
#include <algorithm>
#include <cstdio>

#include "lower/dispatch_group.hpp"
#include "lower/emit/emitters.hpp"
#include "lower/fuse/pass.hpp"
#include "lower/node_facts.hpp"
#include "meganeura/error.hpp"

namespace meganeura::lower {

namespace {

std::vector<bool> live_nodes(const Graph& g, const std::vector<int>& keep) {
  std::vector<int> roots = keep;
  for (auto& [name, id] : g.outputs()) roots.push_back(id);
  roots.insert(roots.end(), g.effects().begin(), g.effects().end());
  return reaching(g, roots);
}

Role role_of(Op op) {
  switch (op) {
    case Op::Input: return Role::Input;
    case Op::Parameter: return Role::Parameter;
    case Op::Constant: return Role::Constant;
    case Op::State: return Role::State;
    default: return Role::Intermediate;
  }
}

// One tensor per node, in node order; views and cache writes share their input's bytes.
void describe_tensors(const Graph& g, const std::vector<bool>& live, const std::vector<bool>& view, Lowered& out) {
  out.tensors.resize(static_cast<size_t>(g.size()));
  for (auto& [name, id] : g.outputs()) out.tensors[static_cast<size_t>(id)].output = true;
  for (int id : g.effects()) out.tensors[static_cast<size_t>(id)].output = true;  // stored, never fused away
  for (int id = 0; id < g.size(); ++id) {
    const Node& n = g.node(id);
    TensorDesc& t = out.tensors[static_cast<size_t>(id)];
    t.node = id;
    t.bytes = std::max<uint64_t>((static_cast<uint64_t>(numel(n.shape)) * dtype_size(n.dtype) + 3) / 4 * 4, 4);
    if (n.op == Op::Attention) t.bytes += static_cast<uint64_t>(attention_lse_rows(n.shape)) * 4;
    t.role = role_of(n.op);
    if (view[static_cast<size_t>(id)] && live[static_cast<size_t>(id)])
      t.alias_of = n.inputs[0];                           // same bytes, new shape
    if (writes_in_place(n.op)) t.alias_of = n.inputs[0];  // the bytes it changes
  }
}

}  // namespace

Lowered lower(const Graph& g, const std::vector<int>& keep, const LowerOptions& options) {
  if (g.outputs().empty()) throw Error("the graph has no outputs: mark results with Graph::output(name, tensor)");
  Lowered out;
  const std::vector<bool> live = live_nodes(g, keep);
  std::vector<bool> view(static_cast<size_t>(g.size()));
  for (int id = 0; id < g.size(); ++id) view[static_cast<size_t>(id)] = is_view(g, g.node(id));
  describe_tensors(g, live, view, out);

  Grouping groups(g, live, view);
  const NodeUses uses = node_uses(g, live, keep);
  PassContext context{g, live, uses, out, options};
  run_passes(context, groups);

  // Effects (Graph::effects: assign) last: whatever else the step reads of the bytes they
  // overwrite comes first. An effect is stored (never a member of another group), so it anchors its own.
  std::vector<bool> effect(static_cast<size_t>(g.size()), false);
  for (int id : g.effects()) effect[static_cast<size_t>(id)] = true;
  std::vector<int> order = groups.emission_order();
  std::stable_partition(order.begin(), order.end(),
                        [&](int index) { return !effect[static_cast<size_t>(groups.group(index).anchor)]; });
  Emitter e(g, out, options, uses);
  for (int index : order) {
    const DispatchGroup& grp = groups.group(index);
    if (numel(g.node(grp.anchor).shape) == 0) continue;  // nothing to compute
    emit_group(e, grp);
  }
  if (options.log) {
    std::fprintf(stderr, "meganeura: lower: %zu calls from these groups, in order:\n", out.calls.size());
    for (int index : order) std::fprintf(stderr, "meganeura: lower:   %s\n", groups.describe(g, index).c_str());
  }
  // A tensor that is an output keeps the bytes of everything it views alive to the end.
  for (auto& [name, id] : g.outputs()) out.tensors[static_cast<size_t>(out.root(id))].output = true;
  for (int id : keep) out.tensors[static_cast<size_t>(out.root(id))].output = true;
  return out;
}

}  // namespace meganeura::lower
