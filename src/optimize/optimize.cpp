#include "optimize/optimize.hpp"

#include <cstdio>
#include <map>
#include <sstream>

namespace meganeura::optimize {

std::string Report::to_string() const {
  std::ostringstream o;
  o << "optimize: " << nodes_before << " -> " << nodes_after << " nodes; e-graph " << run.nodes_before << " -> "
    << run.nodes_after << " e-nodes in " << run.classes_after << " classes, " << run.iterations << " iterations, "
    << static_cast<int>(run.seconds * 1e3 + 0.5) << " ms (" << run.stop_reason << ")";
  for (auto& [rule, n] : run.applied)
    if (n) o << "\n  rule " << rule << ": " << n;
  for (auto& [op, n] : fusions) o << "\n  fused " << op << ": " << n;
  return o.str();
}

std::unique_ptr<Graph> optimize(const Graph& g, Report* report, const std::vector<int>& keep,
                                std::vector<int>* keep_out, const Limits& limits) {
  std::vector<ClassId> class_of;
  EGraph eg = to_egraph(g, class_of);
  RunReport run_report = run(eg, rules(), limits);
  Extraction ex = extract(eg);
  std::vector<ClassId> roots;
  for (auto& [name, id] : g.outputs()) roots.push_back(class_of[static_cast<size_t>(id)]);
  for (int id : keep) roots.push_back(class_of[static_cast<size_t>(id)]);
  for (int id : g.effects()) roots.push_back(class_of[static_cast<size_t>(id)]);  // re-registered as built
  std::unordered_map<ClassId, std::string> scopes;  // first named source node of each class
  for (int id = 0; id < g.size(); ++id)
    if (const Node& n = g.node(id); !n.name.empty() && op_kind(n.op) != OpKind::Leaf)
      scopes.emplace(eg.find(class_of[static_cast<size_t>(id)]), n.name);
  std::vector<int> ids;
  std::unique_ptr<Graph> out = to_graph(eg, ex, roots, ids, scopes);
  size_t i = 0;
  for (auto& [name, id] : g.outputs()) out->output(name, Tensor{out.get(), ids[i++]});
  if (keep_out)
    keep_out->assign(ids.begin() + static_cast<int64_t>(g.outputs().size()),
                     ids.begin() + static_cast<int64_t>(g.outputs().size() + keep.size()));

  Report r;
  r.nodes_before = g.size();
  r.nodes_after = out->size();
  r.run = std::move(run_report);
  std::map<std::string, int> fused;
  auto count = [](const Graph& x, Op op) {
    int n = 0;
    for (const Node& node : x.nodes()) n += node.op == op;
    return n;
  };
  for (Op op : {Op::Silu, Op::RmsNorm, Op::LayerNorm, Op::Gelu, Op::GeluTanh, Op::Softmax, Op::SwiGlu, Op::Linear,
                Op::Attention})
    if (int gained = count(*out, op) - count(g, op); gained > 0)
      r.fusions.emplace_back(std::string(op_name(op)), gained);
  if (report) *report = std::move(r);
  return out;
}

}  // namespace meganeura::optimize
