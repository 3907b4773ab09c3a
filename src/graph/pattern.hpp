// The pattern vocabulary shared by the e-graph's rewrite rules (src/optimize/) and lowering's
// fusion passes (src/lower/fuse/): a tree of ops whose leaves are named variables. A variable
// ("x") matches any value and must see the same value wherever it appears; an op node matches a
// node of that op with exactly as many inputs as it has children, whose attributes pass its guard.
// Op nodes may be named (`as`), so that guards and rewrites read what matched by name.
#pragma once
#include <string>
#include <vector>

#include "meganeura/graph.hpp"

namespace meganeura::patterns {

struct Pattern {
  std::string var;  // non-empty: a variable
  Op op = Op::Input;
  std::vector<Pattern> children;
  bool (*attr_guard)(const Attrs&) = nullptr;
  std::string name;  // an op node's capture name, or empty

  // This op node, captured as `capture`.
  Pattern as(std::string capture) const {
    Pattern p = *this;
    p.name = std::move(capture);
    return p;
  }
};

inline Pattern var(std::string name) {
  Pattern p;
  p.var = std::move(name);
  return p;
}

inline Pattern node(Op op, std::vector<Pattern> children, bool (*attr_guard)(const Attrs&) = nullptr) {
  Pattern p;
  p.op = op;
  p.children = std::move(children);
  p.attr_guard = attr_guard;
  return p;
}

}  // namespace meganeura::patterns
