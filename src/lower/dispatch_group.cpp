#include "lower/dispatch_group.hpp"

#include <algorithm>

#include "meganeura/error.hpp"

namespace meganeura::lower {

const char* archetype_name(Archetype a) {
  switch (a) {
    case Archetype::NoKernel: return "none";
    case Archetype::Elementwise: return "elementwise";
    case Archetype::Movement: return "movement";
    case Archetype::MatMul: return "matmul";
    case Archetype::Attention: return "attention";
    case Archetype::Reduce: return "reduce";
    case Archetype::Row: return "row";
    case Archetype::Rotary: return "rotary";
    case Archetype::Index: return "index";
    case Archetype::Backward: return "backward";
    case Archetype::NormBackward: return "norm_backward";
    case Archetype::Pointwise: return "pointwise";
    case Archetype::ProductSum: return "product_sum";
    case Archetype::Training: return "training";
  }
  return "?";
}

Archetype archetype_of(Op op) {
#define MN_ARCHETYPE_ROW(e, name, kind, lo, hi, rule, grad, lowering) Archetype::lowering,
  static constexpr Archetype kTable[] = {MN_OP_LIST(MN_ARCHETYPE_ROW)};
#undef MN_ARCHETYPE_ROW
  return kTable[static_cast<size_t>(op)];
}

const char* fused_as_name(FusedAs f) {
  switch (f) {
    case FusedAs::Partner: return "with";
    case FusedAs::Norm: return "norm";
    case FusedAs::NormA: return "norm as A";
    case FusedAs::Glu: return "glu";
    case FusedAs::Rotary: return "rotary";
    case FusedAs::Add: return "add";
    case FusedAs::Map: return "map";
    case FusedAs::Summed: return "summed";
    case FusedAs::Append: return "append";
  }
  return "?";
}

int DispatchGroup::extra(FusedAs as) const {
  for (const Fused& f : extras)
    if (f.as == as) return f.node;
  return -1;
}

static DispatchGroup make_group(Archetype archetype, int anchor, std::vector<int> nodes) {
  DispatchGroup grp;
  grp.archetype = archetype;
  grp.anchor = anchor;
  grp.nodes = std::move(nodes);
  return grp;
}

Grouping::Grouping(const Graph& g, const std::vector<bool>& live, const std::vector<bool>& view)
    : owner_(static_cast<size_t>(g.size()), -1) {
  for (int id = 0; id < g.size(); ++id) {
    const Archetype a = archetype_of(g.node(id).op);
    if (!live[static_cast<size_t>(id)] || a == Archetype::NoKernel || view[static_cast<size_t>(id)]) continue;
    owner_[static_cast<size_t>(id)] = static_cast<int>(groups_.size());
    groups_.push_back(make_group(a, id, {id}));
  }
  changed_.assign(groups_.size(), false);
}

bool Grouping::alone(int node) const {
  const int o = owner(node);
  if (o < 0) return false;
  const DispatchGroup& grp = group(o);
  return grp.anchor == node && grp.nodes.size() == 1 && grp.extras.empty();
}

void Grouping::take(int node) {
  const int o = owner(node);
  if (o < 0) throw Error("internal: lowering: %" + std::to_string(node) + " is in no group");
  DispatchGroup& grp = group(o);
  if (grp.anchor == node) grp.dead = true;
  std::erase(grp.nodes, node);
  std::erase_if(grp.extras, [&](const Fused& f) { return f.node == node; });
  owner_[static_cast<size_t>(node)] = -1;
  changed_[static_cast<size_t>(o)] = true;
}

int Grouping::merge(Archetype archetype, int anchor, std::vector<int> nodes) {
  const int index = static_cast<int>(groups_.size());
  if (std::find(nodes.begin(), nodes.end(), anchor) == nodes.end()) take(anchor);
  for (int n : nodes) take(n);
  owner_[static_cast<size_t>(anchor)] = index;
  for (int n : nodes) owner_[static_cast<size_t>(n)] = index;
  groups_.push_back(make_group(archetype, anchor, std::move(nodes)));
  changed_.push_back(true);
  return index;
}

void Grouping::absorb(int into, int node, FusedAs as, uint32_t slot) {
  take(node);
  owner_[static_cast<size_t>(node)] = into;
  group(into).extras.push_back({as, node, slot});
  changed_[static_cast<size_t>(into)] = true;
}

void Grouping::share(int into, int node, FusedAs as) {
  group(into).extras.push_back({as, node, 0});
  changed_[static_cast<size_t>(into)] = true;
}

std::vector<int> Grouping::take_changed() {
  std::vector<int> out;
  for (size_t i = 0; i < changed_.size(); ++i)
    if (changed_[i] && !groups_[i].dead) out.push_back(static_cast<int>(i));
  changed_.assign(groups_.size(), false);
  return out;
}

// Built by appending: GCC 12's -O3 warns (-Wrestrict, a false positive) on "literal" + string&&.
static std::string node_str(const Graph& g, int id) {
  const Node& n = g.node(id);
  std::string s = "%";
  s.append(std::to_string(id)).append(" ").append(op_name(n.op));
  const bool by_weight =
      archetype_of(n.op) == Archetype::MatMul && n.inputs.size() > 1 && g.node(n.inputs[1]).op == Op::Parameter;
  if (by_weight)
    s.append(" by ").append(g.node(n.inputs[1]).name);  // the projection it is
  else if (n.op == Op::OptimizerUpdate || n.op == Op::Accumulate)
    s.append(" of ").append(g.node(n.inputs[0]).name);
  else if (!n.name.empty())
    s.append(" (").append(n.name).append(")");
  return s;
}

std::string Grouping::describe(const Graph& g, int index) const {
  const DispatchGroup& grp = group(index);
  std::string s = "#";
  s.append(std::to_string(index)).append(" ").append(archetype_name(grp.archetype));
  s.append(" @%").append(std::to_string(grp.anchor)).append(":");
  for (size_t k = 0; k < grp.nodes.size(); ++k) s.append(k ? ", " : " ").append(node_str(g, grp.nodes[k]));
  for (const Fused& f : grp.extras) s.append(" + ").append(fused_as_name(f.as)).append(" ").append(node_str(g, f.node));
  if (grp.archetype == Archetype::Pointwise)
    s.append(" reading ").append(std::to_string(grp.reads.size())).append(" tensors");
  if (grp.archetype == Archetype::ProductSum && !grp.reads.empty())
    s.append(" + %").append(std::to_string(grp.reads[0]));
  return s;
}

std::vector<int> Grouping::emission_order() const {
  std::vector<int> order;
  for (size_t i = 0; i < groups_.size(); ++i)
    if (!groups_[i].dead) order.push_back(static_cast<int>(i));
  std::sort(order.begin(), order.end(), [&](int a, int b) { return group(a).anchor < group(b).anchor; });
  return order;
}

}  // namespace meganeura::lower
