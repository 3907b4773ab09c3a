// Helpers shared by the rule files (rules.cpp, rules_attention.cpp): building e-nodes and
// reading a match's variables and analyses.
#pragma once
#include <cmath>
#include <vector>

#include "optimize/egraph.hpp"

namespace meganeura::optimize {

inline ClassId make(EGraph& g, Op op, std::vector<ClassId> children, const Attrs& a = {}) {
  return g.add(ENode{op, g.intern(a), -1, std::move(children)});
}
inline ClassId v(const Match& m, const char* name) { return m.vars.at(name); }
inline const ClassData& d(const EGraph& g, const Match& m, const char* name) { return g.data(v(m, name)); }
inline bool is_const(const EGraph& g, const Match& m, const char* name, double value) {
  const auto& c = d(g, m, name).constant;
  return c && *c == value;
}
// A scalar constant equal to value up to a relative 1e-6 (the graph stores f32 constants).
inline bool near_scalar(const EGraph& g, const Match& m, const char* name, double value) {
  const ClassData& cd = d(g, m, name);
  return cd.constant && numel(cd.shape) == 1 && std::abs(*cd.constant - value) <= 1e-6 * std::abs(value);
}
// The identity rules may only drop an operand when broadcasting did not change the shape.
// The attributes of the op node the pattern named `name` (Pattern::as), or of the matched root.
inline const Attrs& attrs_of(const EGraph& g, const Match& m, const std::string& name) {
  return g.attrs(m.node(name).attrs);
}
inline const Attrs& root_attrs(const EGraph& g, const Match& m) { return g.attrs(m.nodes.front()->attrs); }
inline bool keeps_shape(const EGraph& g, const Match& m) { return d(g, m, "x").shape == g.data(m.root).shape; }

// The attention fusions (rules_attention.cpp).
void add_attention_rules(std::vector<Rewrite>& r);

}  // namespace meganeura::optimize
