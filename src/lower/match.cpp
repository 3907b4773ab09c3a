#include "lower/match.hpp"

namespace meganeura::lower {

namespace {

bool bind(std::map<std::string, int>& at, const std::string& name, int id) {
  auto [it, fresh] = at.emplace(name, id);
  return fresh || it->second == id;  // a name seen twice must see the same node
}

bool walk(const Graph& g, int id, const Pattern& p, std::map<std::string, int>& at) {
  if (!p.var.empty()) return bind(at, p.var, id);
  const Node& n = g.node(id);
  if (n.op != p.op || n.inputs.size() != p.children.size()) return false;
  if (p.attr_guard && !p.attr_guard(n.attrs)) return false;
  if (!p.name.empty() && !bind(at, p.name, id)) return false;
  for (size_t k = 0; k < p.children.size(); ++k)
    if (!walk(g, n.inputs[k], p.children[k], at)) return false;
  return true;
}

}  // namespace

std::optional<NodeMatch> match(const Graph& g, int root, const Pattern& p) {
  NodeMatch m;
  m.root = root;
  if (!walk(g, root, p, m.at)) return std::nullopt;
  return m;
}

std::optional<NodeMatch> match_any(const Graph& g, int root, const std::vector<Pattern>& alternatives) {
  for (const Pattern& p : alternatives)
    if (auto m = match(g, root, p)) return m;
  return std::nullopt;
}

}  // namespace meganeura::lower
