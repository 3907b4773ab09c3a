// The e-graph core: union-find, hash-consing, merge and egg's deferred rebuild. Merges only
// queue the parents of the absorbed class; rebuild() re-canonicalises them, and a parent whose
// canonical form is already in the hash-cons table is congruent to it and gets merged (which
// queues more parents) until the worklist is empty.
#include "optimize/egraph.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <tuple>

#include "graph/op_table.hpp"
#include "meganeura/error.hpp"

namespace meganeura::optimize {

size_t ENodeHash::operator()(const ENode& n) const {
  uint64_t h = hash_mix(static_cast<uint64_t>(n.op), n.attrs);
  h = hash_mix(h, static_cast<uint64_t>(static_cast<int64_t>(n.leaf)));
  for (ClassId c : n.children) h = hash_mix(h, c);
  return static_cast<size_t>(h);
}

bool operator<(const ENode& a, const ENode& b) {
  return std::tie(a.op, a.attrs, a.leaf, a.children) < std::tie(b.op, b.attrs, b.leaf, b.children);
}

uint32_t EGraph::intern(const Attrs& a) {
  auto [it, inserted] = attr_ids_.try_emplace(a, static_cast<uint32_t>(attrs_.size()));
  if (inserted) attrs_.push_back(a);
  return it->second;
}

ClassId EGraph::find(ClassId id) const {
  while (uf_[id] != id) {
    uf_[id] = uf_[uf_[id]];  // path halving: keeps later finds O(α)
    id = uf_[id];
  }
  return id;
}

std::optional<ClassId> EGraph::lookup(ENode n) const {
  for (ClassId& c : n.children) c = find(c);
  auto it = memo_.find(n);
  if (it == memo_.end()) return std::nullopt;
  return find(it->second);
}

ENode EGraph::canonical(ENode n) const {
  for (ClassId& c : n.children) c = find(c);
  return n;
}

// The value of a leaf constant whose elements are all equal (a scalar, or a filled tensor).
static std::optional<double> uniform_value(const Node& node) {
  size_t count = static_cast<size_t>(numel(node.shape));
  if (count == 0 || node.constant.size() != count * dtype_size(node.dtype)) return std::nullopt;
  auto read = [&](size_t i) -> double {
    const std::byte* p = node.constant.data() + i * 4;
    if (node.dtype == f32) {
      float v;
      std::memcpy(&v, p, 4);
      return v;
    }
    if (node.dtype == i32) {
      int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
  };
  if (node.dtype != f32 && node.dtype != i32 && node.dtype != u32) return std::nullopt;
  double v0 = read(0);
  for (size_t i = 1; i < count; ++i)
    if (read(i) != v0) return std::nullopt;
  return v0;
}

// Constant folding over all-equal values: elementwise ops, views and reductions keep the
// "every element is v" property. Non-finite results are dropped (no rule should key on them).
std::optional<double> EGraph::fold(const ENode& n, const Shape& out) const {
  if (n.children.empty()) return std::nullopt;
  double v[2] = {0, 0};
  for (size_t i = 0; i < n.children.size() && i < 2; ++i) {
    const auto& c = classes_[find(n.children[i])].data.constant;
    if (!c) return std::nullopt;
    v[i] = *c;
  }
  if (n.children.size() > 2) return std::nullopt;
  const Attrs& a = attrs_[n.attrs];
  double r;
  switch (n.op) {
    case Op::Neg: r = -v[0]; break;
    case Op::Abs: r = std::fabs(v[0]); break;
    case Op::Exp: r = std::exp(v[0]); break;
    case Op::Log: r = std::log(v[0]); break;
    case Op::Sqrt: r = std::sqrt(v[0]); break;
    case Op::Rsqrt: r = 1 / std::sqrt(v[0]); break;
    case Op::Reciprocal: r = 1 / v[0]; break;
    case Op::Relu: r = v[0] > 0 ? v[0] : 0; break;
    case Op::Sigmoid: r = 1 / (1 + std::exp(-v[0])); break;
    case Op::Tanh: r = std::tanh(v[0]); break;
    case Op::Erf: r = std::erf(v[0]); break;
    case Op::Sin: r = std::sin(v[0]); break;
    case Op::Cos: r = std::cos(v[0]); break;
    case Op::PowScalar: r = std::pow(v[0], a.scalar); break;
    case Op::Add: r = v[0] + v[1]; break;
    case Op::Sub: r = v[0] - v[1]; break;
    case Op::Mul: r = v[0] * v[1]; break;
    case Op::Div: r = v[0] / v[1]; break;
    case Op::Maximum: r = std::max(v[0], v[1]); break;
    case Op::Minimum: r = std::min(v[0], v[1]); break;
    case Op::SwiGlu: r = v[0] / (1 + std::exp(-v[0])) * v[1]; break;
    case Op::Reshape:
    case Op::Permute:
    case Op::BroadcastTo:
    case Op::Slice:
    case Op::Mean:
    case Op::Max: r = v[0]; break;
    case Op::Sum: {  // each output element sums numel(in)/numel(out) copies of v
      int64_t in = numel(classes_[find(n.children[0])].data.shape), o = numel(out);
      if (o <= 0) return std::nullopt;
      r = v[0] * static_cast<double>(in / o);
      break;
    }
    case Op::Cast:
      if (!is_float(a.dtype)) return std::nullopt;
      r = v[0];
      break;
    default: return std::nullopt;
  }
  if (!std::isfinite(r)) return std::nullopt;
  return r;
}

ClassData EGraph::make_leaf(const ENode& n) const {
  ClassData d;
  if (n.leaf < 0) {  // add_scalar's constant: the value lives in the attributes
    if (n.op != Op::Constant) throw Error("internal error: e-graph leaf without a source node");
    d.constant = attrs_[n.attrs].scalar;
    return d;
  }
  if (!source_) throw Error("internal error: e-graph leaf %" + std::to_string(n.leaf) + " without a source graph");
  const Node& node = source_->node(n.leaf);
  d.shape = node.shape;
  d.dtype = node.dtype;
  if (n.op == Op::Constant) d.constant = uniform_value(node);
  return d;
}

ClassId EGraph::add(ENode n) {
  for (ClassId& c : n.children) c = find(c);
  if (auto it = memo_.find(n); it != memo_.end()) return find(it->second);
  ClassData d;
  if (op_kind(n.op) == OpKind::Leaf) {
    d = make_leaf(n);
  } else {
    std::vector<graph::InputType> inputs;
    inputs.reserve(n.children.size());
    for (ClassId c : n.children)
      inputs.push_back({classes_[c].data.shape, classes_[c].data.dtype, "e-class " + std::to_string(c)});
    Attrs a = attrs_[n.attrs];
    graph::OutType t = graph::infer(n.op, std::move(inputs), a, "e-graph " + std::string(op_name(n.op)));
    if (!(a == attrs_[n.attrs])) {
      // The rule normalised the attributes (negative axes, -1 in reshape): intern the normal
      // form so that equal nodes written differently hash-cons together.
      n.attrs = intern(a);
      if (auto it = memo_.find(n); it != memo_.end()) return find(it->second);
    }
    d.shape = std::move(t.shape);
    d.dtype = t.dtype;
    d.constant = fold(n, d.shape);
  }
  ClassId id = static_cast<ClassId>(classes_.size());
  uf_.push_back(id);
  for (size_t i = 0; i < n.children.size(); ++i) {
    ClassId c = n.children[i];
    // A node using one class twice (x*x) is one parent entry, not two.
    if (std::find(n.children.begin(), n.children.begin() + i, c) != n.children.begin() + i) continue;
    classes_[c].parents.emplace_back(n, id);
  }
  classes_.push_back(EClass{{n}, {}, std::move(d)});
  memo_.emplace(std::move(n), id);
  ++node_count_;
  ++live_classes_;
  return id;
}

ClassId EGraph::add_scalar(double value) {
  Attrs a;
  a.scalar = value;
  return add(ENode{Op::Constant, intern(a), -1, {}});
}

void EGraph::set_constant(ClassId root, double v) {
  classes_[root].data.constant = v;
  // Parents may fold now: queue them (rebuild re-folds every node it re-canonicalises).
  for (const auto& p : classes_[root].parents) pending_.push_back(p);
}

bool EGraph::merge(ClassId a, ClassId b) {
  a = find(a);
  b = find(b);
  if (a == b) return false;
  ClassData& da = classes_[a].data;
  ClassData& db = classes_[b].data;
  if (da.shape != db.shape || da.dtype != db.dtype)
    throw Error("internal error: e-graph merge of e-class " + std::to_string(a) + " " + shape_str(da.shape) + " " +
                std::string(dtype_name(da.dtype)) + " with e-class " + std::to_string(b) + " " + shape_str(db.shape) +
                " " + std::string(dtype_name(db.dtype)) + " (an unsound rewrite)");
  // Union by size: the class with more nodes and parents stays the root, fewer entries move.
  auto weight = [&](ClassId c) { return classes_[c].nodes.size() + classes_[c].parents.size(); };
  if (weight(a) < weight(b)) std::swap(a, b);
  EClass& root = classes_[a];
  EClass& gone = classes_[b];
  uf_[b] = a;
  --live_classes_;
  dirty_ = true;
  touched_.push_back(a);
  // Constants: keep the root's; if only the absorbed class had one, the root gains it.
  bool gained = !root.data.constant && gone.data.constant;
  if (gained) set_constant(a, *gone.data.constant);
  // The absorbed class's parents now point at a non-canonical id: re-canonicalise them later.
  pending_.insert(pending_.end(), gone.parents.begin(), gone.parents.end());
  root.nodes.insert(root.nodes.end(), std::make_move_iterator(gone.nodes.begin()),
                    std::make_move_iterator(gone.nodes.end()));
  root.parents.insert(root.parents.end(), std::make_move_iterator(gone.parents.begin()),
                      std::make_move_iterator(gone.parents.end()));
  gone = EClass{};
  return true;
}

void EGraph::rebuild() {
  while (!pending_.empty()) {
    auto [n, c] = std::move(pending_.back());
    pending_.pop_back();
    ENode cn = canonical(n);
    if (!(cn == n)) memo_.erase(n);  // a non-canonical key is never looked up again
    c = find(c);
    auto [it, inserted] = memo_.try_emplace(cn, c);
    if (!inserted && find(it->second) != c) {
      merge(it->second, c);  // congruence: same op, attrs and (now equal) children
      c = find(c);
    }
    it->second = c;
    if (!classes_[c].data.constant)
      if (auto v = fold(cn, classes_[c].data.shape)) set_constant(c, *v);
  }
  if (!dirty_) return;
  dirty_ = false;
  // Canonicalise every class's nodes (children may have merged anywhere) and drop duplicates.
  size_t count = 0;
  for (ClassId id = 0; id < classes_.size(); ++id) {
    if (uf_[id] != id) continue;
    auto& nodes = classes_[id].nodes;
    for (ENode& n : nodes)
      for (ClassId& c : n.children) c = find(c);
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    count += nodes.size();
  }
  node_count_ = count;
  // Parent lists of merged classes hold duplicates (one per congruent copy): dedupe them.
  std::sort(touched_.begin(), touched_.end());
  touched_.erase(std::unique(touched_.begin(), touched_.end()), touched_.end());
  for (ClassId t : touched_) {
    if (uf_[t] != t) continue;
    auto& ps = classes_[t].parents;
    for (auto& [n, c] : ps) {
      n = canonical(std::move(n));
      c = find(c);
    }
    std::sort(ps.begin(), ps.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    ps.erase(std::unique(ps.begin(), ps.end(), [](const auto& x, const auto& y) { return x.first == y.first; }),
             ps.end());
  }
  touched_.clear();
}

std::vector<ClassId> EGraph::classes() const {
  std::vector<ClassId> out;
  out.reserve(live_classes_);
  for (ClassId id = 0; id < uf_.size(); ++id)
    if (uf_[id] == id) out.push_back(id);
  return out;
}

const std::vector<ENode>& EGraph::nodes(ClassId c) const { return classes_[find(c)].nodes; }
const ClassData& EGraph::data(ClassId c) const { return classes_[find(c)].data; }
size_t EGraph::node_count() const { return node_count_; }
size_t EGraph::class_count() const { return live_classes_; }

}  // namespace meganeura::optimize
