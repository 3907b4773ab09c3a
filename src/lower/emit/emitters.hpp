// The emitters: each turns one dispatch group (dispatch_group.hpp) of its archetype into kernel
// calls. emit_table.cpp maps archetypes to them; one file per op family.
#pragma once
#include <vector>

#include "lower/dispatch_group.hpp"
#include "lower/emit/emitter.hpp"

namespace meganeura::lower {

// The calls of group `grp`, by its archetype's emitter.
void emit_group(Emitter& e, const DispatchGroup& grp);

void emit_elementwise(Emitter& e, int node);                  // unary, binary, compare, where, cast
void emit_movement(Emitter& e, int node);                     // permute, slice, concat, broadcast_to
void emit_pointwise(Emitter& e, const DispatchGroup& chain);  // a chain as one generated kernel

// What a matmul dispatch computes besides its products (-1: none); each runs as a call of its
// own where the tier the products get cannot take it.
struct MatMulFusions {
  int norm = -1;                        // the norm of a single product's result: in the split-K summing pass
  int glu = -1;                         // swiglu(products[0], products[1]): in the tensor-core kernel's store
  int rotary[2] = {-1, -1};             // a q/k rotary pair of two products: in the split-K summing pass
  uint32_t rotary_product[2] = {0, 0};  // which product each rotates
  int norm_a = -1;  // rms_norm(x, w) that is the products' A: in the GEMV's loads (x·w, rstd at the store)
  const DispatchGroup* group = nullptr;  // the group: its cache appends (FusedAs::Append) go with the rotary pair
};
inline constexpr int64_t kMaxFusedNormDim = 4096;  // matmul_split_sum_norm.comp keeps a row in shared memory
void emit_matmul(Emitter& e, const DispatchGroup& products);
void emit_product_sum(Emitter& e, const DispatchGroup& sum);
bool is_coop(kernels::Kernel k);   // a tensor-core matmul kernel
bool is_coop2(kernels::Kernel k);  // one on workgroup-scope matrices (VK_NV_cooperative_matrix2)
bool is_gemv(kernels::Kernel k);   // a matmul kernel for a few rows
// Spec 11 of the tiled products (the tensor cores' K_STEP, or the exact kernel's CPU_TILE on
// lavapipe) and 13 (ONE_EXPONENT), where they are not the defaults.
void tile_spec(const LowerOptions& options, std::vector<uint32_t>& spec, const MatMulPlan& plan);
// Spec constant `id` (numbered as the shaders number them) of a tiled product set to `value`, those
// before it that are not set yet at their defaults (spec constants are positional): 0, and the
// plan's K step for the tensor cores' spec 11.
void set_matmul_spec(std::vector<uint32_t>& spec, uint32_t id, uint32_t value, const MatMulPlan& plan);
// The tensor-core kernels' bindings 10 (GLU_STAGED's copy: C again) and, where they stage in
// the kernel, 11 (scale history: a word per row job and per column tile of each split, for each
// of `batch` entries; matmul_coop.glsl), after the nine every tier binds.
void bind_coop_tail(Emitter& e, KernelCall& c, uint64_t batch, uint64_t row_jobs, uint64_t split_tiles);

// map: the product or abs the reduction maps as it loads, or -1.
void emit_reduce(Emitter& e, int node, int map = -1);
void emit_row(Emitter& e, int node);    // softmax, log_softmax, rms_norm, layer_norm
void emit_index(Emitter& e, int node);  // gather, scatter_add, one_hot, cache_write, cross_entropy
kernels::IndexParams cache_write_params(const Emitter& e, int cache_write);  // its rows' layout in the cache
// The fused backward ops of autodiff: softmax/log_softmax, norm weight gradients, cross_entropy,
// slice (gelu/gelu_tanh/silu_backward are elementwise).
void emit_backward(Emitter& e, int node);
// rms_norm / layer_norm backward; `add`: an add of its result and another tensor, computed in
// the same pass, or -1.
void emit_norm_backward(Emitter& e, int node, int add = -1);
void emit_attention(Emitter& e, int node, int partner = -1);  // attention and attention_backward
// Rotary (or its transpose), alone or paired; with its group, the cache appends that joined it.
void emit_rotary(Emitter& e, int node, int partner = -1, const DispatchGroup* group = nullptr);
void emit_training(Emitter& e, const DispatchGroup& grp);     // the training ops, alone or over a pack
kernels::RotaryPart rotary_part(const Emitter& e, int node);  // a rotary node as a kernel part

// An attention output's tensor holds, after the output, the log-sum-exp of each of its rows.
int64_t attention_lse_rows(const Shape& out);
// Parameter blocks shared by a forward row op and its backward.
kernels::SoftmaxParams softmax_params(const Shape& s, int64_t axis);  // [outer, len, inner] around axis
kernels::NormParams norm_params(const Shape& x, double eps);          // rows x last dim of x

// Where the kernel that writes node `id` (a norm, a workgroup a row) should also stage its rows
// for a tensor-core product that reads them next with weights staged once (emit_staging.cpp):
// the scratch it writes them to, registered with the Emitter; -1 where no product would read it.
// one_exponent: the writer stages every block at one exponent (a norm's bound, stage_rows.glsl).
int stage_rows_for_products(Emitter& e, int id, kernels::StagedRowsParams& layout, bool one_exponent);

}  // namespace meganeura::lower
