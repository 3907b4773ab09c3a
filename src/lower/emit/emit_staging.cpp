// Operands staged for the tensor-core matmul before the product: which products stage (weights
// once, by the derived list; A by a StageF16 call or by the kernel that wrote it), the staged
// layout, the StageF16 calls, and the staged kernel's tile (docs/performance.md).
#include <algorithm>

#include "lower/emit/emitters.hpp"
#include "lower/emit/matmul_dispatch.hpp"
#include "meganeura/error.hpp"

namespace meganeura::lower {

using namespace kernels;

namespace {

// Whether `tensor` holds parameters that no call writes (an inference session's weights): what
// is staged from them stays valid until the session's parameters change.
bool constant_parameter(const Emitter& e, int tensor) {
  const Lowered& low = e.lowered();
  return low.tensors[static_cast<size_t>(low.root(tensor))].role == Role::Parameter && !e.written_in_place(tensor);
}

// The words of a staged operand of `padded_rows` rows of `row_words`: the values, then an exponent
// for each block of 16 rows x 32 k (StageF16Params).
uint64_t staged_words(uint64_t padded_rows, uint64_t row_words) {
  return padded_rows * row_words + padded_rows / 16 * (row_words / 16);
}

// One StageF16 call: rows x K of `tensor` (element (r, k) at offset + r * row_stride + k *
// col_stride) into `staged` from word `at`; returns the words it fills. `derived`: a constant
// parameter's, run when parameters change rather than every step. `whole_rows`: each block of 16
// rows at one exponent for all of K (stage_f16.comp's WHOLE_ROWS).
uint64_t stage_operand(Emitter& e, const Dispatch& d, const std::string& what, int tensor, int staged, uint64_t at,
                       StageF16Params sp, bool derived, bool whole_rows) {
  sp.out_offset = u32(at, "staged operand offset");
  std::string label = "stage ";
  label += what;
  KernelCall& c = e.call(Kernel::StageF16, d.id, label);
  c.derived = derived;
  c.tensors = {{tensor, false}, {staged, true}};
  // A subgroup a block, 8 a workgroup. Whole rows (constant weights; the A of a product on
  // workgroup-scope matrices): a workgroup a block of 16 rows, staged at one exponent for all of
  // K, so that their products with a norm's staged rows never rescale (SmolLM2-135M inference on
  // an H200: performance.md).
  const uint64_t row_blocks = uint64_t{sp.padded_rows} / 16;
  if (whole_rows) c.spec = {1u};
  const uint64_t groups = whole_rows ? row_blocks : (row_blocks * (sp.row_words / 16) + 7) / 8;
  c.groups = {static_cast<uint32_t>(std::min<uint64_t>(groups, kMaxGroups)), 1, 1};
  Emitter::set_params(c, sp);
  return staged_words(sp.padded_rows, sp.row_words);
}

uint64_t round64(uint64_t x) { return (x + 63) / 64 * 64; }
constexpr uint64_t kTallStagedMinK = 512;  // K a workgroup sums from which staged tiles are 128 rows
uint64_t round_rows(uint64_t x) { return (x + kStagedRowTile - 1) / kStagedRowTile * kStagedRowTile; }

// The staged layout of a [rows, K] A operand (StageF16's, StagedRowsParams): rows padded to the
// staged kernel's 128-row tile, K to 64.
kernels::StagedRowsParams staged_layout(uint64_t rows, uint64_t K) {
  return {u32(round64(K) / 2, "staged row"), u32(round_rows(rows), "rows"), 0, 0};
}

// A's rows as the kernel that wrote them staged them (StagedRows), where the product reads the
// whole of that tensor as rows of K.
const Emitter::StagedCopy* staged_by_producer(const Emitter& e, const Dispatch& d) {
  const Emitter::StagedCopy* copy = e.staged_rows(d.a_tensor);
  const MatMulParams& p = d.p;
  if (!copy || p.batch != 1 || p.a_offset != 0 || p.a_col_stride != 1 || p.a_row_stride != p.K) return nullptr;
  const StagedRowsParams want = staged_layout(p.M, p.K);
  return copy->layout.row_words == want.row_words && copy->layout.padded_rows == want.padded_rows ? copy : nullptr;
}

// Whether product `id` will read its A, node `a`, staged before it with weights staged once:
// a tensor-core product of the whole of `a` as rows (weights shared by any batch, which folds
// into the rows), as stage_before and staged_by_producer decide it.
bool reads_rows_staged(const Emitter& e, int id, int a) {
  const Node& n = e.node(id);
  if ((n.op != Op::MatMul && n.op != Op::MatMulAdd && n.op != Op::Linear) || n.inputs[0] != a || n.attrs.transpose_a ||
      e.node(n.inputs[1]).shape.size() != 2 || !constant_parameter(e, n.inputs[1]))
    return false;
  const MatMulTiers& t = e.options().matmul;
  const int64_t K = e.node(a).shape.back(), N = n.shape.back();
  const auto M = static_cast<uint64_t>(numel(e.node(a).shape) / K);
  return plan_matmul(t, M, static_cast<uint64_t>(N), static_cast<uint64_t>(K), 1, n.attrs.transpose_b && K > 1)
             .kernel == Kernel::MatMulCoopNV;
}

// Whether the staged product can run on workgroup-scope matrices (MatMulCoop2StagedNV) once both
// operands hold one exponent along K: unsplit, a single product or a group (q/k/v, gate/up), with
// the rows and K where that is faster (MatMulTiers::coop2_min_rows, coop2_min_k).
bool coop2_fits(const Emitter& e, const Dispatch& d) {
  const MatMulTiers& t = e.options().matmul;
  return t.coop2 && d.M >= t.coop2_min_rows && d.p.K >= t.coop2_min_k && d.plan.splits == 1 && d.p.batch == 1 &&
         d.p.kgroups <= 1 && d.n_total / 64 + d.p.groups <= kMaxGroups && (d.M + 63) / 64 <= kMaxGroups;
}

// Its tiles: 128 columns, 128 rows, or 64 where those would leave more than half the SMs without
// a workgroup (the 1.7B shape's q/k/v at 128 tokens: 48 tiles of 128 x 128, 59 µs, against 96 of
// 64 x 128, 40 µs; bench/coopmat2). A gate/up pair is a group of two products, its swiglu a call
// of its own after: with both sums in one workgroup (64 or 128 columns of each) the kernel took
// 3.6-4.0 ms at 8 x 512 tokens of the 1.7B shape, as two products 2.3 ms and the swiglu 0.2.
void plan_coop2(const Emitter& e, Dispatch& d) {
  MatMulParams& p = d.p;
  const uint32_t bn = 128;
  d.glu_here = false;  // one_pass then emits the swiglu as a call of its own
  for (uint32_t g = 0; g < p.groups; ++g)
    p.tile0[g + 1] = p.tile0[g] + u32((p.N[g] + bn - 1) / bn, "matmul column tiles");
  const uint32_t tiles = p.tile0[p.groups], sms = std::max(e.options().matmul.multiprocessors, 2u);
  const uint64_t tall_tiles = (d.M + 127) / 128 * uint64_t{tiles};
  d.plan.kernel = Kernel::MatMulCoop2StagedNV;
  d.plan.tile_m = tall_tiles >= sms / 2 ? 128 : 64;
  d.plan.tile_n = bn;
  d.groups = {std::min(tiles, kMaxGroups), u32((d.M + d.plan.tile_m - 1) / d.plan.tile_m, "matmul row tiles"), 1};
}

}  // namespace

// Stages A (unless the kernel that wrote it did) and every group's B for a STAGED product
// (matmul_coop_staged.glsl), then points the params block at the staged copies: A's rows padded
// to 128, B's to the 64-column tile, K to 64.
void stage_operands(Emitter& e, Dispatch& d) {
  MatMulParams& p = d.p;
  const uint32_t row_words = u32(round64(p.K) / 2, "staged row");
  auto words = [&](uint64_t rows) { return staged_words(round64(rows), row_words); };
  const Emitter::StagedCopy* by_producer = staged_by_producer(e, d);
  const bool constant_b = constant_parameter(e, d.weights);  // staged once, kept
  // Weights staged once take one exponent a block of rows along K (WHOLE_ROWS): with A staged
  // the same way (by a norm as it writes it, or here where that lets the product run on
  // workgroup-scope matrices: the o and down projections of a large prefill), the K loop holds no
  // exponents at all.
  const bool whole_a = !by_producer && constant_b && coop2_fits(e, d);
  const int staged_a = by_producer ? by_producer->tensor : e.scratch(staged_words(round_rows(p.M), row_words) * 4);
  if (!by_producer)
    stage_operand(e, d, "A", d.a_tensor, staged_a, 0,
                  {p.M, p.K, p.a_offset, p.a_row_stride, p.a_col_stride, 0, row_words, u32(round_rows(p.M), "rows")},
                  false, whole_a);
  uint64_t b_words = 0;
  for (uint32_t g = 0; g < p.groups; ++g) b_words += words(p.N[g]);
  const int staged_b = constant_b ? e.state(b_words * 4) : e.scratch(b_words * 4);
  uint64_t at = 0;
  for (uint32_t g = 0; g < p.groups; ++g) {
    const uint32_t from = u32(at, "staged operand offset");
    std::string what = "B";
    if (p.groups > 1) what += std::to_string(g);
    at += stage_operand(
        e, d, what, d.weights, staged_b, at,
        {p.N[g], p.K, p.b_offset[g], p.b_col_stride[g], p.b_row_stride[g], 0, row_words, u32(round64(p.N[g]), "rows")},
        constant_b, constant_b);
    p.b_offset[g] = from;
    p.b_row_stride[g] = row_words;
    p.b_col_stride[g] = 1;
  }
  p.a_offset = 0;
  p.a_row_stride = row_words;
  p.a_col_stride = 1;
  d.a_tensor = staged_a;
  d.weights = staged_b;
  d.layout = {0u, 0u, 1u, 0u};  // B_KCONTIG: staged B is [n][k]
  d.plan.one_exponent = constant_b && (by_producer ? by_producer->one_exponent : whole_a);
  if (d.plan.one_exponent && coop2_fits(e, d)) return plan_coop2(e, d);
  // 128-row tiles where each workgroup runs many K steps and there are still workgroups for every
  // SM (B read by half as many of them: the 1.7B shape's prefill 11.4 -> 8.8 ms on an H200); 64
  // where steps are few (weight gradients over 128 tokens: 45 -> 50 ms a training step with 128
  // everywhere) or the tiles would leave SMs idle (SmolLM2-135M's gate/up: 2.78 -> 3.13 ms).
  const MatMulTiers& t = e.options().matmul;
  const uint64_t tall_groups = (d.M + kStagedRowTile - 1) / kStagedRowTile * p.tile0[p.groups] * d.plan.splits;
  const bool tall = d.plan.k_chunk >= kTallStagedMinK && tall_groups >= (t.multiprocessors ? t.multiprocessors : 128);
  d.plan.kernel = tall ? Kernel::MatMulCoopStagedTallNV : Kernel::MatMulCoopStagedNV;
  d.plan.tile_m = tall ? kStagedRowTile : 64;
  d.groups[1] = u32((d.M + d.plan.tile_m - 1) / d.plan.tile_m * d.plan.splits, "matmul row jobs");
}

// Staging before the product pays where each staged value feeds many products: it converts the
// M·K + N·K values once, where the product's own staging converts M·N·K / 32 (once per 64-wide
// tile of the other side, a value of each a step). H100: matmul 1024³ 49 -> 43 µs, 4096³ 2,493 ->
// 1,756; but at SmolLM2's 128-token shapes (M·N / (M + N) ~ 100) the extra dispatches and the
// weights staged anew each call cost more than they save (inference 2.93 -> 3.57 ms). Weights no
// call writes are staged once (constant_parameter), leaving a dispatch for A: worth it from about
// 2^28 multiply-adds (the 1.7B shape at 128 tokens, 15.9 -> 12.5 ms; each of SmolLM2-135M's
// products but its LM head is smaller, and staging all of them cost 2.91 -> 3.18 ms).
bool stage_before(const Emitter& e, const Dispatch& d) {
  const MatMulTiers& t = e.options().matmul;
  if (t.bf16 || d.plan.kernel != Kernel::MatMulCoopNV || d.p.batch != 1 || t.staged == MatMulTiers::Staged::Never)
    return false;
  if (t.staged == MatMulTiers::Staged::Always) return true;
  if (staged_by_producer(e, d) && constant_parameter(e, d.weights)) return true;  // nothing to stage
  const uint64_t M = d.p.M, N = d.n_total, macs = M * N * d.p.K;
  if (macs >= (uint64_t{1} << 28) && constant_parameter(e, d.weights)) return true;
  return M * N >= 512 * (M + N);
}

int stage_rows_for_products(Emitter& e, int id, StagedRowsParams& layout, bool one_exponent) {
  const MatMulTiers& t = e.options().matmul;
  const Shape& shape = e.node(id).shape;
  if (t.bf16 || t.staged == MatMulTiers::Staged::Never || shape.empty() || shape.back() == 0) return -1;
  const std::vector<int>& readers = e.readers(id);
  if (std::none_of(readers.begin(), readers.end(), [&](int r) { return reads_rows_staged(e, r, id); })) return -1;
  layout = staged_layout(static_cast<uint64_t>(numel(shape) / shape.back()), static_cast<uint64_t>(shape.back()));
  const int copy = e.scratch(staged_words(layout.padded_rows, layout.row_words) * 4);
  e.set_staged_rows(id, {copy, layout, one_exponent});
  return copy;
}

}  // namespace meganeura::lower
