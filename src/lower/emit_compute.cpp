// Matmul, reductions (and the losses that are a map then a reduction), row ops.
#include <algorithm>
#include <bit>
#include <numeric>

#include "lower/emit.hpp"
#include "lower/pairs.hpp"
#include "meganeura/error.hpp"

namespace meganeura::lower {

using namespace kernels;

// One dispatch for `products` (matmuls or one linear) that share A, M, K and batch: product g
// reads B at element b_offsets[g] of tensor `weights` and writes C at c_offsets[g] of `outputs`
// (a single product: its own B and output, offsets 0).
static bool is_coop(Kernel k) {
  return k == Kernel::MatMulCoopNV || k == Kernel::MatMulCoopKHR || k == Kernel::MatMulCoopKHRBf16;
}

// The tensor-core kernels' spec 11, K_STEP, where it is not the default 32: spec 9 (GLU) and 10
// (K_GROUPS) are filled in with their defaults first (spec constants are positional).
static void coop_k_step(std::vector<uint32_t>& spec, const MatMulPlan& plan) {
  if (plan.k_step == 32) return;
  spec.resize(10, 0u);
  spec.push_back(plan.k_step);
}

std::vector<int> pair_matmul_norms(const Graph& g, const std::vector<bool>& live, const std::vector<int>& group_of) {
  std::vector<int> partner(static_cast<size_t>(g.size()), -1);
  for (int b = 0; b < g.size(); ++b) {
    const Node& norm = g.node(b);
    if (!live[static_cast<size_t>(b)] || (norm.op != Op::RmsNorm && norm.op != Op::LayerNorm) || norm.dtype != DType::f32)
      continue;
    const int m = norm.inputs[0];
    const Node& mm = g.node(m);
    const bool single = group_of.empty() || group_of[static_cast<size_t>(m)] < 0;
    if (!live[static_cast<size_t>(m)] || (mm.op != Op::MatMul && mm.op != Op::MatMulAdd && mm.op != Op::Linear) ||
        !single || partner[static_cast<size_t>(m)] != -1 || mm.shape != norm.shape || numel(norm.shape) == 0 ||
        norm.shape.back() > kMaxFusedNormDim)
      continue;
    // The norm runs where the matmul does: its weight and bias must be ready there.
    if (!std::all_of(norm.inputs.begin() + 1, norm.inputs.end(), [&](int in) { return in < m; })) continue;
    partner[static_cast<size_t>(m)] = b;
    partner[static_cast<size_t>(b)] = kEmittedWithPartner;
  }
  return partner;
}

void emit_matmul_products(Emitter& e, const std::vector<int>& products, int weights, int outputs,
                          const std::vector<uint32_t>& b_offsets, const std::vector<uint32_t>& c_offsets,
                          const MatMulFusions& f) {
  const int id = products[0], norm = f.norm, glu = f.glu;
  const GroupRotary& rotary = f.rotary;
  const Node& n = e.node(id);
  const Shape &a = e.node(n.inputs[0]).shape, &b = e.node(n.inputs[1]).shape;
  bool ta = n.attrs.transpose_a, tb = n.attrs.transpose_b;
  int64_t M = n.shape[n.shape.size() - 2], K = a[a.size() - (ta ? 2 : 1)];
  MatMulParams p{};
  p.M = u32(M, "matmul M");
  p.K = u32(K, "matmul K");
  // Element (m,k) of A and (k,n) of B: transposes are just swapped strides.
  p.a_row_stride = ta ? 1 : u32(K, "stride");
  p.a_col_stride = ta ? u32(M, "stride") : 1;
  p.groups = static_cast<uint32_t>(products.size());
  std::string what;
  for (size_t g = 0; g < products.size(); ++g) {
    const int64_t N = e.node(products[g]).shape.back();
    p.N[g] = u32(N, "matmul N");
    p.b_row_stride[g] = tb ? 1 : u32(N, "stride");
    p.b_col_stride[g] = tb ? u32(K, "stride") : 1;
    p.b_offset[g] = b_offsets[g];
    p.c_offset[g] = c_offsets[g];
    if (products.size() > 1) what += (g ? ", %" : "with %") + std::to_string(products[g]);
  }
  uint64_t n_total = 0;
  for (size_t g = 0; g < products.size(); ++g) n_total += p.N[g];
  Shape batch(n.shape.begin(), n.shape.end() - 2);
  auto batch_strides = [&](const Shape& x) {  // broadcast strides of x's batch dims, in elements
    Shape xb(x.begin(), x.end() - 2);
    Strides st = broadcast_strides(xb, batch);
    for (auto& s : st) s *= x[x.size() - 2] * x.back();
    return st;
  };
  std::vector<Strides> st = {batch_strides(a), batch_strides(b), contiguous_strides(batch)};
  // linear: the residual's strides over the whole output (0 on broadcast dims)
  const int res_input = n.op == Op::MatMulAdd ? 2 : 3;  // linear: (a, b, bias, residual)
  bool has_res = (n.op == Op::Linear || n.op == Op::MatMulAdd) && static_cast<int>(n.inputs.size()) > res_input;
  if (has_res) {
    Strides rs = broadcast_strides(e.node(n.inputs[static_cast<size_t>(res_input)]).shape, n.shape);
    p.r_row_stride = u32(rs[rs.size() - 2], "stride");
    p.r_col_stride = u32(rs.back(), "stride");
    st.push_back(Strides(rs.begin(), rs.end() - 2));
  }
  int64_t batch_count = numel(batch);
  collapse(batch, st);
  if (batch.size() > 4)
    throw ShapeError("matmul %" + std::to_string(id) + ": batch dimensions " + shape_str(batch) +
                     " do not collapse to 4 or fewer; reshape the operands");
  p.batch = u32(batch_count, "matmul batch");
  p.batch_rank = static_cast<uint32_t>(batch.size());
  for (size_t d = 0; d < batch.size(); ++d) {
    p.batch_shape[d] = u32(batch[d], "batch dimension");
    p.a_batch_stride[d] = u32(st[0][d], "batch stride");
    p.b_batch_stride[d] = u32(st[1][d], "batch stride");
    if (has_res) p.r_batch_stride[d] = u32(st[3][d], "batch stride");
  }
  const MatMulPlan plan = plan_matmul(e.options().matmul, p.M, n_total, p.K, p.batch, /*b_k_contiguous=*/tb && K > 1);
  for (size_t g = 0; g < products.size(); ++g)
    p.tile0[g + 1] = p.tile0[g] + u32((p.N[g] + plan.tile_n - 1) / plan.tile_n, "matmul column tiles");
  // A gate/up pair whose swiglu the tensor-core kernel computes as it stores (GLU, matmul_coop.glsl):
  // each tile holds tile_n / 2 columns of both.
  const bool glu_here = glu >= 0 && is_coop(plan.kernel) && plan.splits == 1 && products.size() == 2 && p.N[0] == p.N[1];
  if (glu_here) {
    p.tile0[1] = p.tile0[2] = u32((p.N[0] + plan.tile_n / 2 - 1) / (plan.tile_n / 2), "matmul column tiles");
    what += ", swiglu %" + std::to_string(glu);
  }
  p.splits = plan.splits;
  p.k_chunk = plan.k_chunk;
  const uint64_t row_jobs = (M + plan.tile_m - 1) / plan.tile_m * plan.splits;
  if (row_jobs > kMaxGroups)
    throw ShapeError("matmul %" + std::to_string(id) + ": " + std::to_string(M) + " rows are too many for one dispatch");

  // Bindings 5 and 6 (bias, residual) read A and B again when there is no epilogue.
  int bias = n.op == Op::Linear ? n.inputs[2] : n.inputs[0];
  int res = has_res ? n.inputs[static_cast<size_t>(res_input)] : n.inputs[1];
  const std::vector<uint32_t> epilogue = {n.op == Op::Linear ? 1u : 0u,
                                          n.op == Op::Linear ? static_cast<uint32_t>(n.attrs.count) : LIN_ACT_NONE,
                                          has_res ? 1u : 0u};
  const std::array<uint32_t, 3> groups = {std::min(p.tile0[p.groups], kMaxGroups), static_cast<uint32_t>(row_jobs),
                                          std::min<uint32_t>(p.batch, 65535)};
  // Specialization constants after the epilogue's: 4 SPLIT_PARTIAL, 5 K_CONTIG (gemv), 6-8 the
  // tensor-core kernels' operand layouts (B_KCONTIG, and 16-byte vector loads where every row
  // of the operand starts 16-byte aligned: bindings are placed 256-byte aligned).
  std::vector<uint32_t> layout;
  auto aligned = [](const uint32_t* v, size_t n) { return std::all_of(v, v + n, [](uint32_t x) { return x % 4 == 0; }); };
  const bool vec_a = !ta && p.K % 4 == 0 && p.a_offset % 4 == 0 && aligned(p.a_batch_stride, p.batch_rank);
  const bool vec_b = aligned(p.b_offset, p.groups) && aligned(p.b_batch_stride, p.batch_rank) &&
                     (tb ? p.K % 4 == 0 : aligned(p.N, p.groups));
  if (plan.kernel == Kernel::MatMulGemv) layout = {plan.k_contiguous, plan.k_contiguous && vec_a && vec_b ? 1u : 0u};
  // rms_norm(x, w) as A: the GEMV reads x and w (binding 7) and scales by the row's rstd as it
  // stores; another tier gets the norm as its own dispatch first.
  const bool norm_a_here = f.norm_a >= 0 && plan.kernel == Kernel::MatMulGemv && plan.splits == 1;
  if (f.norm_a >= 0 && !norm_a_here) emit_row(e, f.norm_a);
  const int a_tensor = norm_a_here ? e.node(f.norm_a).inputs[0] : n.inputs[0];
  if (is_coop(plan.kernel) || plan.kernel == Kernel::MatMul) layout = {0u, vec_a ? 1u : 0u, tb ? 1u : 0u, vec_b ? 1u : 0u};
  // The tensor-core kernels' binding 7: the swiglu output (GLU), else C's own bytes again (never
  // written there; a tensor of its own would be a write that orders independent products).
  auto glu_binding = [&](KernelCall& c) {
    if (is_coop(plan.kernel)) c.tensors.push_back({glu_here ? glu : c.tensors[2].tensor, true});
  };
  // The tiled and tensor-core kernels' last two bindings: split-K's partials and tile counts
  // where the product's last split sums them (SPLIT_FINISH), else binding 4's tensor again (not
  // accessed).
  const bool can_finish = is_coop(plan.kernel) || plan.kernel == Kernel::MatMul;
  auto finish_bindings = [&](KernelCall& c, int partials, int counts) {
    if (!can_finish) return;
    c.tensors.push_back({partials >= 0 ? partials : c.tensors[2].tensor, true});
    c.tensors.push_back({counts >= 0 ? counts : c.tensors[2].tensor, true});
  };
  if (plan.splits == 1) {
    KernelCall& c = e.call(plan.kernel, id, what + (norm_a_here ? (what.empty() ? "" : ", ") + std::string("rms_norm %") +
                                                                      std::to_string(f.norm_a) + " as A"
                                                                : ""));
    c.tensors = {{a_tensor, false}, {weights, false}, {outputs, true}, {bias, false}, {res, false}};
    glu_binding(c);
    finish_bindings(c, -1, -1);
    // The GEMV's binding 7: the norm's weight (norm_a), else A again (not read).
    if (plan.kernel == Kernel::MatMulGemv) c.tensors.push_back({norm_a_here ? e.node(f.norm_a).inputs[1] : a_tensor, false});
    c.spec = epilogue;
    if (!layout.empty()) c.spec.push_back(0u);  // SPLIT_PARTIAL
    c.spec.insert(c.spec.end(), layout.begin(), layout.end());
    if (glu_here) c.spec.push_back(1u);  // GLU
    if (is_coop(plan.kernel)) coop_k_step(c.spec, plan);
    if (norm_a_here) {  // spec 7 NORM_A, 8 its eps (f32 bits)
      c.spec.insert(c.spec.end(), {1u, std::bit_cast<uint32_t>(static_cast<float>(e.node(f.norm_a).attrs.scalar))});
    }
    c.groups = groups;
    Emitter::set_params(c, p);
    if (norm >= 0) emit_row(e, norm);
    if (glu >= 0 && !glu_here) emit_elementwise(e, glu);
    if (rotary.node[0] >= 0) emit_rotary(e, rotary.node[0], rotary.node[1]);
    return;
  }
  // Split-K: partial sums of each K range into scratch, added up (with the epilogue, which only
  // a single product has) by the last split of each tile to finish, or, where a norm or rotary
  // reads the sums, by a pass over the whole of C's extent.
  uint64_t c_extent = 0;
  for (uint32_t g = 0; g < p.groups; ++g)
    c_extent = std::max<uint64_t>(c_extent, uint64_t{p.c_offset[g]} + uint64_t{p.batch} * p.M * p.N[g]);
  p.split_stride = u32(c_extent, "split-K partial size");
  const int partials = e.scratch(uint64_t{p.split_stride} * plan.splits * 4);
  const bool finish_here = e.options().matmul.split_finish && can_finish && norm < 0 && rotary.node[0] < 0;
  KernelCall& part = e.call(plan.kernel, id, what + (what.empty() ? "" : " ") + "split-K x" + std::to_string(plan.splits) +
                                                 (finish_here ? ", summed in-kernel" : ""));
  if (finish_here) {
    part.tensors = {{n.inputs[0], false}, {weights, false}, {outputs, true}, {bias, false}, {res, false}};
    glu_binding(part);
    const uint64_t tiles = uint64_t{p.batch} * ((M + plan.tile_m - 1) / plan.tile_m) * p.tile0[p.groups];
    finish_bindings(part, partials, e.state(tiles * 4));
    part.spec = epilogue;
    part.spec.push_back(SPLIT_FINISH);
    part.spec.insert(part.spec.end(), layout.begin(), layout.end());
    if (is_coop(plan.kernel)) coop_k_step(part.spec, plan);
    part.groups = groups;
    Emitter::set_params(part, p);
    if (glu >= 0) emit_elementwise(e, glu);
    return;
  }
  part.tensors = {{n.inputs[0], false}, {weights, false}, {partials, true}, {bias, false}, {res, false}};
  glu_binding(part);
  finish_bindings(part, -1, -1);
  part.spec = {0u, LIN_ACT_NONE, 0u, SPLIT_PARTIAL_PASS};
  part.spec.insert(part.spec.end(), layout.begin(), layout.end());
  if (is_coop(plan.kernel)) coop_k_step(part.spec, plan);
  part.groups = groups;
  Emitter::set_params(part, p);
  if (rotary.node[0] >= 0) {  // the q/k rotary pair in the summing pass
    MatMulRotaryParams rp{};
    rp.matmul = p;
    for (int k = 0; k < 2; ++k) {
      rp.product[k] = rotary.product[k];
      rp.part[k] = rotary_part(e, rotary.node[k]);
    }
    const Node& r0 = e.node(rotary.node[0]);
    KernelCall& sum = e.call(Kernel::MatMulSplitSumRotary, id,
                             "split-K sum, rotary %" + std::to_string(rotary.node[0]) + ", %" + std::to_string(rotary.node[1]));
    sum.tensors = {{partials, false}, {weights, false}, {outputs, true},         {bias, false},
                   {res, false},      {r0.inputs[1], false}, {r0.inputs[2], false}, {rotary.node[0], true},
                   {rotary.node[1], true}};
    sum.groups = {groups_for(p.split_stride), 1, 1};
    Emitter::set_params(sum, rp);
    if (glu >= 0) emit_elementwise(e, glu);
    return;
  }
  if (norm < 0) {
    KernelCall& sum = e.call(Kernel::MatMulSplitSum, id, "split-K sum");
    sum.tensors = {{partials, false}, {weights, false}, {outputs, true}, {bias, false}, {res, false}};
    sum.spec = epilogue;
    sum.groups = {groups_for(p.split_stride), 1, 1};
    Emitter::set_params(sum, p);
    if (glu >= 0) emit_elementwise(e, glu);
    return;
  }
  // The norm reading this product's rows normalises them in the summing pass, a row per workgroup.
  const Node& nn = e.node(norm);
  const bool has_w = nn.inputs.size() > 1, has_b = nn.inputs.size() > 2;
  KernelCall& sum = e.call(Kernel::MatMulSplitSumNorm, id, "split-K sum, " + std::string(op_name(nn.op)) + " %" + std::to_string(norm));
  sum.tensors = {{partials, false}, {weights, false}, {outputs, true}, {bias, false}, {res, false},
                 {has_w ? nn.inputs[1] : partials, false}, {has_b ? nn.inputs[2] : partials, false}, {norm, true}};
  sum.spec = epilogue;
  const auto eps_bits = std::bit_cast<uint32_t>(static_cast<float>(nn.attrs.scalar));
  sum.spec.insert(sum.spec.end(), {0u, nn.op == Op::RmsNorm ? NORM_RMS : NORM_LAYER, has_w ? 1u : 0u, has_b ? 1u : 0u, eps_bits});
  sum.groups = {std::min<uint32_t>(p.batch * p.M, kMaxGroups), 1, 1};
  Emitter::set_params(sum, p);
}

// One dispatch for a sum of products (pairs.hpp ProductSum): K groups over the packed A_j and
// the B_j's shared storage, split-K finished in the kernel, the leftover addend as residual.
void emit_product_sum(Emitter& e, int id, const ProductSum& sum) {
  const Node& n = e.node(id);
  const int64_t M = n.shape[n.shape.size() - 2], N = n.shape.back();
  const Lowered& low = e.lowered();
  const int a_pack = low.root(e.node(sum.products[0]).inputs[0]);  // every A's storage is in it
  const int b_root = low.root(e.node(sum.products[0]).inputs[1]);
  MatMulParams p{};
  p.M = u32(M, "matmul M");
  p.batch = 1;
  p.a_col_stride = 1;
  p.groups = 1;
  p.N[0] = u32(N, "matmul N");
  p.b_row_stride[0] = p.N[0];
  p.b_col_stride[0] = 1;
  p.kgroups = static_cast<uint32_t>(sum.products.size());
  std::string what = "sum of";
  bool vec_b = N % 4 == 0;
  uint32_t k = 0;
  for (size_t j = 0; j < sum.products.size(); ++j) {
    const Node& pn = e.node(sum.products[j]);
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
    what += (j ? " + %" : " %") + std::to_string(sum.products[j]);
  }
  p.K = k;
  p.a_row_stride = p.ka_row[0];
  const bool has_res = sum.residual >= 0;
  if (has_res) {
    p.r_row_stride = p.N[0];
    p.r_col_stride = 1;
    what += " + %" + std::to_string(sum.residual);
  }
  uint64_t k_align = 0;  // a K step must not cross from one product to the next
  for (size_t j = 0; j < sum.products.size(); ++j) k_align = std::gcd(k_align, uint64_t{p.ka_row[j]});
  const MatMulPlan plan = plan_matmul(e.options().matmul, p.M, p.N[0], p.K, 1, false, k_align);
  if (!is_coop(plan.kernel) && plan.kernel != Kernel::MatMul)
    throw Error("internal: sum of products %" + std::to_string(id) + " planned on a tier without K groups");
  p.tile0[1] = u32((p.N[0] + plan.tile_n - 1) / plan.tile_n, "matmul column tiles");
  p.splits = plan.splits;
  p.k_chunk = plan.k_chunk;
  p.split_stride = u32(M * N, "split-K partial size");
  const uint64_t row_tiles = (M + plan.tile_m - 1) / plan.tile_m;
  const bool split = plan.splits > 1;
  KernelCall& c = e.call(plan.kernel, id, what + (split ? ", split-K x" + std::to_string(plan.splits) + ", summed in-kernel" : ""));
  const int res = has_res ? sum.residual : a_pack;
  c.tensors = {{a_pack, false}, {b_root, false}, {id, true}, {a_pack, false}, {res, false}};
  if (is_coop(plan.kernel)) c.tensors.push_back({id, true});  // binding 7: no GLU
  c.tensors.push_back({split ? e.scratch(uint64_t{p.split_stride} * plan.splits * 4) : id, true});
  c.tensors.push_back({split ? e.state(row_tiles * p.tile0[1] * 4) : id, true});
  // spec 1-3 the epilogue, 4 SPLIT_PARTIAL, 5 unused, 6 VEC4_A (the pack's rows are aligned),
  // 7 B_KCONTIG, 8 VEC4_B, 9 GLU (tensor cores), 10 K_GROUPS
  c.spec = {0u, LIN_ACT_NONE, has_res ? 1u : 0u, split ? SPLIT_FINISH : 0u, 0u, 1u, 0u, vec_b ? 1u : 0u, 0u, 1u};
  if (is_coop(plan.kernel)) coop_k_step(c.spec, plan);
  c.groups = {std::min(p.tile0[1], kMaxGroups), u32(row_tiles * plan.splits, "matmul row jobs"), 1};
  Emitter::set_params(c, p);
}

void emit_matmul(Emitter& e, int id, const MatMulFusions& f) { emit_matmul_products(e, {id}, e.node(id).inputs[1], id, {0}, {0}, f); }

// A reduction of `x` (and `b`, for two-input maps) over `axes` of `shape`.
static void reduce_call(Emitter& e, int id, int x, int b, const Shape& shape, const std::vector<int64_t>& axes,
                        uint32_t op, uint32_t map, float scale) {
  Strides contig = contiguous_strides(shape);
  Shape kept, red;
  Strides kept_st, red_st;
  for (size_t d = 0; d < shape.size(); ++d) {
    bool r = std::find(axes.begin(), axes.end(), static_cast<int64_t>(d)) != axes.end();
    (r ? red : kept).push_back(shape[d]);
    (r ? red_st : kept_st).push_back(contig[d]);
  }
  std::vector<Strides> ks = {kept_st}, rs = {red_st};
  collapse(kept, ks);
  collapse(red, rs);
  ReduceParams p{};
  p.n_out = u32(numel(kept), "reduction outputs");
  p.n_red = u32(numel(red), "reduction length");
  p.kept_rank = static_cast<uint32_t>(kept.size());
  p.red_rank = static_cast<uint32_t>(red.size());
  p.scale = scale;
  for (size_t d = 0; d < kept.size(); ++d) {
    p.kept_shape[d] = u32(kept[d], "dimension");
    p.kept_stride[d] = u32(ks[0][d], "stride");
  }
  for (size_t d = 0; d < red.size(); ++d) {
    p.red_shape[d] = u32(red[d], "dimension");
    p.red_stride[d] = u32(rs[0][d], "stride");
  }
  KernelCall& c = e.call(Kernel::Reduce, id, "");
  c.spec = {op, map};
  c.tensors = {{x, false}, {b, false}, {id, true}};
  c.groups = {std::min<uint32_t>(p.n_out, kMaxGroups), 1, 1};
  Emitter::set_params(c, p);
}

void emit_reduce(Emitter& e, int id, int map) {
  const Node& n = e.node(id);
  int x = n.inputs[0];
  if (map >= 0) {  // sum/mean of a * b, or sum/mean/max of |a|: that node is the reduction's map
    const Node& m = e.node(map);
    const Shape& s = m.shape;
    int64_t n_red = 1;
    for (int64_t a : n.attrs.axes) n_red *= s[static_cast<size_t>(a)];
    const float scale = n.op == Op::Mean ? 1.0f / static_cast<float>(n_red) : 1.0f;
    const int b = m.op == Op::Mul ? m.inputs[1] : m.inputs[0];
    return reduce_call(e, id, m.inputs[0], b, s, n.attrs.axes, n.op == Op::Max ? RED_MAX : RED_SUM,
                       m.op == Op::Mul ? MAP_MUL : MAP_ABS, scale);
  }
  const Shape& s = e.node(x).shape;
  const std::vector<int64_t>& axes = n.attrs.axes;
  int64_t n_red = 1;
  for (int64_t a : axes) n_red *= s[static_cast<size_t>(a)];
  std::vector<int64_t> all(s.size());
  for (size_t d = 0; d < s.size(); ++d) all[d] = static_cast<int64_t>(d);
  float inv_all = 1.0f / static_cast<float>(numel(s));
  switch (n.op) {
    case Op::Sum: return reduce_call(e, id, x, x, s, axes, RED_SUM, MAP_NONE, 1.0f);
    case Op::Mean: return reduce_call(e, id, x, x, s, axes, RED_SUM, MAP_NONE, 1.0f / static_cast<float>(n_red));
    case Op::Max: return reduce_call(e, id, x, x, s, axes, RED_MAX, MAP_NONE, 1.0f);
    case Op::ArgMax: return reduce_call(e, id, x, x, s, axes, RED_ARGMAX, MAP_NONE, 1.0f);
    case Op::MseLoss: return reduce_call(e, id, x, n.inputs[1], s, all, RED_SUM, MAP_SQDIFF, inv_all);
    case Op::BinaryCrossEntropy: return reduce_call(e, id, x, n.inputs[1], s, all, RED_SUM, MAP_BCE, inv_all);
    case Op::BinaryCrossEntropyWithLogits:
      return reduce_call(e, id, x, n.inputs[1], s, all, RED_SUM, MAP_BCE_LOGITS, inv_all);
    default: throw Error("internal: " + std::string(op_name(n.op)) + " is not a reduction");
  }
}

SoftmaxParams softmax_params(const Shape& s, int64_t axis) {
  auto ax = static_cast<size_t>(axis);
  SoftmaxParams p{};
  p.outer = u32(numel(Shape(s.begin(), s.begin() + axis)), "softmax outer");
  p.len = u32(s[ax], "softmax length");
  p.inner = u32(numel(Shape(s.begin() + axis + 1, s.end())), "softmax inner");
  return p;
}

NormParams norm_params(const Shape& x, double eps) {
  NormParams p{};
  p.dim = u32(x.back(), "normalised dimension");
  p.rows = u32(numel(x) / x.back(), "rows");
  p.eps = static_cast<float>(eps);
  return p;
}

void emit_row(Emitter& e, int id) {
  const Node& n = e.node(id);
  if (n.op == Op::Softmax || n.op == Op::LogSoftmax) {
    SoftmaxParams p = softmax_params(n.shape, n.attrs.axis);
    KernelCall& c = e.call(Kernel::Softmax, id, "");
    c.spec = {n.op == Op::LogSoftmax ? 1u : 0u};
    c.tensors = {{n.inputs[0], false}, {id, true}};
    c.groups = {std::min<uint32_t>(p.outer * p.inner, kMaxGroups), 1, 1};
    Emitter::set_params(c, p);
    return;
  }
  NormParams p = norm_params(n.shape, n.attrs.scalar);
  int x = n.inputs[0];
  bool has_w = n.inputs.size() > 1, has_b = n.inputs.size() > 2;
  KernelCall& c = e.call(Kernel::Norm, id, "");
  c.spec = {n.op == Op::RmsNorm ? NORM_RMS : NORM_LAYER, has_w ? 1u : 0u, has_b ? 1u : 0u};
  c.tensors = {{x, false}, {has_w ? n.inputs[1] : x, false}, {has_b ? n.inputs[2] : x, false}, {id, true}};
  c.groups = {std::min<uint32_t>(p.rows, kMaxGroups), 1, 1};
  Emitter::set_params(c, p);
}

}  // namespace meganeura::lower
