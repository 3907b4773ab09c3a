// Shared state of lowering while it walks the graph: emits kernel calls and scratch tensors.
#pragma once
#include <cstring>
#include <map>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "lower/lowered.hpp"
#include "lower/pairs.hpp"
#include "lower/strides.hpp"

namespace meganeura::lower {

inline constexpr uint32_t kMaxGroups = 65535;  // the minimum every Vulkan device supports per dimension

inline uint32_t groups_for(int64_t items, int64_t per_group = kernels::kWorkgroupSize) {
  int64_t g = (items + per_group - 1) / per_group;
  return static_cast<uint32_t>(std::min<int64_t>(std::max<int64_t>(g, 1), kMaxGroups));
}

uint32_t dtype_code(DType t);  // kernels::DT_*

// One operand of a strided elementwise call: a tensor read (or written) at offset + strides.
struct Operand {
  int tensor;
  int64_t offset = 0;
  Strides strides;
};

class Emitter {
 public:
  Emitter(const Graph& g, Lowered& out, const LowerOptions& options) : g_(g), out_(out), options_(options) {}
  const Graph& graph() const { return g_; }
  const LowerOptions& options() const { return options_; }
  const Node& node(int id) const { return g_.node(id); }
  const Lowered& lowered() const { return out_; }

  KernelCall& call(kernels::Kernel k, int node, std::string what);
  // A call of a kernel generated from the graph (identical sources share one entry).
  KernelCall& generated_call(kernels::GeneratedKernel k, int node, std::string label);
  int scratch(uint64_t bytes);
  int state(uint64_t bytes);  // persistent, zeroed at session build, owned by one kernel call
  // The scratch where a norm backward (rms or not) left the row statistics of x (with gradient
  // dy), or -1.
  int norm_stats(int x, int dy, bool rms) const {
    auto it = norm_stats_.find({x, dy, rms});
    return it == norm_stats_.end() ? -1 : it->second;
  }
  void set_norm_stats(int x, int dy, bool rms, int scratch) { norm_stats_[{x, dy, rms}] = scratch; }

  template <class P>
  static void set_params(KernelCall& c, const P& p) {
    static_assert(std::is_trivially_copyable_v<P> && sizeof(P) % 4 == 0);
    c.params.resize(sizeof(P) / 4);
    std::memcpy(c.params.data(), &p, sizeof(P));
  }

  // out[...] = OP(inputs[...]) over `shape`, every operand addressed by its own strides.
  void elementwise(int node, uint32_t op, const Shape& shape, std::vector<Operand> inputs, Operand out,
                   std::vector<uint32_t> dtypes, float scalar = 0, std::string what = "");

 private:
  const Graph& g_;
  Lowered& out_;
  const LowerOptions& options_;
  std::map<std::tuple<int, int, bool>, int> norm_stats_;
};

uint32_t ew_op(Op op);  // the EW_* code of an elementwise op

// Per-archetype emitters (one file each).
void emit_elementwise(Emitter& e, int node);  // unary, binary, compare, where, cast
void emit_movement(Emitter& e, int node);     // permute, slice, concat, broadcast_to
// A node lowering gives no kernel: its tensor views its input's bytes (a reshape, a permute of
// size-1 axes).
bool is_view(const Graph& g, const Node& n);

// Rotaries sharing cos, sin and direction run in pairs (pairs.hpp), as do an attention's d k
// and d v on the per-row kernel; `partner` is the other node of the pair, or -1.
std::vector<int> pair_rotaries(const Graph& g, const std::vector<bool>& live);
void emit_rotary(Emitter& e, int node, int partner);  // rotary (or its transpose)
kernels::RotaryPart rotary_part(const Emitter& e, int node);  // a rotary node as a kernel part
std::vector<int> pair_attention_grads(const Graph& g, const std::vector<bool>& live);
// A single-product matmul and the rms_norm / layer_norm that reads its result (pairs.hpp): a
// split-K product normalises its rows in the summing pass; otherwise the norm follows it.
inline constexpr int64_t kMaxFusedNormDim = 4096;  // matmul_split_sum_norm.comp keeps a row in shared memory
std::vector<int> pair_matmul_norms(const Graph& g, const std::vector<bool>& live, const std::vector<int>& group_of);
// Nodes a matmul dispatch computes besides its products (-1: none), each run as its own dispatch
// where the tier the products get cannot take it:
struct MatMulFusions {
  int norm = -1;        // the norm of a single product's result: in the split-K summing pass
  int glu = -1;         // swiglu(products[0], products[1]): in the tensor-core kernel's store
  GroupRotary rotary;   // a rotary pair of two products: in the split-K summing pass
  int norm_a = -1;      // rms_norm(x, w) that is the products' A: in the GEMV's loads (x·w, rstd at the store)
};
void emit_matmul(Emitter& e, int node, const MatMulFusions& f = {});
// Several matmuls sharing A in one dispatch (see horizontal.hpp); offsets in elements.
void emit_matmul_products(Emitter& e, const std::vector<int>& products, int weights, int outputs,
                          const std::vector<uint32_t>& b_offsets, const std::vector<uint32_t>& c_offsets,
                          const MatMulFusions& f = {});
// The sum of products whose value node `node` is (pairs.hpp ProductSum), as one dispatch.
void emit_product_sum(Emitter& e, int node, const ProductSum& sum);
// map: the product or abs the reduction maps (Fusions::map_of_reduce), or -1.
void emit_reduce(Emitter& e, int node, int map = -1);
void emit_row(Emitter& e, int node);          // softmax, log_softmax, rms_norm, layer_norm
void emit_index(Emitter& e, int node);        // gather, scatter_add, one_hot, cross_entropy
// The fused backward ops of autodiff: softmax/log_softmax, norms and their weight gradients,
// cross_entropy, slice (gelu/gelu_tanh/silu_backward are elementwise: emit_elementwise).
void emit_backward(Emitter& e, int node);
// rms_norm / layer_norm backward; `add`: an add of its result and another tensor, computed in
// the same pass (Fusions::norm_of_add), or -1.
void emit_norm_backward(Emitter& e, int node, int add = -1);

void emit_attention(Emitter& e, int node, int partner = -1);    // attention and attention_backward
// An attention output's tensor holds, after the output, the log-sum-exp of each of its rows.
int64_t attention_lse_rows(const Shape& out);

// Parameter blocks shared by a forward row op and its backward.
kernels::SoftmaxParams softmax_params(const Shape& s, int64_t axis);  // [outer, len, inner] around axis
kernels::NormParams norm_params(const Shape& x, double eps);          // rows x last dim of x

}  // namespace meganeura::lower
