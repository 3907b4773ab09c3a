// Cost-based extraction: per class, the e-node of least total cost (its own cost plus its
// children's best), found by a bottom-up fixed point. A node whose child has no finite cost yet
// is skipped, so cycles (x = reshape(reshape(x))) cannot hang it. Ties go to the shallower term,
// then to the smaller e-node in ENode order: deterministic, and the chosen nodes do not form a
// cycle (a parent's height is above its children's).
#include <algorithm>
#include <limits>

#include "optimize/egraph.hpp"

namespace meganeura::optimize {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

double bytes(const ClassData& d) {
  return static_cast<double>(numel(d.shape)) * static_cast<double>(dtype_size(d.dtype));
}

}  // namespace

double CostModel::node_cost(const EGraph& g, const ENode& n) const {
  // Leaves are already in memory; a reshape is a view of its input: neither moves a byte.
  if (op_kind(n.op) == OpKind::Leaf || n.op == Op::Reshape) return 0;
  auto cls = g.lookup(n);
  if (!cls) return kInf;  // not in this e-graph: never chosen
  const ClassData& out = g.data(*cls);
  double moved = bytes(out);
  double work = static_cast<double>(numel(out.shape));
  for (ClassId c : n.children) {
    const ClassData& in = g.data(c);
    moved += bytes(in);
    work = std::max(work, static_cast<double>(numel(in.shape)));  // reductions read more than they write
  }
  if (n.op == Op::MatMul || n.op == Op::Linear ||
      n.op == Op::MatMulAdd) {  // 2*M*N*K over the batch: out is [..., M, N], K from a
    const Shape& a = g.data(n.children[0]).shape;
    int64_t k = a.size() < 2 ? (a.empty() ? 1 : a[0]) : (g.attrs(n.attrs).transpose_a ? a[a.size() - 2] : a.back());
    work = 2.0 * static_cast<double>(numel(out.shape)) * static_cast<double>(k);
  }
  if (n.op == Op::Attention) {  // q·kᵀ and p·v: 2*Sq*Sk*(D + Dv) per head
    const Shape &q = g.data(n.children[0]).shape, &k = g.data(n.children[1]).shape;
    const double rows = static_cast<double>(numel(out.shape) / std::max<int64_t>(out.shape.back(), 1));
    const size_t seq_axis = k.size() - (g.attrs(n.attrs).seq_major ? 3 : 2);
    work = 2.0 * rows * static_cast<double>(k[seq_axis]) * static_cast<double>(q.back() + out.shape.back());
  }
  return moved + dispatch + flop * work;
}

double Extraction::cost(ClassId c) const {
  auto it = costs.find(c);
  return it == costs.end() ? kInf : it->second;
}

Extraction extract(const EGraph& g, const CostModel& model) {
  std::vector<ClassId> classes = g.classes();
  ClassId max_id = classes.empty() ? 0 : classes.back();
  std::vector<uint32_t> slot(static_cast<size_t>(max_id) + 1, 0);
  for (uint32_t i = 0; i < classes.size(); ++i) slot[classes[i]] = i;

  // Own cost of every e-node, once.
  std::vector<std::vector<double>> own(classes.size());
  for (uint32_t i = 0; i < classes.size(); ++i)
    for (const ENode& n : g.nodes(classes[i])) own[i].push_back(model.node_cost(g, n));

  struct Best {
    double cost = kInf;
    uint32_t height = 0;
    size_t node = SIZE_MAX;
  };
  std::vector<Best> best(classes.size());
  for (bool changed = true; changed;) {
    changed = false;
    for (uint32_t i = 0; i < classes.size(); ++i) {
      const auto& nodes = g.nodes(classes[i]);
      for (size_t j = 0; j < nodes.size(); ++j) {
        double total = own[i][j];
        uint32_t height = 0;
        for (ClassId c : nodes[j].children) {
          const Best& b = best[slot[g.find(c)]];
          total += b.cost;
          height = std::max(height, b.height + 1);
        }
        if (!(total < kInf)) continue;  // a child without a finite term yet (or a cycle)
        Best& cur = best[i];
        bool better =
            total < cur.cost || (total == cur.cost && (height < cur.height || (height == cur.height && j < cur.node)));
        if (better) {
          cur = {total, height, j};
          changed = true;
        }
      }
    }
  }

  Extraction ex;
  for (uint32_t i = 0; i < classes.size(); ++i) {
    if (best[i].node == SIZE_MAX) continue;
    ENode n = g.nodes(classes[i])[best[i].node];
    for (ClassId& c : n.children) c = g.find(c);
    ex.best.emplace(classes[i], std::move(n));
    ex.costs.emplace(classes[i], best[i].cost);
  }
  return ex;
}

}  // namespace meganeura::optimize
