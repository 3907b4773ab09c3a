// Patterns (graph/pattern.hpp) matched against the graph lowering walks: each node has one op,
// so a match is a tree walk from a root, binding each variable and each named op node to a node id.
#pragma once
#include <map>
#include <optional>
#include <string>

#include "graph/pattern.hpp"

namespace meganeura::lower {

using patterns::node;
using patterns::Pattern;
using patterns::var;

struct NodeMatch {
  int root = -1;
  std::map<std::string, int> at;  // variable or capture name -> node id
  int operator[](const std::string& name) const { return at.at(name); }
};

// The match of `p` rooted at node `root`, if any.
std::optional<NodeMatch> match(const Graph& g, int root, const Pattern& p);
// The first of `alternatives` that matches at `root` (e.g. an op and its mirror image).
std::optional<NodeMatch> match_any(const Graph& g, int root, const std::vector<Pattern>& alternatives);

}  // namespace meganeura::lower
