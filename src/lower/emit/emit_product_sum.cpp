// One dispatch for a sum of products (fuse/product_sums.cpp): K groups over the packed A_j and
// the B_j's shared storage, split-K finished in the kernel, the leftover addend as residual.
#include <algorithm>
#include <numeric>

#include "lower/emit/emitters.hpp"
#include "meganeura/error.hpp"

namespace meganeura::lower {

using namespace kernels;

void emit_product_sum(Emitter& e, const DispatchGroup& grp) {
  const int id = grp.anchor;
  const std::vector<int>& products = grp.nodes;
  const int residual = grp.reads.empty() ? -1 : grp.reads[0];
  const Node& n = e.node(id);
  const int64_t M = n.shape[n.shape.size() - 2], N = n.shape.back();
  const Lowered& low = e.lowered();
  const int a_pack = low.root(e.node(products[0]).inputs[0]);  // every A's storage is in it
  const int b_root = low.root(e.node(products[0]).inputs[1]);
  MatMulParams p{};
  p.M = u32(M, "matmul M");
  p.batch = 1;
  p.a_col_stride = 1;
  p.groups = 1;
  p.N[0] = u32(N, "matmul N");
  p.b_row_stride[0] = p.N[0];
  p.b_col_stride[0] = 1;
  p.kgroups = static_cast<uint32_t>(products.size());
  std::string what = "sum of";
  bool vec_b = N % 4 == 0;
  uint32_t k = 0;
  for (size_t j = 0; j < products.size(); ++j) {
    const Node& pn = e.node(products[j]);
    const int a = pn.inputs[0];
    const auto kj = u32(e.node(a).shape.back(), "matmul K");
    const auto a_at = u32(low.offset_in_root(a) / 4, "packed A offset");
    const auto b_at = u32(low.offset_in_root(pn.inputs[1]) / 4, "weight offset");
    p.k_begin[j] = k;
    p.ka_shift[j] = a_at - k;  // mod 2^32: the kernel adds k back
    p.ka_row[j] = kj;
    p.kb_shift[j] = b_at - k * p.N[0];
    vec_b = vec_b && b_at % 4 == 0;
    k += kj;
    what += (j ? " + %" : " %") + std::to_string(products[j]);
  }
  p.K = k;
  p.a_row_stride = p.ka_row[0];
  const bool has_res = residual >= 0;
  if (has_res) {
    p.r_row_stride = p.N[0];
    p.r_col_stride = 1;
    what += " + %" + std::to_string(residual);
  }
  uint64_t k_align = 0;  // a K step must not cross from one product to the next
  for (size_t j = 0; j < products.size(); ++j) k_align = std::gcd(k_align, uint64_t{p.ka_row[j]});
  const MatMulPlan plan = plan_matmul(staging_in_kernel(e.options().matmul), p.M, p.N[0], p.K, 1, false, k_align);
  if (!is_coop(plan.kernel) && plan.kernel != Kernel::MatMul)
    throw Error("internal: sum of products %" + std::to_string(id) + " planned on a tier without K groups");
  p.tile0[1] = u32((p.N[0] + plan.tile_n - 1) / plan.tile_n, "matmul column tiles");
  p.splits = plan.splits;
  p.k_chunk = plan.k_chunk;
  p.split_stride = u32(M * N, "split-K partial size");
  const uint64_t row_tiles = (M + plan.tile_m - 1) / plan.tile_m;
  const bool split = plan.splits > 1;
  KernelCall& c =
      e.call(plan.kernel, id, what + (split ? ", split-K x" + std::to_string(plan.splits) + ", summed in-kernel" : ""));
  const int res = has_res ? residual : a_pack;
  c.tensors = {{a_pack, false}, {b_root, false}, {id, true}, {a_pack, false}, {res, false}};
  if (is_coop(plan.kernel)) c.tensors.push_back({id, true});  // binding 7: no GLU
  c.tensors.push_back({split ? e.scratch(uint64_t{p.split_stride} * plan.splits * 4) : id, true});
  c.tensors.push_back({split ? e.state(row_tiles * p.tile0[1] * 4) : id, true});
  if (is_coop(plan.kernel)) bind_coop_tail(e, c, 1, row_tiles * plan.splits, uint64_t{plan.splits} * p.tile0[1]);
  // spec 1-3 the epilogue, 4 SPLIT_PARTIAL, 5 unused, 6 VEC4_A (the pack's rows are aligned),
  // 7 B_KCONTIG, 8 VEC4_B, 9 GLU (tensor cores), 10 K_GROUPS
  c.spec = {0u, LIN_ACT_NONE, has_res ? 1u : 0u, split ? SPLIT_FINISH : 0u, 0u, 1u, 0u, vec_b ? 1u : 0u, 0u, 1u};
  tile_spec(e.options(), c.spec, plan);
  c.groups = {std::min(p.tile0[1], kMaxGroups), u32(row_tiles * plan.splits, "matmul row jobs"), 1};
  Emitter::set_params(c, p);
}

}  // namespace meganeura::lower
