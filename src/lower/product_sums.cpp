// Sums of matmul products, one dispatch each. A backward's d x adds a product per projection
// that read x: dq·Wq + dk·Wk + dv·Wv, d gate·Wg + d up·Wu, built by autodiff and the e-graph as
// matmul, matmul_add and add nodes that read one another. Each of those runs as a dispatch of
// its own, behind a barrier; as one product over the K ranges of all of them (A_j side by side
// in one packed tensor, B_j where their weights already share storage) they take one split-K
// dispatch (kernel_abi.hpp MatMulParams: kgroups).
#include <algorithm>
#include <set>

#include "lower/emit.hpp"
#include "lower/pairs.hpp"

namespace meganeura::lower {

namespace {

struct Finder {
  const Graph& g;
  const std::vector<bool>& live;
  const NodeUses& uses;
  const Lowered& out;
  const std::vector<int>& group_of;
  const std::vector<int>& fused_group_of;
  const Fusions& f;

  // A plain product whose A·B a sum may take: no transposes, no batch (a [.., M, K] A whose
  // leading dims are 1), K a multiple of 32 (a K step never straddles two products), f32.
  bool plain_product(int id) const {
    const Node& n = g.node(id);
    if ((n.op != Op::MatMul && n.op != Op::MatMulAdd) || n.attrs.transpose_a || n.attrs.transpose_b) return false;
    if (n.dtype != DType::f32 || numel(n.shape) != n.shape[n.shape.size() - 2] * n.shape.back()) return false;
    const Shape& a = g.node(n.inputs[0]).shape;
    const Shape& b = g.node(n.inputs[1]).shape;
    return a.back() % 32 == 0 && b.size() == 2 && numel(a) == n.shape[n.shape.size() - 2] * a.back();
  }
  // A node no other fusion of lowering computes or takes.
  bool unclaimed(int id) const {
    const auto i = static_cast<size_t>(id);
    return live[i] && f.partner[i] == -1 && f.norm_of_add[i] < 0 && f.map_of_reduce[i] < 0 && f.norm_a_of[i] < 0 &&
           fused_group_of[i] < 0 && (group_of.empty() || group_of[i] < 0) && !f.in_sum[i];
  }
  // A node whose value only the sum needs.
  bool absorbable(int id, const Shape& shape) const {
    return unclaimed(id) && dies_in_one_reader(uses, out, id) && g.node(id).shape == shape;
  }
  // The terms of node `id` (a product, a matmul_add or an add): products into `products`, the
  // rest into `others`; absorbed nodes into `inner`.
  void terms(int id, const Shape& shape, ProductSum& s, std::vector<int>& others, std::vector<int>& inner) const {
    const Node& n = g.node(id);
    auto addend = [&](int x) {
      const Op op = g.node(x).op;
      if (absorbable(x, shape) && (op == Op::Add || (plain_product(x)))) {
        inner.push_back(x);
        terms(x, shape, s, others, inner);
      } else {
        others.push_back(x);
      }
    };
    if (n.op == Op::Add) {
      addend(n.inputs[0]);
      addend(n.inputs[1]);
      return;
    }
    s.products.push_back(id);
    if (n.op == Op::MatMulAdd) addend(n.inputs[2]);
  }
};

}  // namespace

void find_product_sums(const Graph& g, const std::vector<bool>& live, const NodeUses& uses, Lowered& out,
                       const std::vector<int>& group_of, const std::vector<int>& fused_group_of,
                       const LowerOptions& options, Fusions& f) {
  const auto n = static_cast<size_t>(g.size());
  f.sum_of.assign(n, -1);
  f.in_sum.assign(n, false);
  // The summed dispatch finishes its split-K sum in the kernel (the summing pass takes one
  // product) on the tiled or tensor-core tier.
  if (!options.fuse || !options.matmul.split_finish || options.matmul.force == "gemv") return;
  Finder finder{g, live, uses, out, group_of, fused_group_of, f};
  std::set<int> packed_roots;  // an A's storage joins one pack at most
  for (int id = g.size() - 1; id >= 0; --id) {  // from the last: the largest sum first
    const auto i = static_cast<size_t>(id);
    const Node& root = g.node(id);
    if ((root.op != Op::Add && root.op != Op::MatMulAdd) || root.dtype != DType::f32 || !finder.unclaimed(id)) continue;
    if (root.op == Op::MatMulAdd && !finder.plain_product(id)) continue;
    ProductSum s;
    std::vector<int> others, inner;
    finder.terms(id, root.shape, s, others, inner);
    if (s.products.size() < 2 || s.products.size() > kernels::kMatMulMaxGroups || others.size() > 1) continue;
    const int64_t M = root.shape[root.shape.size() - 2], N = root.shape.back();
    if (M <= 4) continue;  // a GEMV product: its own dispatch reads B once either way
    // Every product's A is the whole of a storage of its own (packed side by side below), every
    // B lies in one storage (a horizontally fused group's packed weights).
    bool ok = true;
    std::vector<int> a_roots;  // each product's A storage, in product order
    const int b_root = out.root(g.node(s.products[0]).inputs[1]);
    for (int p : s.products) {
      const Node& pn = g.node(p);
      const int a = pn.inputs[0], ar = out.root(a);
      const TensorDesc& d = out.tensors[static_cast<size_t>(ar)];
      ok = ok && pn.shape.back() == N && pn.shape[pn.shape.size() - 2] == M && out.root(pn.inputs[1]) == b_root &&
           out.offset_in_root(pn.inputs[1]) % 16 == 0 && d.role == Role::Intermediate && !d.output &&
           (ar >= g.size() || !uses.kept[static_cast<size_t>(ar)]) && out.offset_in_root(a) == 0 &&
           d.bytes == static_cast<uint64_t>(numel(g.node(a).shape)) * 4 &&
           std::find(a_roots.begin(), a_roots.end(), ar) == a_roots.end() && !packed_roots.count(ar);
      a_roots.push_back(ar);
    }
    if (!ok) continue;
    TensorDesc pack;
    out.tensors.push_back(pack);
    const int pack_id = static_cast<int>(out.tensors.size()) - 1;
    uint64_t fill = 0;
    for (int ar : a_roots) {
      TensorDesc& d = out.tensors[static_cast<size_t>(ar)];
      d.alias_of = pack_id;
      d.alias_offset = fill;
      fill = pack_offset(fill + d.bytes);
      packed_roots.insert(ar);
    }
    out.tensors[static_cast<size_t>(pack_id)].bytes = fill;
    s.residual = others.empty() ? -1 : others[0];
    f.sum_of[i] = static_cast<int>(f.sums.size());
    f.sums.push_back(std::move(s));
    for (int x : inner) f.in_sum[static_cast<size_t>(x)] = true;
  }
}

}  // namespace meganeura::lower
