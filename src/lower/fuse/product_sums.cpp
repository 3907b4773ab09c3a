// Sums of matmul products, one dispatch each. A backward's d x adds a product per projection
// that read x: dq·Wq + dk·Wk + dv·Wv, d gate·Wg + d up·Wu, built by autodiff and the e-graph as
// matmul, matmul_add and add nodes that read one another. Each of those would run as a dispatch
// of its own, behind a barrier; as one product over the K ranges of all of them (A_j side by
// side in one packed tensor, B_j where their weights already share storage) they take one
// split-K dispatch (kernel_abi.hpp MatMulParams: kgroups). Runs last: it takes only nodes that
// no other pass claimed.
#include <algorithm>
#include <set>

#include "kernels/kernel_abi.hpp"
#include "lower/fuse/pass.hpp"
#include "lower/packing.hpp"

namespace meganeura::lower {

namespace {

struct Terms {
  std::vector<int> products;  // whose A·B are added
  std::vector<int> others;    // addends that are not products
  std::vector<int> inner;     // absorbed nodes (adds and products below the root)
};

struct Finder {
  const PassContext& c;
  const Grouping& groups;

  // A plain product whose A·B a sum may take: no transposes, no batch (a [.., M, K] A whose
  // leading dims are 1), K a multiple of 32 (a K step never straddles two products), f32.
  bool plain_product(int id) const {
    const Node& n = c.node(id);
    if ((n.op != Op::MatMul && n.op != Op::MatMulAdd) || n.attrs.transpose_a || n.attrs.transpose_b) return false;
    if (n.dtype != DType::f32 || numel(n.shape) != n.shape[n.shape.size() - 2] * n.shape.back()) return false;
    const Shape& a = c.node(n.inputs[0]).shape;
    const Shape& b = c.node(n.inputs[1]).shape;
    return a.back() % 32 == 0 && b.size() == 2 && numel(a) == n.shape[n.shape.size() - 2] * a.back();
  }
  // A node whose value only the sum needs.
  bool absorbable(int id, const Shape& shape) const {
    return groups.alone(id) && c.dies_in_one_reader(id) && c.node(id).shape == shape;
  }
  // The terms of node `id` (a product, a matmul_add or an add).
  void collect(int id, const Shape& shape, Terms& t) const {
    const Node& n = c.node(id);
    auto addend = [&](int x) {
      const Op op = c.node(x).op;
      if (absorbable(x, shape) && (op == Op::Add || plain_product(x))) {
        t.inner.push_back(x);
        collect(x, shape, t);
      } else {
        t.others.push_back(x);
      }
    };
    if (n.op == Op::Add) {
      addend(n.inputs[0]);
      addend(n.inputs[1]);
      return;
    }
    t.products.push_back(id);
    if (n.op == Op::MatMulAdd) addend(n.inputs[2]);
  }
};

// Every product's A is the whole of a storage of its own (packed side by side), every B lies in
// one storage (a matmul group's packed weights): their roots, or empty.
std::vector<int> a_storage(const PassContext& c, const std::vector<int>& products, const std::set<int>& packed) {
  const Lowered& out = c.out;
  const Node& first = c.node(products[0]);
  const int64_t M = first.shape[first.shape.size() - 2], N = first.shape.back();
  const int b_root = out.root(first.inputs[1]);
  std::vector<int> roots;
  for (int p : products) {
    const Node& pn = c.node(p);
    const int a = pn.inputs[0], ar = out.root(a);
    const TensorDesc& d = out.tensors[static_cast<size_t>(ar)];
    const bool ok = pn.shape.back() == N && pn.shape[pn.shape.size() - 2] == M && out.root(pn.inputs[1]) == b_root &&
                    out.offset_in_root(pn.inputs[1]) % 16 == 0 && d.role == Role::Intermediate && !d.output &&
                    (ar >= c.g.size() || !c.uses.kept[static_cast<size_t>(ar)]) && out.offset_in_root(a) == 0 &&
                    d.bytes == static_cast<uint64_t>(numel(c.node(a).shape)) * 4 &&
                    std::find(roots.begin(), roots.end(), ar) == roots.end() && !packed.count(ar);
    if (!ok) return {};
    roots.push_back(ar);
  }
  return roots;
}

// A tensor holding the A storages side by side, each viewing its place in it.
void pack_a(Lowered& out, const std::vector<int>& roots) {
  out.tensors.push_back(TensorDesc{});
  const int pack = static_cast<int>(out.tensors.size()) - 1;
  uint64_t fill = 0;
  for (int ar : roots) {
    TensorDesc& d = out.tensors[static_cast<size_t>(ar)];
    d.alias_of = pack;
    d.alias_offset = fill;
    fill = pack_offset(fill + d.bytes);
  }
  out.tensors[static_cast<size_t>(pack)].bytes = fill;
}

}  // namespace

void product_sums(PassContext& c, Grouping& groups) {
  // The summed dispatch finishes its split-K sum in the kernel (the summing pass takes one
  // product) on the tiled or tensor-core tier.
  if (!c.options.matmul.split_finish || c.options.matmul.force == "gemv") return;
  Finder finder{c, groups};
  std::set<int> packed;                           // an A's storage joins one pack at most
  for (int id = c.g.size() - 1; id >= 0; --id) {  // from the last: the largest sum first
    const Node& root = c.node(id);
    if ((root.op != Op::Add && root.op != Op::MatMulAdd) || root.dtype != DType::f32 || !groups.alone(id)) continue;
    if (root.op == Op::MatMulAdd && !finder.plain_product(id)) continue;
    Terms t;
    finder.collect(id, root.shape, t);
    if (t.products.size() < 2 || t.products.size() > kernels::kMatMulMaxGroups || t.others.size() > 1) continue;
    if (root.shape[root.shape.size() - 2] <= 4) continue;  // a GEMV product: its own dispatch reads B once either way
    const std::vector<int> roots = a_storage(c, t.products, packed);
    if (roots.empty()) continue;
    pack_a(c.out, roots);
    packed.insert(roots.begin(), roots.end());
    const int sum = groups.merge(Archetype::ProductSum, id, t.products);
    for (int x : t.inner)
      if (std::find(t.products.begin(), t.products.end(), x) == t.products.end())
        groups.absorb(sum, x, FusedAs::Summed);
    groups.group(sum).reads = t.others;
  }
}

}  // namespace meganeura::lower
