#include "lower/pairs.hpp"

#include <algorithm>

#include "lower/emit.hpp"

namespace meganeura::lower {

std::vector<int> pair_nodes(const Graph& g, const std::vector<bool>& live, const std::function<bool(int, int)>& match) {
  const size_t n = static_cast<size_t>(g.size());
  // The first kernel reading each node's bytes: a view's readers read its input.
  std::vector<std::vector<int>> readers(n);
  for (int id = 0; id < g.size(); ++id)
    if (live[static_cast<size_t>(id)])
      for (int in : g.node(id).inputs) readers[static_cast<size_t>(in)].push_back(id);
  std::vector<int> first_use(n, g.size());
  for (int id = g.size() - 1; id >= 0; --id)
    for (int r : readers[static_cast<size_t>(id)])
      first_use[static_cast<size_t>(id)] =
          std::min(first_use[static_cast<size_t>(id)], is_view(g, g.node(r)) ? first_use[static_cast<size_t>(r)] : r);
  auto ready_at = [&](int b, int a) {
    return std::all_of(g.node(b).inputs.begin(), g.node(b).inputs.end(), [&](int in) { return in < a; });
  };
  std::vector<int> partner(n, -1);
  for (int a = 0; a < g.size(); ++a) {
    if (!live[static_cast<size_t>(a)] || partner[static_cast<size_t>(a)] != -1 || numel(g.node(a).shape) == 0) continue;
    for (int b = a + 1; b < g.size(); ++b) {
      if (!live[static_cast<size_t>(b)] || partner[static_cast<size_t>(b)] != -1 || numel(g.node(b).shape) == 0 || !match(a, b))
        continue;
      if (ready_at(b, a)) {
        partner[static_cast<size_t>(a)] = b;
        partner[static_cast<size_t>(b)] = kEmittedWithPartner;
        break;
      }
      if (first_use[static_cast<size_t>(a)] > b) {
        partner[static_cast<size_t>(b)] = a;
        partner[static_cast<size_t>(a)] = kEmittedWithPartner;
        break;
      }
    }
  }
  return partner;
}

NodeUses node_uses(const Graph& g, const std::vector<bool>& live, const std::vector<int>& keep) {
  NodeUses u{std::vector<std::vector<int>>(static_cast<size_t>(g.size())), std::vector<bool>(static_cast<size_t>(g.size()), false)};
  for (int id : keep) u.kept[static_cast<size_t>(id)] = true;
  for (int id = 0; id < g.size(); ++id)
    if (live[static_cast<size_t>(id)])
      for (int in : g.node(id).inputs) u.readers[static_cast<size_t>(in)].push_back(id);
  return u;
}

bool dies_in_one_reader(const NodeUses& uses, const Lowered& out, int id) {
  const auto i = static_cast<size_t>(id);
  return uses.readers[i].size() == 1 && !uses.kept[i] && !out.tensors[i].output;
}

namespace {

// Each function below claims nodes another emission computes (partner[n] = kEmittedWithPartner)
// and records, by the emitting node, what it computes.
struct Claim {
  const Graph& g;
  const std::vector<bool>& live;
  const NodeUses& uses;
  const Lowered& out;
  const std::vector<MatMulGroup>& groups;
  const std::vector<int>& group_of;
  const std::vector<int>& fused_group_of;
  Fusions& f;
  bool is_live(int id) const { return live[static_cast<size_t>(id)]; }
  // Its value is needed by nothing but the one reader computing it.
  bool dies_in_one_reader(int id) const { return lower::dies_in_one_reader(uses, out, id); }
  bool unfused(int id) const { return fused_group_of[static_cast<size_t>(id)] < 0; }
  int group(int id) const { return group_of.empty() ? -1 : group_of[static_cast<size_t>(id)]; }
  void claim(int id) { f.partner[static_cast<size_t>(id)] = kEmittedWithPartner; }
};

// An add of a norm backward's d x (read by nothing else) and a tensor of its shape: the norm
// backward adds it as it stores, at the add's place (the residual stream's gradient).
void norm_backward_adds(Claim& c) {
  for (int id = 0; id < c.g.size(); ++id) {
    const Node& n = c.g.node(id);
    if (n.op != Op::Add || !c.is_live(id) || !c.unfused(id) || n.dtype != DType::f32 || n.inputs[0] == n.inputs[1]) continue;
    for (int nb : n.inputs) {
      const Node& b = c.g.node(nb);
      const Node& other = c.g.node(nb == n.inputs[0] ? n.inputs[1] : n.inputs[0]);
      if ((b.op == Op::RmsNormBackward || b.op == Op::LayerNormBackward) && c.dies_in_one_reader(nb) && b.shape == n.shape &&
          other.shape == n.shape && other.dtype == DType::f32 && c.f.partner[static_cast<size_t>(nb)] == -1) {
        c.f.norm_of_add[static_cast<size_t>(id)] = nb;
        c.claim(nb);
        break;
      }
    }
  }
}

// sum/mean(a * b) where nothing else reads the product (attention backward's delta), and
// sum/mean/max(|a|) where nothing else reads |a| (a norm, a checksum): one reduction mapping it.
void mapped_reductions(Claim& c) {
  for (int id = 0; id < c.g.size(); ++id) {
    const Node& n = c.g.node(id);
    if ((n.op != Op::Sum && n.op != Op::Mean && n.op != Op::Max) || !c.is_live(id) || n.dtype != DType::f32) continue;
    const int m = n.inputs[0];
    const Node& mn = c.g.node(m);
    const bool mapped = (mn.op == Op::Mul && n.op != Op::Max) || mn.op == Op::Abs;
    if (!mapped || !c.dies_in_one_reader(m) || !c.unfused(m) || c.f.partner[static_cast<size_t>(m)] != -1) continue;
    const bool same = std::all_of(mn.inputs.begin(), mn.inputs.end(), [&](int in) {
      return c.g.node(in).shape == mn.shape && c.g.node(in).dtype == DType::f32;
    });
    if (!same) continue;
    c.f.map_of_reduce[static_cast<size_t>(id)] = m;
    c.claim(m);
  }
}

// A group of two (gate, up) whose swiglu(gate, up) reads nothing else runs that swiglu too.
void group_swiglus(Claim& c) {
  for (int id = 0; id < c.g.size(); ++id) {
    const Node& n = c.g.node(id);
    if (n.op != Op::SwiGlu || !c.is_live(id) || !c.unfused(id) || n.dtype != DType::f32) continue;
    const int grp = c.group(n.inputs[0]);
    if (grp < 0 || c.groups[static_cast<size_t>(grp)].members != n.inputs || c.f.glu_of_group[static_cast<size_t>(grp)] >= 0 ||
        c.g.node(n.inputs[0]).shape != n.shape)
      continue;
    c.f.glu_of_group[static_cast<size_t>(grp)] = id;
    c.claim(id);
  }
}

// A q/k rotary pair whose inputs are two products of one group (through reshapes), with cos
// and sin computed before the group: the group's emission computes the pair.
void group_rotaries(Claim& c) {
  const Graph& g = c.g;
  auto product = [&](int x) {  // x (or what it reshapes) as (group, index among the members), or (-1, -1)
    if (g.node(x).op == Op::Reshape) x = g.node(x).inputs[0];
    const int grp = c.group(x);
    if (grp < 0) return std::pair{-1, -1};
    const std::vector<int>& m = c.groups[static_cast<size_t>(grp)].members;
    return std::pair{grp, static_cast<int>(std::find(m.begin(), m.end(), x) - m.begin())};
  };
  for (int a = 0; a < g.size(); ++a) {
    const int b = c.f.partner[static_cast<size_t>(a)];
    if (g.node(a).op != Op::Rotary || b < 0 || g.node(a).attrs.count != 0 || g.node(b).attrs.count != 0) continue;
    const auto [grp, pa] = product(g.node(a).inputs[0]);
    const auto [grp_b, pb] = product(g.node(b).inputs[0]);
    if (grp < 0 || grp_b != grp || pa == pb || c.f.rotary_of_group[static_cast<size_t>(grp)].node[0] >= 0) continue;
    const std::vector<int>& members = c.groups[static_cast<size_t>(grp)].members;
    auto whole = [&](int r, int prod) {  // the rotary covers all of the product, in f32
      return g.node(r).dtype == DType::f32 && numel(g.node(r).shape) == numel(g.node(members[static_cast<size_t>(prod)]).shape);
    };
    if (!whole(a, pa) || !whole(b, pb) || g.node(a).inputs[1] >= members[0] || g.node(a).inputs[2] >= members[0]) continue;
    GroupRotary& r = c.f.rotary_of_group[static_cast<size_t>(grp)];
    r.node[0] = a;
    r.node[1] = b;
    r.product[0] = static_cast<uint32_t>(pa);
    r.product[1] = static_cast<uint32_t>(pb);
    c.claim(a);  // b already is
  }
}

// An rms_norm whose only readers are the A of one group, or of products that each run alone,
// on the GEMV tier (a decoding step's few rows): the GEMV normalises as it loads.
void gemv_norms(Claim& c, const LowerOptions& options) {
  if (!options.matmul.gemv || !(options.matmul.force.empty() || options.matmul.force == "gemv")) return;
  const Graph& g = c.g;
  for (int r = 0; r < g.size(); ++r) {
    const Node& n = g.node(r);
    if (n.op != Op::RmsNorm || n.inputs.size() != 2 || !c.is_live(r) || n.dtype != DType::f32 || n.shape.size() < 2 ||
        n.shape[n.shape.size() - 2] > 4 || c.uses.kept[static_cast<size_t>(r)] || c.out.tensors[static_cast<size_t>(r)].output)
      continue;
    const std::vector<int>& products = c.uses.readers[static_cast<size_t>(r)];  // a node reading r twice fails as_a
    const bool as_a = !products.empty() && std::all_of(products.begin(), products.end(), [&](int id) {
      const Node& m = g.node(id);
      return (m.op == Op::MatMul || m.op == Op::MatMulAdd || m.op == Op::Linear) && m.inputs[0] == r &&
             std::count(m.inputs.begin(), m.inputs.end(), r) == 1 && !m.attrs.transpose_a;
    });
    if (!as_a) continue;
    const int grp = c.group(products[0]);
    const bool grouped = grp >= 0 && c.groups[static_cast<size_t>(grp)].members == products;
    const bool alone = std::all_of(products.begin(), products.end(), [&](int id) { return c.group(id) < 0; });
    if (!grouped && !alone) continue;
    if (c.f.partner[static_cast<size_t>(r)] == kEmittedWithPartner)  // taken back from its producer's summing pass
      c.f.partner[static_cast<size_t>(n.inputs[0])] = -1;
    c.claim(r);
    for (int id : grouped ? std::vector<int>{products[0]} : products) c.f.norm_a_of[static_cast<size_t>(id)] = r;
  }
}

}  // namespace

Fusions find_fusions(const Graph& g, const std::vector<bool>& live, const NodeUses& uses, const Lowered& out,
                     const std::vector<MatMulGroup>& groups, const std::vector<int>& group_of,
                     const std::vector<int>& fused_group_of, const LowerOptions& options) {
  const size_t n = static_cast<size_t>(g.size());
  Fusions f{std::vector<int>(n, -1), std::vector<int>(n, -1), std::vector<int>(n, -1), std::vector<int>(n, -1),
            std::vector<int>(groups.size(), -1), std::vector<GroupRotary>(groups.size()), {}, {}, {}};
  if (!options.fuse) return f;
  for (const std::vector<int>& pairs :
       {pair_rotaries(g, live), pair_attention_grads(g, live), pair_matmul_norms(g, live, group_of)})
    for (size_t i = 0; i < n; ++i)
      if (pairs[i] != -1) f.partner[i] = pairs[i];
  Claim c{g, live, uses, out, groups, group_of, fused_group_of, f};
  norm_backward_adds(c);
  mapped_reductions(c);
  group_swiglus(c);
  group_rotaries(c);
  gemv_norms(c, options);
  return f;
}

}  // namespace meganeura::lower
