// The optimize stage: graph -> e-graph -> equality saturation under limits -> cheapest program
// -> graph. It reads no environment: sessions decide whether it runs and print its Report
// (MEGANEURA_LOG=optimize, runtime/stage_options.hpp).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "meganeura/graph.hpp"
#include "optimize/egraph.hpp"

namespace meganeura::optimize {

struct Report {
  int nodes_before = 0, nodes_after = 0;  // graph nodes
  RunReport run;
  std::vector<std::pair<std::string, int>> fusions;  // fused op name -> count in the result
  std::string to_string() const;
};

// Returns an equivalent graph: same input, parameter and output names, shapes and dtypes.
// `keep` are extra nodes of g whose values must survive (their ids in the result go to
// keep_out, in order).
std::unique_ptr<Graph> optimize(const Graph& g, Report* report = nullptr, const std::vector<int>& keep = {},
                                std::vector<int>* keep_out = nullptr, const Limits& limits = {});

// The rules, in one place (src/optimize/rules.cpp).
const std::vector<Rewrite>& rules();

// Conversion (src/optimize/convert.cpp): every node of g becomes a class (class_of[id]).
EGraph to_egraph(const Graph& g, std::vector<ClassId>& class_of);
// Rebuilds a graph from the extraction: the source's inputs and parameters first (all of
// them, same names and order), then the chosen e-nodes the roots need; root_ids gets the
// new node id of each root. `scopes` names classes (the scope their source node was built in),
// so errors still quote the user's names.
std::unique_ptr<Graph> to_graph(const EGraph& eg, const Extraction& ex, const std::vector<ClassId>& roots,
                                std::vector<int>& root_ids,
                                const std::unordered_map<ClassId, std::string>& scopes = {});

}  // namespace meganeura::optimize
