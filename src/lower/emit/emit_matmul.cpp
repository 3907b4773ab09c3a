// Matmul groups: one dispatch for products that share A, M, K and batch (a single product, or a
// group from fuse/matmul_siblings.cpp), with what the group computes besides (MatMulFusions): a
// swiglu in the tensor-core or GEMV store, a norm or rotary pair in split-K's summing pass, an rms_norm
// in the GEMV's loads. Product g reads B at element b_offsets[g] of `weights` and writes C at
// c_offsets[g] of `outputs`.
#include <algorithm>
#include <bit>

#include "lower/emit/emitters.hpp"
#include "lower/emit/matmul_dispatch.hpp"
#include "meganeura/error.hpp"

namespace meganeura::lower {

using namespace kernels;

bool is_coop(Kernel k) {
  return k == Kernel::MatMulCoopNV || k == Kernel::MatMulCoopKHR || k == Kernel::MatMulCoopKHRBf16 ||
         k == Kernel::MatMulCoopStagedNV || k == Kernel::MatMulCoopStagedTallNV || is_coop2(k);
}

bool is_coop2(Kernel k) { return k == Kernel::MatMulCoop2StagedNV; }

bool is_gemv(Kernel k) { return k == Kernel::MatMulGemv || k == Kernel::MatMulGemvSubgroup; }

void set_matmul_spec(std::vector<uint32_t>& spec, uint32_t id, uint32_t value, const MatMulPlan& plan) {
  while (spec.size() < id) spec.push_back(spec.size() == 10 && is_coop(plan.kernel) ? plan.k_step : 0u);
  spec[id - 1] = value;
}

void tile_spec(const LowerOptions& options, std::vector<uint32_t>& spec, const MatMulPlan& plan) {
  if (is_coop(plan.kernel) && plan.k_step != 32)
    set_matmul_spec(spec, 11, plan.k_step, plan);
  else if (plan.kernel == Kernel::MatMul && options.cpu_device)
    set_matmul_spec(spec, 11, 1, plan);
  if (plan.one_exponent) set_matmul_spec(spec, 13, 1, plan);
  if (is_coop2(plan.kernel)) {  // spec 16-18: its tile (matmul_coop2.glsl)
    set_matmul_spec(spec, 16, plan.tile_m, plan);
    set_matmul_spec(spec, 17, plan.tile_n, plan);
    set_matmul_spec(spec, 18, 64, plan);
  }
}

void bind_coop_tail(Emitter& e, KernelCall& c, uint64_t batch, uint64_t row_jobs, uint64_t split_tiles) {
  c.tensors.push_back({c.tensors[2].tensor, true});  // 10: GLU_STAGED's copy (C again where none)
  if (c.kernel != Kernel::MatMulCoopStagedNV && c.kernel != Kernel::MatMulCoopStagedTallNV && !is_coop2(c.kernel))
    c.tensors.push_back({e.state(batch * (row_jobs + split_tiles) * 4), true});
}

namespace {

struct Operands {
  int weights, outputs;
  std::vector<uint32_t> b_offsets, c_offsets;  // in elements
};

// A batch of products that share B (weights broadcast over the batch: x [b, s, k] · w [k, n])
// whose A and C rows follow on from one batch entry to the next is one product of b·s rows: one
// tile grid (and one staging of each operand) instead of b. Residual rows must follow on too.
// Rows few enough for the GEMV (decoding several sequences) stay a batch of GEMVs.
void fold_batch_into_rows(MatMulParams& p, bool ta, bool has_res, const MatMulTiers& t) {
  const uint64_t rows = uint64_t{p.M} * p.batch;
  if ((t.gemv && p.M <= 4) || p.batch <= 1 || p.batch_rank != 1 || ta || p.b_batch_stride[0] != 0 ||
      uint64_t{p.a_batch_stride[0]} != uint64_t{p.M} * p.K || rows > UINT32_MAX)
    return;
  if (has_res && uint64_t{p.r_batch_stride[0]} != uint64_t{p.M} * p.r_row_stride) return;
  p.M = static_cast<uint32_t>(rows);
  p.batch = 1;
  p.batch_rank = 0;
  p.batch_shape[0] = p.a_batch_stride[0] = p.r_batch_stride[0] = 0;
}

// The batch dimensions of the params block (and a residual's strides), collapsed to 4 or fewer.
void fill_batch(const Emitter& e, const Node& n, int id, MatMulParams& p, int residual) {
  const Shape &a = e.node(n.inputs[0]).shape, &b = e.node(n.inputs[1]).shape;
  Shape batch(n.shape.begin(), n.shape.end() - 2);
  auto batch_strides = [&](const Shape& x) {  // broadcast strides of x's batch dims, in elements
    Shape xb(x.begin(), x.end() - 2);
    Strides st = broadcast_strides(xb, batch);
    for (auto& s : st) s *= x[x.size() - 2] * x.back();
    return st;
  };
  std::vector<Strides> st = {batch_strides(a), batch_strides(b), contiguous_strides(batch)};
  if (residual >= 0) {  // its strides over the whole output (0 on broadcast dims)
    Strides rs = broadcast_strides(e.node(residual).shape, n.shape);
    p.r_row_stride = u32(rs[rs.size() - 2], "stride");
    p.r_col_stride = u32(rs.back(), "stride");
    st.push_back(Strides(rs.begin(), rs.end() - 2));
  }
  const int64_t batch_count = numel(batch);
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
    if (residual >= 0) p.r_batch_stride[d] = u32(st[3][d], "batch stride");
  }
}

// Specialization constants after the epilogue's: 4 SPLIT_PARTIAL, 5 K_CONTIG (gemv), 6-8 the
// tensor-core kernels' operand layouts (B_KCONTIG, and 16-byte vector loads where every row of
// the operand starts 16-byte aligned: bindings are placed 256-byte aligned).
std::vector<uint32_t> operand_layout(const MatMulParams& p, const MatMulPlan& plan, bool ta, bool tb) {
  auto aligned = [](const uint32_t* v, size_t n) {
    return std::all_of(v, v + n, [](uint32_t x) { return x % 4 == 0; });
  };
  const bool vec_a = !ta && p.K % 4 == 0 && p.a_offset % 4 == 0 && aligned(p.a_batch_stride, p.batch_rank);
  const bool vec_b = aligned(p.b_offset, p.groups) && aligned(p.b_batch_stride, p.batch_rank) &&
                     (tb ? p.K % 4 == 0 : aligned(p.N, p.groups));
  if (is_coop(plan.kernel) || plan.kernel == Kernel::MatMul)
    return {0u, vec_a ? 1u : 0u, tb ? 1u : 0u, vec_b ? 1u : 0u};
  if (is_gemv(plan.kernel)) return {plan.k_contiguous, plan.k_contiguous && vec_a && vec_b ? 1u : 0u};
  return {};
}

Dispatch plan_dispatch(Emitter& e, const std::vector<int>& products, const Operands& o, const MatMulFusions& f,
                       const MatMulTiers& tiers) {
  Dispatch d;
  d.id = products[0];
  const Node& n = e.node(d.id);
  const Shape& a = e.node(n.inputs[0]).shape;
  const bool ta = n.attrs.transpose_a, tb = n.attrs.transpose_b;
  d.M = n.shape[n.shape.size() - 2];
  const int64_t K = a[a.size() - (ta ? 2 : 1)];
  MatMulParams& p = d.p;
  p.M = u32(d.M, "matmul M");
  p.K = u32(K, "matmul K");
  // Element (m,k) of A and (k,n) of B: transposes are just swapped strides.
  p.a_row_stride = ta ? 1 : u32(K, "stride");
  p.a_col_stride = ta ? u32(d.M, "stride") : 1;
  p.groups = static_cast<uint32_t>(products.size());
  for (size_t g = 0; g < products.size(); ++g) {
    const int64_t N = e.node(products[g]).shape.back();
    p.N[g] = u32(N, "matmul N");
    p.b_row_stride[g] = tb ? 1 : u32(N, "stride");
    p.b_col_stride[g] = tb ? u32(K, "stride") : 1;
    p.b_offset[g] = o.b_offsets[g];
    p.c_offset[g] = o.c_offsets[g];
    d.n_total += p.N[g];
    if (products.size() > 1) d.what += (g ? ", %" : "with %") + std::to_string(products[g]);
  }
  const int res_input = n.op == Op::MatMulAdd ? 2 : 3;  // linear: (a, b, bias, residual)
  const bool has_res = (n.op == Op::Linear || n.op == Op::MatMulAdd) && static_cast<int>(n.inputs.size()) > res_input;
  fill_batch(e, n, d.id, p, has_res ? n.inputs[static_cast<size_t>(res_input)] : -1);
  fold_batch_into_rows(p, ta, has_res, e.options().matmul);
  d.M = p.M;
  d.plan = plan_matmul(tiers, p.M, d.n_total, p.K, p.batch, /*b_k_contiguous=*/tb && K > 1);
  for (size_t g = 0; g < products.size(); ++g)
    p.tile0[g + 1] = p.tile0[g] + u32((p.N[g] + d.plan.tile_n - 1) / d.plan.tile_n, "matmul column tiles");
  // A gate/up pair whose swiglu the tensor-core or GEMV kernel computes as it stores (GLU,
  // matmul_coop.glsl, matmul_gemv.comp): each tile holds tile_n / 2 columns of both.
  d.glu_here = f.glu >= 0 && (is_coop(d.plan.kernel) || is_gemv(d.plan.kernel)) && d.plan.splits == 1 &&
               products.size() == 2 && p.N[0] == p.N[1] &&
               (d.plan.kernel != Kernel::MatMulGemvSubgroup || d.plan.team_cols % 2 == 0);
  if (d.glu_here)
    p.tile0[1] = p.tile0[2] = u32((p.N[0] + d.plan.tile_n / 2 - 1) / (d.plan.tile_n / 2), "matmul column tiles");
  p.splits = d.plan.splits;
  p.k_chunk = d.plan.k_chunk;
  const uint64_t row_jobs = (d.M + d.plan.tile_m - 1) / d.plan.tile_m * d.plan.splits;
  if (row_jobs > kMaxGroups)
    throw ShapeError("matmul %" + std::to_string(d.id) + ": " + std::to_string(d.M) +
                     " rows are too many for one dispatch");
  // Bindings 5 and 6 (bias, residual) read A and B again when there is no epilogue.
  d.bias = n.op == Op::Linear ? n.inputs[2] : n.inputs[0];
  d.res = has_res ? n.inputs[static_cast<size_t>(res_input)] : n.inputs[1];
  d.epilogue = {n.op == Op::Linear ? 1u : 0u, n.op == Op::Linear ? static_cast<uint32_t>(n.attrs.count) : LIN_ACT_NONE,
                has_res ? 1u : 0u};
  d.groups = {std::min(p.tile0[p.groups], kMaxGroups), static_cast<uint32_t>(row_jobs),
              std::min<uint32_t>(p.batch, 65535)};
  d.layout = operand_layout(p, d.plan, ta, tb);
  // rms_norm(x, w) as A: the GEMV reads x and w (binding 7) and scales by the row's rstd as it
  // stores; another tier gets the norm as its own call first.
  d.norm_a_here = f.norm_a >= 0 && is_gemv(d.plan.kernel) && d.plan.splits == 1;
  d.a_tensor = d.norm_a_here ? e.node(f.norm_a).inputs[0] : n.inputs[0];
  d.weights = o.weights;
  d.outputs = o.outputs;
  return d;
}

// The swiglu output (GLU) at the tensor-core kernels' binding 7 and the GEMV's 8, else C's own
// bytes again (never written there; a tensor of its own would be a write that orders independent
// products).
void bind_glu(const Dispatch& d, KernelCall& c, int glu) {
  if (is_coop(d.plan.kernel) || is_gemv(d.plan.kernel))
    c.tensors.push_back({d.glu_here ? glu : c.tensors[2].tensor, true});
}

// The tiled and tensor-core kernels' last bindings: split-K's partials and tile counts where
// the product's last split sums them (SPLIT_FINISH), else binding 4's tensor again (not
// accessed); the tensor-core kernels' GLU_STAGED copy (10), and, where they stage in the kernel,
// their scale history (11).
bool can_finish(const Dispatch& d) { return is_coop(d.plan.kernel) || d.plan.kernel == Kernel::MatMul; }
void bind_finish(Emitter& e, const Dispatch& d, KernelCall& c, int partials, int counts) {
  if (!can_finish(d)) return;
  c.tensors.push_back({partials >= 0 ? partials : c.tensors[2].tensor, true});
  c.tensors.push_back({counts >= 0 ? counts : c.tensors[2].tensor, true});
  if (!is_coop(d.plan.kernel)) return;
  const uint64_t row_jobs = (d.M + d.plan.tile_m - 1) / d.plan.tile_m * d.plan.splits;
  bind_coop_tail(e, c, d.p.batch, row_jobs, uint64_t{d.plan.splits} * d.p.tile0[d.p.groups]);
}

// The swiglu a tensor-core GLU call stores, staged for the product that reads it next (spec 12
// GLU_STAGED, binding 10; matmul_coop.glsl): where that product's weights are staged once, a
// batch-1 product, and the columns fill whole 64-wide staged rows (the tiles write every word).
void stage_glu(Emitter& e, const Dispatch& d, KernelCall& c, int glu) {
  if (!d.glu_here || !is_coop(d.plan.kernel) || d.p.batch != 1 || d.p.N[0] % 64 != 0) return;
  StagedRowsParams layout{};
  // Each 16 x 32 block at its own exponent: the tiles that write a row do not see its maximum.
  const int staged = stage_rows_for_products(e, glu, layout, false);
  if (staged < 0) return;
  c.tensors[8] = {staged, true};
  set_matmul_spec(c.spec, 12, 1, d.plan);                          // GLU_STAGED
  c.label.insert(c.label.size() - 1, ", staged for the product");  // the label ends in d.what's "]"
}

void one_pass(Emitter& e, const Dispatch& d, const MatMulFusions& f) {
  // Named here, where it is final: the staging may still hand a GLU pair to another kernel.
  const std::string glu = d.glu_here ? ", swiglu %" + std::to_string(f.glu) : "";
  const std::string norm_a =
      d.norm_a_here ? (d.what.empty() ? "" : ", ") + std::string("rms_norm %") + std::to_string(f.norm_a) + " as A"
                    : "";
  KernelCall& c = e.call(d.plan.kernel, d.id, d.what + glu + norm_a);
  c.tensors = {{d.a_tensor, false}, {d.weights, false}, {d.outputs, true}, {d.bias, false}, {d.res, false}};
  const bool gemv = is_gemv(d.plan.kernel);
  if (!gemv) bind_glu(d, c, f.glu);
  bind_finish(e, d, c, -1, -1);
  if (gemv) {  // binding 7: the norm's weight (norm_a), else A again (not read); 8: the swiglu
    c.tensors.push_back({d.norm_a_here ? e.node(f.norm_a).inputs[1] : d.a_tensor, false});
    bind_glu(d, c, f.glu);
  }
  c.spec = d.epilogue;
  if (!d.layout.empty()) c.spec.push_back(0u);  // SPLIT_PARTIAL
  c.spec.insert(c.spec.end(), d.layout.begin(), d.layout.end());
  if (gemv) {  // spec 7 NORM_A, 8 its eps (f32 bits), 9 GLU, 10 K_GROUPS (none), 11 TEAM, 12 UNROLL
    const float eps = d.norm_a_here ? static_cast<float>(e.node(f.norm_a).attrs.scalar) : 1e-6f;
    c.spec.insert(c.spec.end(), {d.norm_a_here ? 1u : 0u, std::bit_cast<uint32_t>(eps), d.glu_here ? 1u : 0u, 0u,
                                 d.plan.team, d.plan.unroll});
    if (d.plan.kernel == Kernel::MatMulGemvSubgroup)  // 13 TEAM_COLS, 14 ROWS, 15 SUBGROUP
      c.spec.insert(c.spec.end(), {d.plan.team_cols, std::min(d.p.M, d.plan.tile_m), d.plan.subgroup});
  } else if (d.glu_here) {
    c.spec.push_back(1u);  // GLU, spec 9
  }
  tile_spec(e.options(), c.spec, d.plan);
  if (!gemv) stage_glu(e, d, c, f.glu);
  c.groups = d.groups;
  Emitter::set_params(c, d.p);
  if (f.norm >= 0) emit_row(e, f.norm);
  if (f.glu >= 0 && !d.glu_here) emit_elementwise(e, f.glu);
  if (f.rotary[0] >= 0) emit_rotary(e, f.rotary[0], f.rotary[1], f.group);
}

// Split-K whose last split of each tile adds the partials (with the epilogue) as it finishes.
void split_summed_in_kernel(Emitter& e, const Dispatch& d, KernelCall& part, int partials, int glu) {
  part.tensors = {{d.a_tensor, false}, {d.weights, false}, {d.outputs, true}, {d.bias, false}, {d.res, false}};
  bind_glu(d, part, glu);
  const uint64_t tiles = uint64_t{d.p.batch} * ((d.M + d.plan.tile_m - 1) / d.plan.tile_m) * d.p.tile0[d.p.groups];
  bind_finish(e, d, part, partials, e.state(tiles * 4));
  part.spec = d.epilogue;
  part.spec.push_back(SPLIT_FINISH);
  part.spec.insert(part.spec.end(), d.layout.begin(), d.layout.end());
  tile_spec(e.options(), part.spec, d.plan);
  part.groups = d.groups;
  Emitter::set_params(part, d.p);
  if (glu >= 0) emit_elementwise(e, glu);
}

// The q/k rotary pair, rotated as the summing pass stores the two products it reads.
void sum_pass_rotary(Emitter& e, const Dispatch& d, int partials, const MatMulFusions& f) {
  MatMulRotaryParams rp{};
  rp.matmul = d.p;
  for (int k = 0; k < 2; ++k) {
    rp.product[k] = f.rotary_product[k];
    rp.part[k] = rotary_part(e, f.rotary[k]);
  }
  const Node& r0 = e.node(f.rotary[0]);
  KernelCall& sum = e.call(Kernel::MatMulSplitSumRotary, d.id,
                           "split-K sum, rotary %" + std::to_string(f.rotary[0]) + ", %" + std::to_string(f.rotary[1]));
  sum.tensors = {{partials, false},     {d.weights, false},    {d.outputs, true},   {d.bias, false},    {d.res, false},
                 {r0.inputs[1], false}, {r0.inputs[2], false}, {f.rotary[0], true}, {f.rotary[1], true}};
  sum.groups = {groups_for(d.p.split_stride), 1, 1};
  Emitter::set_params(sum, rp);
}

// The norm reading the product's rows normalises them in the summing pass, a row per workgroup.
void sum_pass_norm(Emitter& e, const Dispatch& d, int partials, int norm) {
  const Node& nn = e.node(norm);
  const bool has_w = nn.inputs.size() > 1, has_b = nn.inputs.size() > 2;
  KernelCall& sum = e.call(Kernel::MatMulSplitSumNorm, d.id,
                           "split-K sum, " + std::string(op_name(nn.op)) + " %" + std::to_string(norm));
  sum.tensors = {{partials, false},
                 {d.weights, false},
                 {d.outputs, true},
                 {d.bias, false},
                 {d.res, false},
                 {has_w ? nn.inputs[1] : partials, false},
                 {has_b ? nn.inputs[2] : partials, false},
                 {norm, true}};
  MatMulNormParams np{d.p, {}};
  const int staged = stage_rows_for_products(e, norm, np.staged, true);
  sum.tensors.push_back({staged >= 0 ? staged : norm, staged >= 0});
  sum.spec = d.epilogue;
  const auto eps_bits = std::bit_cast<uint32_t>(static_cast<float>(nn.attrs.scalar));
  sum.spec.insert(sum.spec.end(), {0u, nn.op == Op::RmsNorm ? NORM_RMS : NORM_LAYER, has_w ? 1u : 0u, has_b ? 1u : 0u,
                                   eps_bits, staged >= 0 ? 1u : 0u});
  const uint32_t rows = staged >= 0 ? np.staged.padded_rows : d.p.batch * d.p.M;
  sum.groups = {std::min<uint32_t>(rows, kMaxGroups), 1, 1};
  Emitter::set_params(sum, np);
}

// Split-K: partial sums of each K range into scratch, added up (with the epilogue, which only a
// single product has) by the last split of each tile to finish, or, where a norm or rotary reads
// the sums, by a pass over the whole of C's extent.
void split_k(Emitter& e, Dispatch& d, const MatMulFusions& f) {
  uint64_t c_extent = 0;
  for (uint32_t g = 0; g < d.p.groups; ++g)
    c_extent = std::max<uint64_t>(c_extent, uint64_t{d.p.c_offset[g]} + uint64_t{d.p.batch} * d.p.M * d.p.N[g]);
  d.p.split_stride = u32(c_extent, "split-K partial size");
  const int partials = e.scratch(uint64_t{d.p.split_stride} * d.plan.splits * 4);
  const bool in_kernel = e.options().matmul.split_finish && can_finish(d) && f.norm < 0 && f.rotary[0] < 0;
  KernelCall& part = e.call(d.plan.kernel, d.id,
                            d.what + (d.what.empty() ? "" : " ") + "split-K x" + std::to_string(d.plan.splits) +
                                (in_kernel ? ", summed in-kernel" : ""));
  if (in_kernel) return split_summed_in_kernel(e, d, part, partials, f.glu);
  part.tensors = {{d.a_tensor, false}, {d.weights, false}, {partials, true}, {d.bias, false}, {d.res, false}};
  bind_glu(d, part, f.glu);
  bind_finish(e, d, part, -1, -1);
  part.spec = {0u, LIN_ACT_NONE, 0u, SPLIT_PARTIAL_PASS};
  part.spec.insert(part.spec.end(), d.layout.begin(), d.layout.end());
  tile_spec(e.options(), part.spec, d.plan);
  part.groups = d.groups;
  Emitter::set_params(part, d.p);
  if (f.norm >= 0 && f.rotary[0] < 0) return sum_pass_norm(e, d, partials, f.norm);
  if (f.rotary[0] >= 0) {
    sum_pass_rotary(e, d, partials, f);
    if (f.group)  // the cache appends after the rotary, as calls of their own
      for (const Fused& x : f.group->extras)
        if (x.as == FusedAs::Append) emit_index(e, x.node);
  } else {
    KernelCall& sum = e.call(Kernel::MatMulSplitSum, d.id, "split-K sum");
    sum.tensors = {{partials, false}, {d.weights, false}, {d.outputs, true}, {d.bias, false}, {d.res, false}};
    sum.spec = d.epilogue;
    sum.groups = {groups_for(d.p.split_stride), 1, 1};
    Emitter::set_params(sum, d.p);
  }
  if (f.glu >= 0) emit_elementwise(e, f.glu);
}

void emit_products(Emitter& e, const std::vector<int>& products, const Operands& o, const MatMulFusions& f) {
  Dispatch d = plan_dispatch(e, products, o, f, e.options().matmul);
  const bool staged = stage_before(e, d);
  if (!staged && is_coop(d.plan.kernel)) d = plan_dispatch(e, products, o, f, staging_in_kernel(e.options().matmul));
  if (f.norm_a >= 0 && !d.norm_a_here) emit_row(e, f.norm_a);
  if (staged) stage_operands(e, d);
  if (d.plan.splits == 1) return one_pass(e, d, f);
  split_k(e, d, f);
}

}  // namespace

void emit_matmul(Emitter& e, const DispatchGroup& grp) {
  MatMulFusions f;
  f.norm = grp.extra(FusedAs::Norm);
  f.glu = grp.extra(FusedAs::Glu);
  f.norm_a = grp.extra(FusedAs::NormA);
  f.group = &grp;
  int k = 0;
  for (const Fused& x : grp.extras)
    if (x.as == FusedAs::Rotary && k < 2) {
      f.rotary[k] = x.node;
      f.rotary_product[k++] = x.slot;
    }
  const int first = grp.nodes[0];
  if (grp.packed_b < 0) return emit_products(e, {first}, {e.node(first).inputs[1], first, {0}, {0}}, f);
  Operands o{grp.packed_b, grp.packed_c, {}, {}};
  const Lowered& low = e.lowered();
  for (int m : grp.nodes) {
    o.b_offsets.push_back(
        static_cast<uint32_t>(low.tensors[static_cast<size_t>(e.node(m).inputs[1])].alias_offset / 4));
    o.c_offsets.push_back(static_cast<uint32_t>(low.tensors[static_cast<size_t>(m)].alias_offset / 4));
  }
  emit_products(e, grp.nodes, o, f);
}

}  // namespace meganeura::lower
