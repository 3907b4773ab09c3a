// E-matching: top-down search of a pattern over every class. A pattern node tries each e-node
// of the class with its op (and passing its attribute guard), then its children against the
// node's child classes; variables bind a class on first sight and must see the same class
// again. Backtracking runs over an explicit goal stack, so matched e-nodes come out in
// pattern pre-order and no per-match closures are allocated.
#include <limits>

#include "optimize/egraph.hpp"

namespace meganeura::optimize {

namespace {

constexpr ClassId kUnbound = std::numeric_limits<ClassId>::max();

// The pattern flattened: variables numbered, children as indices (no string compares while
// matching).
struct Flat {
  int var = -1;
  const Pattern* p = nullptr;
  std::vector<int> kids;
};

struct Matcher {
  const EGraph& g;
  std::vector<Flat> flat;
  std::vector<std::string> names;
  std::vector<std::string> captured;  // each op node's capture name, in pre-order (as `nodes`)
  std::vector<ClassId> binding;
  std::vector<std::pair<int, ClassId>> goals;  // (flat index, class) still to match
  std::vector<const ENode*> nodes;
  std::vector<Match>& out;
  size_t limit;
  ClassId root = 0;

  int flatten(const Pattern& p) {
    int id = static_cast<int>(flat.size());
    flat.push_back({});
    flat[id].p = &p;
    if (!p.var.empty()) {
      int v = 0;
      while (v < static_cast<int>(names.size()) && names[v] != p.var) ++v;
      if (v == static_cast<int>(names.size())) names.push_back(p.var);
      flat[id].var = v;
      return id;
    }
    captured.push_back(p.name);
    for (const Pattern& c : p.children) {
      int k = flatten(c);
      flat[id].kids.push_back(k);
    }
    return id;
  }

  void emit() {
    Match m;
    m.root = root;
    for (size_t v = 0; v < names.size(); ++v) m.vars.emplace(names[v], binding[v]);
    m.nodes = nodes;
    for (size_t k = 0; k < captured.size(); ++k)
      if (!captured[k].empty()) m.named.emplace(captured[k], nodes[k]);
    out.push_back(std::move(m));
  }

  // Returns false once the limit is reached (stop searching).
  bool solve() {
    if (goals.empty()) {
      emit();
      return out.size() < limit;
    }
    auto goal = goals.back();
    goals.pop_back();
    bool go_on = true;
    const Flat& f = flat[goal.first];
    ClassId c = g.find(goal.second);
    if (f.var >= 0) {
      ClassId& b = binding[f.var];
      if (b == kUnbound) {
        b = c;
        go_on = solve();
        b = kUnbound;
      } else if (b == c) {
        go_on = solve();
      }
    } else {
      const Pattern& p = *f.p;
      for (const ENode& n : g.nodes(c)) {
        if (n.op != p.op || n.children.size() != f.kids.size()) continue;
        if (p.attr_guard && !p.attr_guard(g.attrs(n.attrs))) continue;
        nodes.push_back(&n);
        size_t mark = goals.size();
        for (size_t k = f.kids.size(); k-- > 0;) goals.emplace_back(f.kids[k], n.children[k]);
        go_on = solve();
        goals.resize(mark);
        nodes.pop_back();
        if (!go_on) break;
      }
    }
    goals.push_back(goal);
    return go_on;
  }
};

}  // namespace

std::vector<Match> search(const EGraph& g, const Pattern& p, size_t limit) {
  std::vector<Match> out;
  if (limit == 0) return out;
  Matcher m{g, {}, {}, {}, {}, {}, {}, out, limit};
  m.flatten(p);
  m.binding.assign(m.names.size(), kUnbound);
  for (ClassId c : g.classes()) {
    if (m.flat[0].var < 0) {  // cheap pre-filter: the class must hold an e-node with the root op
      bool any = false;
      for (const ENode& n : g.nodes(c)) any |= n.op == p.op;
      if (!any) continue;
    }
    m.root = c;
    m.goals.assign(1, {0, c});
    if (!m.solve()) break;
  }
  return out;
}

std::vector<Match> search(const EGraph& g, const Pattern& p) {
  return search(g, p, std::numeric_limits<size_t>::max());
}

}  // namespace meganeura::optimize
