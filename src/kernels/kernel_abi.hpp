// The contract between lowering (C++) and the GLSL kernels: which kernels exist, their
// specialization constants, bindings and parameter blocks. The GLSL side mirrors the structs
// in src/kernels/*.comp; keep the two in step (std430 layout: every field is 4 bytes).
//
// Every kernel has the same descriptor layout:
//   binding 0: params block (one of the structs below, at this dispatch's offset): a uniform
//              buffer in std430 layout (PARAMS_BLOCK, common.glsl), or a storage buffer on
//              devices without uniformBufferStandardLayout (vulkan/context.hpp)
//   binding 1: status block (uint code, node, value, limit) for kernels that check indices
//   binding 2..: tensors, inputs first then the output, as listed per kernel
// Tensor buffers are declared as `uint data[]` and bit-cast, so one kernel serves f32/i32/u32.
// Specialization constant 0 is the workgroup size in x (local_size_x_id = 0).
#pragma once
#include <cstdint>

#include "kernels/attention_abi.hpp"  // the attention kernels' part of the contract

namespace meganeura::kernels {

enum class Kernel : uint8_t {
  Elementwise,     // unary/binary/compare/where/convert/copy with strided, broadcast access
  Cast16,          // f32 <-> f16/bf16 (two 16-bit elements per 32-bit word)
  MatMul,          // batched C = A·B, strided A and B (transposes are strides); f32 register tiles
  MatMulGemv,      // the same contract for a few rows (decode), exact f32
  MatMulSplitSum,  // split-K's second pass: adds the partial sums, applies the epilogue
  // The same contract on tensor cores (matmul_coop.glsl), 64x64 tiles. The KHR variants exist
  // where the build's glslang compiled them (kernel_built).
  MatMulCoopNV,
  MatMulCoopKHR,       // f16 staging
  MatMulCoopKHRBf16,   // bf16 staging
  Reduce,              // sum/max/argmax over a set of axes, optional map of one or two inputs
  Softmax,             // softmax or log-softmax along one axis
  Norm,                // rms_norm / layer_norm over the last axis
  CrossEntropyRows,    // per-row loss and valid flag
  CrossEntropyFinish,  // sum(loss) / sum(valid)
  Gather,
  ScatterAdd,
  OneHot,
  // backward and training kernels
  SoftmaxBackward,          // softmax / log-softmax backward along one axis
  NormBackward,             // rms_norm / layer_norm: d x
  NormWeightGrad,           // d weight = sum over rows of dy * normalised x
  CrossEntropyCount,        // number of labels that count (not ignore_index)
  CrossEntropyBackward,     // d logits, fused: never builds a one-hot or a softmax tensor
  Optimizer,                // SGD / Adam / AdamW update of one parameter, in place
  ClipScale,                // global-norm clipping factor from per-tensor sums of squares
  CacheWrite,               // rows into a state at a position read on the device (IndexParams)
  Attention,                // softmax(q·kᵀ·scale [+ causal])·v, online softmax; saves the log-sum-exp
  AttentionBackward,        // d q, d k or d v from the saved log-sum-exp (spec 1 picks which)
  AttentionCoopNV,          // Attention on tensor cores for D == Dv, D % 16 == 0, D <= 128 (spec 2: D)
  AttentionBackwardCoopNV,  // AttentionBackward likewise (spec 3: D)
  AttentionCoopSplitNV,     // Attention on tensor cores, keys split among subgroups: short queries, D <= 64
  Rotary,                   // rotary embedding (or its transpose) of one or two tensors
  MatMulSplitSumNorm,       // MatMulSplitSum for one product, then rms_norm / layer_norm of each row
  MatMulSplitSumRotary,     // MatMulSplitSum for a group, then the rotary embedding of two of its products
  AttentionBlock,           // Attention for many query rows: key tiles in shared memory, a block of rows a workgroup
  StepScalars,              // a training step's Hyper block from the step counters, which it advances
  StageF16,                 // an f32 operand of the tensor-core matmul staged as scaled f16 blocks
  MatMulCoopStagedNV,       // MatMulCoopNV reading StageF16 outputs (matmul_coop_staged.glsl)
  MatMulCoopStagedTallNV,   // MatMulCoopStagedNV with 128-row tiles, for products of many K steps
  MatMulGemvSubgroup,       // MatMulGemv for [N, K] weights, its team sums through subgroup arithmetic
  MatMulCoop2StagedNV,      // MatMulCoopStagedNV at one exponent along K on workgroup-scope matrices (coopmat2)
  RotaryAppend,             // Rotary of one or two tensors with up to two KV cache appends (RotaryAppendParams)
  DecodeStep,               // a Llama decoding step as one persistent dispatch (decode_step_abi.hpp)
  DecodeWeights,            // DecodeStep's weights rounded to f16 a row at an exponent (decode_step_abi.hpp)
  Count
};

inline constexpr int kMaxKernelRank = 8;
inline constexpr uint32_t kWorkgroupSize = 256;

// Data type codes used by specialization constants.
enum : uint32_t { DT_F32 = 0, DT_I32 = 1, DT_U32 = 2 };

inline constexpr uint32_t kElementwiseInputs = 3;

// Status codes written to binding 1 (first failure wins, via atomicCompSwap on `code`).
// STATUS_SUBGROUP_SIZE: a kernel planned for the device's subgroup size ran with another (value:
// the size it ran with, limit: the planned one; node: none).
enum : uint32_t { STATUS_OK = 0, STATUS_INDEX_OUT_OF_RANGE = 1, STATUS_SUBGROUP_SIZE = 2 };
struct Status {
  uint32_t code, node;
  int32_t value;
  uint32_t limit;
};

// ---- Elementwise ------------------------------------------------------------------------------
// spec 1: EW_OP; spec 2: dtype of input 0; spec 3: dtype of input 1; spec 4: dtype of output.
// Bindings 2, 3, 4: inputs (those past the arity are bound to input 0 and not read); binding 5:
// the output. Arity: 1 (unary, COPY, CONVERT), 2 (binary, compare), 3 (WHERE: cond, a, b). For each output index i in
// [0, n): unravel i over `shape` (row-major, `rank` dims), input k reads element in_offset[k] + sum_d
// idx[d]*in_stride[k*8+d], and the result goes to out_offset + sum_d idx[d]*out_stride[d]. Strides are in elements (0 =
// broadcast). Arithmetic ops read and write f32. Compares read dtype spec 2 (both inputs the same dtype) and write a
// u32 0/1. WHERE copies the 32-bit pattern of a or b (cond nonzero selects a; cond read as dtype spec 2, f32 -0.0
// counts as zero). COPY copies the bit pattern. CONVERT converts dtype spec 2 to dtype spec 4 (f32->int truncates
// toward zero, like C++).
enum : uint32_t {
  EW_COPY = 0,
  EW_CONVERT,
  EW_NEG,
  EW_ABS,
  EW_EXP,
  EW_LOG,
  EW_SQRT,
  EW_RSQRT,
  EW_RECIPROCAL,
  EW_RELU,
  EW_GELU,
  EW_GELU_TANH,
  EW_SILU,
  EW_SIGMOID,
  EW_TANH,
  EW_SIN,
  EW_COS,
  EW_POW,  // EW_POW: x^scalar (pow(x,2) = x*x exactly)
  EW_ADD,
  EW_SUB,
  EW_MUL,
  EW_DIV,
  EW_MAX,
  EW_MIN,  // MAX/MIN propagate NaN like PyTorch
  EW_EQ,
  EW_NE,
  EW_LT,
  EW_LE,
  EW_GT,
  EW_GE,
  EW_WHERE,
  // binary (a = x, b = dy): dy * f'(x)
  EW_GELU_GRAD,
  EW_GELU_TANH_GRAD,
  EW_SILU_GRAD,
  EW_FILL,    // arity 1 (input bound, not read): writes `scalar` (as f32 bits) to every output element
  EW_SWIGLU,  // binary (a = g, b = u): silu(g) * u
  EW_ERF,     // unary (appended: the GLSL side numbers the ops)
  EW_ASSIGN   // binary: b (assign's value; a is the target it replaces)
};
// ---- Rotary -----------------------------------------------------------------------------------
// spec 1: TRANSPOSED. Bindings 2: x of part 0, 3: x of part 1 (part 0's again when alone), 4: cos,
// 5: sin, 6: y of part 0, 7: y of part 1 (a second, otherwise unused tensor when alone: never a
// binding the call reads). Part k: y = x cos + rotate_half(x) sin over n elements of x's
// contiguous shape (collapsed to rank <= 8, the last axis D kept), cos/sin read at
// offset + sum of index * stride (broadcast strides are 0); rotate_half(x) = (-x[D/2:], x[:D/2]).
// TRANSPOSED: y = x cos + (x[D/2:] sin[D/2:], -x[:D/2] sin[:D/2]). One invocation per element of
// part 0, then of part 1, grid-stride.
struct RotaryPart {
  uint32_t n, rank, cos_offset, sin_offset;
  uint32_t shape[kMaxKernelRank], cos_stride[kMaxKernelRank], sin_stride[kMaxKernelRank];
};
struct RotaryParams {
  uint32_t parts, pad[3];
  RotaryPart part[2];
};
// RotaryAppend: Rotary (not transposed; bindings 2..7 as Rotary's) and up to two KV cache
// appends (`appends`), each as CacheWrite's IndexParams with its `source`: 0 or 1, part 0's or
// part 1's y; 2, the `copied` words at binding 8. Binding 9: the position (i32), 10 and 11: the
// appends' caches (a second, otherwise unused tensor where there is one append). Invocation i:
// element i of part 0, then of part 1, then of binding 8, grid-stride.
struct CacheAppend {
  uint32_t source, outer, len, inner, n_idx, node, pad[2];
};
struct RotaryAppendParams {
  uint32_t parts, appends, copied, pad;
  RotaryPart part[2];
  CacheAppend append[2];
};
inline constexpr uint32_t kAppendFromRows = 2;  // CacheAppend::source of binding 8's rows

struct ElementwiseParams {
  uint32_t n, rank, out_offset, in_offset[3];
  float scalar;
  uint32_t pad;
  uint32_t shape[kMaxKernelRank];
  uint32_t out_stride[kMaxKernelRank];
  uint32_t in_stride[3 * kMaxKernelRank];
};

// ---- Pointwise (generated) ---------------------------------------------------------------------
// Kernels generated at session build from a DAG of elementwise ops (src/kernels/pointwise_source.cpp,
// src/lower/fuse_elementwise.cpp). No spec constants but the workgroup size. Bindings 2 .. 2+k-1:
// the k inputs, 2+k: the output, contiguous. For each output index i in [0, n): unravel i over
// `shape` (row-major, `rank` dims); input j reads element in_offset[j] + sum_d idx[d]*in_stride[j*8+d]
// (0 = broadcast); the result goes to out[i].
inline constexpr uint32_t kPointwiseMaxInputs = 8;
struct PointwiseParams {
  uint32_t n, rank, pad[2];
  uint32_t shape[kMaxKernelRank];
  uint32_t in_offset[kPointwiseMaxInputs];
  uint32_t in_stride[kPointwiseMaxInputs * kMaxKernelRank];
};

// ---- Cast16 -----------------------------------------------------------------------------------
// spec 1: CAST_MODE. Bindings 2: input, 3: output. Both contiguous, n elements. Each invocation
// handles one 32-bit word of the 16-bit side (elements 2w and 2w+1; the odd tail's upper half is
// zero on write). f32->f16 and f32->bf16 round to nearest even; NaN stays NaN, overflow to inf.
enum : uint32_t { CAST_F16_TO_F32 = 0, CAST_BF16_TO_F32, CAST_F32_TO_F16, CAST_F32_TO_BF16 };
struct Cast16Params {
  uint32_t n;
};

// ---- MatMul -----------------------------------------------------------------------------------
// Bindings 2: A, 3: B, 4: C (all f32). A matmul is `groups` (1..4) products that share A and K:
// group g has N[g] columns, its B at b_offset[g] with strides b_row_stride[g]/b_col_stride[g],
// its C at c_offset[g] (horizontal fusion: Q/K/V or gate/up projections in one dispatch, B and C
// bindings spanning every group's tensor). For batch b (unravelled over batch_shape, batch_rank
// dims, row-major) A(m,k) = A[a_offset + a_batch + m*a_row_stride + k*a_col_stride],
// B_g(k,n) = B[b_offset[g] + b_batch + k*b_row_stride[g] + n*b_col_stride[g]], where x_batch =
// sum over batch dims of idx*x_batch_stride; C_g is contiguous: C[c_offset[g] + b*M*N[g] + m*N[g] + n].
// Column tiles are numbered across groups: group g owns tiles tile0[g] .. tile0[g+1]-1.
// Dispatch: x = tile0[groups], y = ceil(M/TILE_M) * splits, z = min(batch, 65535) (loops over
// the rest). The tile depends on the kernel (lower/matmul_tiers.cpp): 64x64 for MatMul and the
// tensor-core kernels, 4 rows x 8 or 64 columns for MatMulGemv.
// Split-K (splits > 1): row job y covers K range y % splits of k_chunk elements. Spec 4
// SPLIT_PARTIAL = SPLIT_PARTIAL_PASS writes raw sums to binding 4 (scratch) at split *
// split_stride; then MatMulSplitSum (binding 2: that scratch) adds them and applies the epilogue.
// SPLIT_FINISH (MatMul and the tensor-core kernels): the raw sums go to the scratch at binding 7
// (MatMul) or 8 (tensor cores), the next binding holds a u32 count per output tile (batch x row
// tiles x tile0[groups], zero between dispatches), and the last split of a tile to arrive adds
// the partials in split order and stores C with the epilogue. Both kernels always bind those two
// (C again when not finishing).
// MatMulSplitSumNorm does the same for one contiguous product, a workgroup per row, and then
// normalises the row as Norm does: spec 5 NORM_KIND (NORM_RMS/NORM_LAYER), 6 HAS_WEIGHT,
// 7 HAS_BIAS, 8 eps (f32 bits); bindings 7: weight, 8: bias, 9: the norm's output; params
// MatMulNormParams; spec 9 STAGE_ROWS, binding 10 the staged copy (9 again without it). Spec 5 of
// MatMulGemv: K_CONTIG (B(k, n) contiguous along k); 6: VEC4; 7 NORM_A, 8 its eps (f32 bits): A is
// rms_norm(x, w) with x bound as A and w at binding 7 (every GEMV call binds 7: A again without
// NORM_A); 9 GLU: gate and up, and silu(gate)·up at binding 8 (C again without GLU); 10 K_GROUPS
// (0); 11 TEAM, invocations a column with K_CONTIG (32, 64 or 128; tiles 256 / TEAM wide); 12 UNROLL, VEC4 loads of B
// an invocation issues before it multiplies (1, 2, 4 or 8). MatMulGemvSubgroup (K_CONTIG 1 only): the same, with 11
// TEAM a multiple of the subgroup size, 13 TEAM_COLS (columns a team; even with GLU), 14 ROWS (1..4, tile_m rows a
// row block), 15 SUBGROUP (the device's subgroup size); tiles (256 / TEAM) * TEAM_COLS wide. The tensor-core kernels
// bind 7 too: spec 9 GLU's silu(gate)·up, else C again; their spec 11 K_STEP is K a step, 32 (default) or 64 (each K
// group then a multiple of 64); binding 10 GLU_STAGED's copy (C again without it) and, where they stage in the kernel
// (not the Staged kernels), 11 their scale history (matmul_coop.glsl). MatMulCoopStagedNV reads A and B as StageF16
// outputs: a_offset, a_row_stride, b_offset[g] and b_row_stride[g] in words of them, B_KCONTIG 1, K_GROUPS 0, batch 1.
// Linear's epilogue (one group only): spec 1 HAS_BIAS, spec 2 ACT (LIN_ACT_*), spec 3 HAS_RESIDUAL; bindings 5: bias
// [N] at bias_offset, 6: residual R(b,m,n) = R[r_offset + r_batch + m*r_row_stride + n*r_col_stride] (broadcast strides
// may be 0). Every call binds at least five tensors: a plain matmul binds A and B again at 5 and 6 (never C), and its
// spec constants are all 0. C = act(A·B + bias) + R.
inline constexpr uint32_t kMatMulMaxGroups = 4;
enum : uint32_t { SPLIT_PARTIAL_PASS = 1, SPLIT_FINISH = 2 };  // spec 4
enum : uint32_t { LIN_ACT_NONE = 0, LIN_ACT_RELU, LIN_ACT_GELU, LIN_ACT_GELU_TANH, LIN_ACT_SILU };
struct MatMulParams {
  uint32_t M, K, batch, batch_rank;
  uint32_t a_offset, a_row_stride, a_col_stride, groups;
  uint32_t batch_shape[4], a_batch_stride[4], b_batch_stride[4];
  uint32_t bias_offset, r_offset, r_row_stride, r_col_stride, r_batch_stride[4];
  uint32_t N[kMatMulMaxGroups], tile0[kMatMulMaxGroups + 1], k_chunk, splits, split_stride;
  uint32_t b_offset[kMatMulMaxGroups], c_offset[kMatMulMaxGroups];
  uint32_t b_row_stride[kMatMulMaxGroups], b_col_stride[kMatMulMaxGroups];
  // A sum of products (MatMul and the tensor-core kernels; kgroups > 1): C = sum_j A_j·B_j,
  // K = sum_j K_j, k in [k_begin[j], k_begin[j+1]) reads product j. Every A_j is [M, K_j]
  // row-major in binding 2, A_j(m, k) = A[ka_shift[j] + m * ka_row[j] + k]; every B_j is
  // [K_j, N] in binding 3 with B's strides, at its element offset plus kb_shift[j] (shifts are
  // the product's offset less where its k range begins, mod 2^32). Each K_j is a multiple of 32.
  // Spec 10 K_GROUPS = 1 marks such a call (spec 9, GLU, then 0).
  uint32_t kgroups, k_begin[kMatMulMaxGroups], ka_shift[kMatMulMaxGroups], ka_row[kMatMulMaxGroups];
  uint32_t kb_shift[kMatMulMaxGroups];
};

// ---- StageF16 -------------------------------------------------------------------------------
// Bindings 2: the f32 operand, 3: the staged output (a scratch). Element (r, k), r < rows,
// k < K, is in[in_offset + r * row_stride + k * col_stride]. The output, from word out_offset:
// padded_rows (a multiple of 64) rows of row_words words (a multiple of 32), two f16 values a word
// (k even in the low half), zero past rows and K; then a signed exponent a word for each block of
// 16 rows x 32 k, row blocks major: the block's values are x * 2^e rounded to f16, e from its
// largest finite magnitude (stage_scale.glsl); with spec 1 WHOLE_ROWS (weights staged once, the A
// of a MatMulCoop2StagedNV product), from the largest of its 16 rows over all of K, so that every
// block of those rows shares it. Workgroups of 256 (8 subgroups of 32, a block each; WHOLE_ROWS:
// a block of 16 rows a workgroup).
// MatMulCoopStagedNV reads it (matmul_coop_staged.glsl; spec 13 ONE_EXPONENT where A's blocks
// also share one exponent along K).
// MatMulCoop2StagedNV (matmul_coop2.glsl, built where scripts/fetch_glslang.sh's glslang is; needs
// VK_NV_cooperative_matrix2): MatMulCoopStagedNV's bindings 2-6 and params for operands whose
// blocks share one exponent along K (ONE_EXPONENT), batch 1, no split: spec 1-3 the epilogue, 16
// BM, 17 BN, 18 BK; x = column tiles of BN over the group's products (tile0 counts them), y =
// ceil(M / BM).
// A staged A's rows are padded to 128, the rows of MatMulCoopStagedTallNV's tile (128 x 64;
// MatMulCoopStagedNV's is 64 x 64), so that either reads the same layout.
inline constexpr uint32_t kStagedRowTile = 128;
struct StageF16Params {
  uint32_t rows, K, in_offset, row_stride;
  uint32_t col_stride, out_offset, row_words, padded_rows;
};

// A row producer's staged copy of its output (StagedRows, stage_rows.glsl): Norm and
// MatMulSplitSumNorm with spec STAGE_ROWS write, beside their f32 rows, StageF16's layout from
// word 0 of one more binding: padded_rows rows of row_words words (zero past the rows and the
// dimension), then the block exponents, every block at one exponent taken from a bound on the
// norm's output (sqrt(dim) * max |weight| + max |bias|) that each workgroup knows without a
// reduction over rows. The tensor-core matmul that reads the rows next then needs no StageF16.
struct StagedRowsParams {
  uint32_t row_words, padded_rows, pad0, pad1;
};
// MatMulSplitSumNorm's params block.
struct MatMulNormParams {
  MatMulParams matmul;
  StagedRowsParams staged;
};

// MatMulSplitSumRotary: MatMulParams, then this tail. Bindings 2..6 as MatMulSplitSum, 7: cos,
// 8: sin, 9 and 10: the rotary of part 0 and part 1, each part (as Rotary's, not transposed) the
// whole of product[k]'s output.
struct MatMulRotaryParams {
  MatMulParams matmul;
  uint32_t product[2], pad[2];
  RotaryPart part[2];
};

// ---- Reduce -----------------------------------------------------------------------------------
// spec 1: RED_OP; spec 2: RED_MAP. Bindings 2: a, 3: b (only read by two-input maps; bind a
// again otherwise), 4: out. One workgroup per output element o in [0, n_out) (grid-stride over
// o with gl_NumWorkGroups.x). The kept index o unravels over kept_shape (kept_rank dims); the
// reduced index r in [0, n_red) over red_shape (red_rank dims). The element read is
// a[sum kept_idx*kept_stride + sum red_idx*red_stride] (b at the same position).
// value = MAP(a, b); out[out_offset + o] = scale * SUM(value), or MAX(value) (NaN propagates), or for ARGMAX
// the (i32) r of the first maximum (the first NaN if any). Sums accumulate in f32 per thread
// then tree-reduce in shared memory.
enum : uint32_t { RED_SUM = 0, RED_MAX, RED_ARGMAX };
// MAP_SQDIFF: (a-b)^2. MAP_BCE: -(b*max(log a,-100) + (1-b)*max(log(1-a),-100)).
// MAP_BCE_LOGITS: max(a,0) - a*b + log1p(exp(-|a|)).
// MAP_SQUARE: a*a (b not read). MAP_MUL: a*b, MAP_ABS: |a| (a reduction of a product or abs
// nothing else reads, lower/pairs.cpp).
enum : uint32_t { MAP_NONE = 0, MAP_SQDIFF, MAP_BCE, MAP_BCE_LOGITS, MAP_SQUARE, MAP_MUL, MAP_ABS };
struct ReduceParams {
  uint32_t n_out, n_red, kept_rank, red_rank;
  float scale;
  uint32_t out_offset;  // elements: lets several reductions fill one vector (gradient norms)
  uint32_t pad[2];
  uint32_t kept_shape[kMaxKernelRank], kept_stride[kMaxKernelRank];
  uint32_t red_shape[kMaxKernelRank], red_stride[kMaxKernelRank];
};

// ---- Softmax ----------------------------------------------------------------------------------
// spec 1: 1 for log-softmax. Bindings 2: x, 3: out, both contiguous [outer, len, inner].
// One workgroup per row (o, i), grid-stride over outer*inner rows; element l at
// o*len*inner + l*inner + i. Numerically stable (subtract the row max).
struct SoftmaxParams {
  uint32_t outer, len, inner, pad;
};

// ---- Norm -------------------------------------------------------------------------------------
// spec 1: NORM_KIND; spec 2: has weight; spec 3: has bias. Bindings 2: x, 3: weight, 4: bias,
// 5: out (absent weight/bias are bound to x and not read). x, out contiguous [rows, dim].
// rms:   out = x * inversesqrt(mean(x^2) + eps) * w
// layer: out = (x - mean) * inversesqrt(var + eps) * w + b   (biased variance, two-pass)
enum : uint32_t { NORM_RMS = 0, NORM_LAYER };
struct NormParams {
  uint32_t rows, dim;
  float eps;
  uint32_t pad;
};
// Norm's params block: NormParams, then StagedRowsParams (spec 4 STAGE_ROWS, binding 6: the
// staged copy; bound to out and not written without it).
struct NormCallParams {
  NormParams norm;
  StagedRowsParams staged;
};

// ---- CrossEntropyRows / CrossEntropyFinish ----------------------------------------------------
// Rows: bindings 2: logits [rows, classes] f32, 3: labels [rows] i32, 4: scratch [2*rows] f32.
// One workgroup per row: label == ignore_index -> scratch[r] = 0, scratch[rows+r] = 0; label
// outside [0, classes) -> status INDEX_OUT_OF_RANGE (node, value = label, limit = classes) and
// zeros; else scratch[r] = logsumexp(row) - row[label], scratch[rows+r] = 1.
// Finish (one workgroup): bindings 2: scratch, 3: out[1] = sum(scratch[0:rows]) /
// sum(scratch[rows:2rows]) (0/0 = NaN, as PyTorch gives when every label is ignored).
struct CrossEntropyParams {
  uint32_t rows, classes;
  int32_t ignore_index;
  uint32_t node;
};

// ---- Gather / ScatterAdd / OneHot -------------------------------------------------------------
// spec 1: dtype of the indices (DT_I32 or DT_U32). An index v is valid in [-len, len) (negative
// wraps once); otherwise status INDEX_OUT_OF_RANGE (node, value = v, limit = len) and the
// element is skipped (Gather/OneHot write 0). Gather and ScatterAdd spec 2 WINDOW_PADDING
// (Attrs::window_padding): an index equal to len is a padding tap, skipped without a report
// (Gather writes the f32 whose bits are its spec 3, Attrs::scalar).
// Gather: bindings 2: x, 3: idx, 4: out. out[(o*n_idx + j)*inner + i] = x[(o*len + idx[j])*inner + i]
//   (bit copy, any 32-bit dtype), for o < outer, j < n_idx, i < inner.
// ScatterAdd: bindings 2: updates, 3: idx, 4: out (already holding base; f32):
//   out[(o*len + idx[j])*inner + i] += updates[(o*n_idx + j)*inner + i]   (atomic add).
// OneHot: bindings 2: idx, 3: out f32 [n_idx, len]: out[j*len + c] = (idx[j] == c) ? 1 : 0.
struct IndexParams {
  uint32_t outer, len, inner, n_idx, node, pad[3];
};

// ---- SoftmaxBackward ---------------------------------------------------------------------------
// spec 1: 1 for log-softmax. Bindings 2: y (the forward output), 3: dy, 4: dx; layout and
// dispatch as Softmax (SoftmaxParams). softmax: dx = y * (dy - sum_l(dy*y));
// log-softmax: dx = dy - exp(y) * sum_l(dy).

// ---- NormBackward / NormWeightGrad (NormParams) -----------------------------------------------
// spec 1: NORM_KIND; NormBackward spec 2: has weight. Rows [rows, dim] contiguous.
// xhat = (x - mean) * rstd (mean = 0 for rms), rstd = 1/sqrt(var + eps) (rms: mean(x^2)).
// NormBackward: bindings 2: x, 3: weight (bound to x when absent, not read), 4: dy, 5: dx,
//   6: an addend (spec 3 HAS_ADD: dx + it is stored; bound to x otherwise), 7: the row
//   statistics, (mean, rstd) per row (spec 4 WRITE_STATS; bound to dx and not written otherwise).
//   g = dy * w;  rms: dx = rstd * (g - xhat * mean(g * xhat));
//   layer: dx = rstd * (g - mean(g) - xhat * mean(g * xhat)). One workgroup per row.
// NormWeightGrad: bindings 2: x, 3: dy, 4: dw [dim], 5: the row statistics NormBackward wrote
//   for the same x and dy (spec 2 READ_STATS; bound to x otherwise, and each workgroup works out
//   the statistics of every row itself). dw[d] = sum_r dy[r,d] * xhat[r,d]. Each workgroup owns
//   16 columns (grid-stride over dim; dispatch ceil(dim/16) groups); its invocations take 16
//   rows at a time.

// ---- CrossEntropyCount / CrossEntropyBackward (CrossEntropyParams) ---------------------------
// Count (one workgroup): bindings 2: labels [rows] i32, 3: count [1] f32 = number of labels
//   != ignore_index.
// Backward: bindings 2: logits [rows, classes], 3: labels, 4: dloss [1], 5: count [1],
//   6: dlogits. One workgroup per row: label == ignore_index -> zeros; else
//   dlogits[r,c] = (softmax(row)[c] - (c == label)) * dloss / count. Labels out of range report
//   INDEX_OUT_OF_RANGE (as CrossEntropyRows) and write zeros. Spec 1 COUNT_HERE: each workgroup
//   counts the labels itself (binding 5 is not read; no Count dispatch before it).

// ---- Optimizer --------------------------------------------------------------------------------
// spec 1: OPT_ALGO; spec 2: 1 if momentum != 0 (SGD); spec 3: nesterov (SGD);
// spec 4: 1 to zero the gradient after applying it (gradient accumulation buffers).
// Bindings 2: param (read-write), 3: grad (read-write), 4: state1 (SGD momentum buffer / Adam m),
// 5: state2 (Adam v; bound to state1 for SGD), 6: hyper (Hyper, read). Unused states are bound
// to the param and not touched. Elementwise over n (grid-stride).
// If hyper.apply == 0 the kernel does nothing (a gradient-accumulation step).
// g = grad * grad_scale * hyper.clip_scale; lr = hyper.lr * lr_scale
// SGD:   if weight_decay: g += weight_decay * p; if momentum: buf = momentum*buf + g;
//        g = nesterov ? g + momentum*buf : buf;  p -= lr * g        (torch.optim.SGD, dampening 0)
// Adam:  g += weight_decay * p (L2, torch.optim.Adam); m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
//        p -= lr * (m / hyper.bias1) / (sqrt(v / hyper.bias2) + eps)
// AdamW: p *= 1 - lr * weight_decay; then Adam without the L2 term    (torch.optim.AdamW)
// Then, with spec 4, grad = 0.
enum : uint32_t { OPT_SGD = 0, OPT_ADAM, OPT_ADAMW };
struct OptimizerParams {
  uint32_t n;
  float lr_scale, grad_scale, weight_decay, momentum, beta1, beta2, eps;
};
// The per-step scalars, written by StepScalars at the start of every step (lr from the schedule,
// the bias corrections 1 - beta^t, apply) and by ClipScale (clip_scale; 1 when clipping is off).
struct Hyper {
  float lr, bias1, bias2, clip_scale;
  uint32_t apply, pad[3];
};

// ---- StepScalars ------------------------------------------------------------------------------
// One invocation. Bindings 2: counters [4] u32 (micro-steps, optimizer steps; read-write),
// 3: settings [8] f32 (graph/train_ops.hpp StepValue), 4: hyper (Hyper, written). No params.
struct StepParams {
  uint32_t unused[4];
};

// ---- ClipScale --------------------------------------------------------------------------------
// One workgroup. Bindings 2: sums [count] f32 (each a tensor's sum of squares), 3: hyper
// (read-write). norm = sqrt(sum of sums); hyper.clip_scale = min(1, max_norm / (norm + 1e-6))
// (torch.nn.utils.clip_grad_norm_), written only when hyper.apply != 0 (else left as is).
struct ClipParams {
  uint32_t count;
  float max_norm;
  uint32_t pad[2];
};

}  // namespace meganeura::kernels
