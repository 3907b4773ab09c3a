// Graph <-> e-graph. Leaves keep their source node; everything else is an e-node of its op,
// interned attributes and child classes.
#include <cstring>
#include <functional>
#include <optional>

#include "meganeura/ops.hpp"
#include "optimize/optimize.hpp"

namespace meganeura::optimize {

EGraph to_egraph(const Graph& g, std::vector<ClassId>& class_of) {
  EGraph eg(&g);
  class_of.assign(static_cast<size_t>(g.size()), 0);
  for (int id = 0; id < g.size(); ++id) {
    const Node& n = g.node(id);
    ENode e;
    e.op = n.op;
    e.attrs = eg.intern(n.attrs);
    if (op_kind(n.op) == OpKind::Leaf) e.leaf = id;
    for (int in : n.inputs) e.children.push_back(class_of[static_cast<size_t>(in)]);
    class_of[static_cast<size_t>(id)] = eg.add(std::move(e));
  }
  eg.rebuild();
  return eg;
}

std::unique_ptr<Graph> to_graph(const EGraph& eg, const Extraction& ex, const std::vector<ClassId>& roots,
                                std::vector<int>& root_ids, const std::unordered_map<ClassId, std::string>& scopes) {
  const Graph& src = *eg.source();
  auto out = std::make_unique<Graph>();
  std::unordered_map<int, Tensor> leaves;  // source leaf id -> new tensor
  for (int id = 0; id < src.size(); ++id) {
    const Node& n = src.node(id);
    if (n.op == Op::Input)
      leaves[id] = out->input(n.name, n.shape, n.dtype);
    else if (n.op == Op::Parameter)
      leaves[id] =
          n.trainable ? out->parameter(n.name, n.shape, n.dtype, n.init) : out->buffer(n.name, n.shape, n.init);
    else if (n.op == Op::State)
      leaves[id] = out->state(n.name, n.shape, n.dtype);
  }
  std::unordered_map<ClassId, Tensor> built;
  std::function<Tensor(ClassId)> build = [&](ClassId c) -> Tensor {
    c = eg.find(c);
    if (auto it = built.find(c); it != built.end()) return it->second;
    const ENode& e = ex.best.at(c);
    Tensor t;
    if (e.leaf >= 0) {
      const Node& n = src.node(e.leaf);
      if (auto it = leaves.find(e.leaf); it != leaves.end())
        t = it->second;
      else if (n.dtype == i32)
        t = out->constant(std::span(reinterpret_cast<const int32_t*>(n.constant.data()), n.constant.size() / 4),
                          n.shape);
      else
        t = out->constant(std::span(reinterpret_cast<const float*>(n.constant.data()), n.constant.size() / 4), n.shape);
    } else if (e.op == Op::Constant) {  // a scalar a rule introduced
      t = out->scalar(static_cast<float>(*eg.data(c).constant));
    } else {
      std::vector<Tensor> in;
      for (ClassId child : e.children) in.push_back(build(child));
      auto scope = scopes.find(c);
      std::optional<Graph::Scope> guard;
      if (scope != scopes.end()) guard.emplace(out->scope(scope->second));
      t = out->add(e.op, std::move(in), eg.attrs(e.attrs));
    }
    built[c] = t;
    return t;
  };
  root_ids.clear();
  for (ClassId r : roots) root_ids.push_back(build(r).id());
  return out;
}

}  // namespace meganeura::optimize
