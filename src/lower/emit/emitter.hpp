// What every emitter shares: the kernel calls and scratch tensors it appends to the Lowered.
#pragma once
#include <cstring>
#include <map>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "lower/lowered.hpp"
#include "lower/node_facts.hpp"
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
  Emitter(const Graph& g, Lowered& out, const LowerOptions& options, const NodeUses& uses)
      : g_(g), out_(out), options_(options), uses_(uses) {}
  const Graph& graph() const { return g_; }
  const std::vector<int>& readers(int id) const { return uses_.readers[static_cast<size_t>(id)]; }
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
  // The scratch where the kernel that wrote node `id` also staged its rows for a tensor-core
  // product (StagedRowsParams: rows padded to `padded_rows`, `row_words` words each), or null.
  struct StagedCopy {
    int tensor;
    kernels::StagedRowsParams layout;
    bool one_exponent;  // every block at one exponent (a norm's), not each at its own (a GLU's)
  };
  const StagedCopy* staged_rows(int id) const {
    auto it = staged_rows_.find(id);
    return it == staged_rows_.end() ? nullptr : &it->second;
  }
  void set_staged_rows(int id, StagedCopy copy) { staged_rows_[id] = copy; }
  // Whether a node writes the storage of `tensor` in place (an optimizer update its parameter):
  // the graph is scanned once, on the first question.
  bool written_in_place(int tensor) const;

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
  const NodeUses& uses_;
  std::map<std::tuple<int, int, bool>, int> norm_stats_;
  std::map<int, StagedCopy> staged_rows_;
  mutable std::vector<bool> written_roots_;  // by root tensor; empty until first asked
};

uint32_t ew_op(Op op);  // the EW_* code of an elementwise op

}  // namespace meganeura::lower
