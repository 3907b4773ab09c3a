// The e-graph (equality saturation): e-classes of equivalent e-nodes over the op table's term
// language, kept canonical by a union-find, hash-consing and deferred congruence rebuilding
// (egg's design). No Vulkan, no lowering: it sees ops, attributes, shapes and dtypes.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/pattern.hpp"
#include "meganeura/graph.hpp"
#include "optimize/attrs_hash.hpp"

namespace meganeura::optimize {

using ClassId = uint32_t;

// An operator applied to e-classes. Attributes are interned (EGraph::intern) so e-nodes hash
// and compare cheaply; leaves (input, parameter, constant) keep the id of their graph node.
struct ENode {
  Op op;
  uint32_t attrs = 0;  // EGraph::attrs(id); 0 is Attrs{}
  int32_t leaf = -1;   // Input/Parameter/Constant: the source graph node
  std::vector<ClassId> children;
  bool operator==(const ENode&) const = default;
};

struct ENodeHash {
  size_t operator()(const ENode& n) const;
};

// The analysis every class carries: its type, and its value when it is a known scalar constant.
struct ClassData {
  Shape shape;
  DType dtype = f32;
  std::optional<double> constant;  // rank-0 (or all-equal) constant value, when known
};

class EGraph {
 public:
  explicit EGraph(const Graph* source = nullptr) : source_(source) {}

  uint32_t intern(const Attrs& a);
  const Attrs& attrs(uint32_t id) const { return attrs_[id]; }

  // Adds (or finds) an e-node; children are canonicalised first. Computes the class data with
  // the op table's shape rules; throws ShapeError if the node is ill-typed (rewrites check
  // their guards so this does not happen).
  ClassId add(ENode n);
  // A constant leaf holding a scalar (rank 0 f32), for rules that introduce constants. It is the
  // e-node {Op::Constant, attrs with .scalar = value, leaf = -1}: no source graph node.
  ClassId add_scalar(double value);

  ClassId find(ClassId id) const;
  // The class holding an e-node (children canonicalised first), if it is in the e-graph.
  std::optional<ClassId> lookup(ENode n) const;
  // Unions two classes; congruence is restored by rebuild(). Returns false if already one.
  bool merge(ClassId a, ClassId b);
  void rebuild();

  // Canonical classes and their e-nodes (valid after rebuild()).
  std::vector<ClassId> classes() const;
  const std::vector<ENode>& nodes(ClassId c) const;
  const ClassData& data(ClassId c) const;
  size_t node_count() const;
  size_t class_count() const;
  const Graph* source() const { return source_; }  // for leaves: names, constants

 private:
  struct EClass {
    std::vector<ENode> nodes;
    std::vector<std::pair<ENode, ClassId>> parents;  // e-nodes using this class, and their class
    ClassData data;
  };
  ClassData make_leaf(const ENode& n) const;                           // a leaf's type from the source graph
  std::optional<double> fold(const ENode& n, const Shape& out) const;  // its constant, if known
  ENode canonical(ENode n) const;
  void set_constant(ClassId root, double v);  // and queue the parents to re-fold

  const Graph* source_;
  std::vector<Attrs> attrs_{Attrs{}};
  std::unordered_map<Attrs, uint32_t, AttrsHash> attr_ids_{{Attrs{}, 0}};
  mutable std::vector<ClassId> uf_;                     // union-find parents; find() compresses paths
  std::vector<EClass> classes_;                         // by id; only roots are live
  std::unordered_map<ENode, ClassId, ENodeHash> memo_;  // hash-consing: canonical e-node -> class
  std::vector<std::pair<ENode, ClassId>> pending_;      // parents to re-canonicalise in rebuild()
  std::vector<ClassId> touched_;                        // roots that absorbed a class since the last rebuild
  size_t node_count_ = 0;
  size_t live_classes_ = 0;
  bool dirty_ = false;  // merged since the last rebuild
};

// Deterministic order on e-nodes (extraction ties, class node lists).
bool operator<(const ENode& a, const ENode& b);

// ---- patterns and rewrites ----------------------------------------------------------------------

// Patterns (graph/pattern.hpp): variables and op nodes, shared with lowering's passes.
using patterns::node;
using patterns::Pattern;
using patterns::var;

struct Match {
  ClassId root;
  std::unordered_map<std::string, ClassId> vars;
  std::vector<const ENode*> nodes;                      // the matched e-nodes, in pattern pre-order
  std::unordered_map<std::string, const ENode*> named;  // the e-nodes of named op nodes (Pattern::as)
  // The e-node that the op node named `name` matched.
  const ENode& node(const std::string& name) const { return *named.at(name); }
};

struct Rewrite {
  std::string name;
  Pattern lhs;
  // Extra conditions on the match (shapes, dtypes, constants): false skips it.
  bool (*guard)(const EGraph&, const Match&) = nullptr;
  // Builds the equivalent term and returns its class (merged with match.root by the runner),
  // or nullopt to skip.
  std::optional<ClassId> (*apply)(EGraph&, const Match&) = nullptr;
  bool explosive = false;  // scheduled with backoff (associativity, commutativity, ...)
};

std::vector<Match> search(const EGraph& g, const Pattern& p);
// Stops after `limit` matches (the runner's backoff only needs to know the limit was passed).
std::vector<Match> search(const EGraph& g, const Pattern& p, size_t limit);

// ---- running and extracting -------------------------------------------------------------------

struct Limits {
  size_t max_nodes = 200000;
  int max_iterations = 32;
  double max_seconds = 0.25;
  size_t match_limit = 1000;  // backoff: an explosive rule over this many matches is banned
  int ban_length = 4;         // ... for this many iterations, doubling on each ban
};

struct RunReport {
  int iterations = 0;
  size_t nodes_before = 0, nodes_after = 0, classes_after = 0;
  double seconds = 0;
  std::string stop_reason;                           // "saturated", "node limit", "iteration limit", "time limit"
  std::vector<std::pair<std::string, int>> applied;  // rule name -> unions it caused
};

RunReport run(EGraph& g, const std::vector<Rewrite>& rules, const Limits& limits);

// Cost of one e-node given its class data and its children's costs: the extraction picks, per
// class, the e-node of least total cost (bottom-up to a fixed point).
struct CostModel {
  double dispatch = 2000;                                   // fixed cost of one dispatch, in bytes-equivalents
  double flop = 0.05;                                       // per flop, in bytes-equivalents
  double node_cost(const EGraph& g, const ENode& n) const;  // bytes moved + dispatch + flops
};

struct Extraction {
  std::unordered_map<ClassId, ENode> best;  // canonical class -> chosen e-node
  double cost(ClassId c) const;
  std::unordered_map<ClassId, double> costs;
};
Extraction extract(const EGraph& g, const CostModel& model = {});

}  // namespace meganeura::optimize
