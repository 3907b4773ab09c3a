// Dispatch groups: what lowering decides before it emits anything. Every live node that computes
// something belongs to one group; each group becomes the kernel calls of one emitter (its
// archetype), at its anchor's place in graph order. Lowering starts with one group per node
// (the op table's archetype) and its fusion passes (src/lower/fuse/) merge them: siblings into
// one matmul, chains into one generated kernel, a norm into the matmul before it, ...
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "meganeura/graph.hpp"

namespace meganeura::lower {

// Which emitter runs a group (src/lower/emit/emit_table.cpp). The op table names each op's own;
// Pointwise and ProductSum only come from fusion passes.
enum class Archetype : uint8_t {
  NoKernel,      // a leaf
  Elementwise,   // unary, binary, compare, where, cast
  Movement,      // permute, slice, concat, broadcast_to (reshapes are views: no group)
  MatMul,        // products sharing A, with what their store or summing pass computes
  Attention,     // attention and its backward (d k with d v)
  Reduce,        // sums, maxima, means, the losses that are a map and a sum
  Row,           // softmax, log_softmax, rms_norm, layer_norm
  Rotary,        // rotary (or its transpose), in pairs sharing cos and sin
  Index,         // gather, scatter_add, one_hot, cache_write, cross_entropy
  Backward,      // autodiff's fused backward ops
  NormBackward,  // rms_norm / layer_norm backward, with the add reading it
  Pointwise,     // a chain of elementwise nodes as one generated kernel
  ProductSum,    // a sum of matmul products as one split-K dispatch
  Training,      // the step's scalars, accumulation, clipping, optimizer updates (in packs)
};
const char* archetype_name(Archetype a);
// The archetype that runs `op` alone (the op table's last column).
Archetype archetype_of(Op op);

// How a node joins a group another node anchors.
enum class FusedAs : uint8_t {
  Partner,  // the pair's second node (a q/k rotary, an attention's d v with its d k)
  Norm,     // the norm of a single product's rows, in its summing pass (or right after it)
  NormA,    // rms_norm(x, w) that is the products' A, in the GEMV's loads
  Glu,      // swiglu(gate, up) of a two-product group, in the tensor-core or GEMV store
  Rotary,   // a q/k rotary of two products, in the split-K summing pass
  Add,      // the add that a norm backward's store performs (the anchor)
  Map,      // the product or |x| a reduction maps as it loads
  Summed,   // an add or product a sum of products takes in
  Append,   // a KV cache append of a rotary's rows or of rows ready before it, in the rotary's dispatch
};
const char* fused_as_name(FusedAs f);

struct Fused {
  FusedAs as;
  int node;
  uint32_t slot = 0;  // Rotary: which product of the group it rotates; Append: the rows' source
};

struct DispatchGroup {
  Archetype archetype = Archetype::NoKernel;
  int anchor = -1;                   // emitted at this node's place in graph order
  std::vector<int> nodes;            // what it computes by its archetype: a matmul's products, a chain
                                     // (ascending, the stored root last), a sum's products, else one node
  std::vector<Fused> extras;         // nodes computed inside it (FusedAs), in the order they joined
  std::vector<int> reads;            // Pointwise: the nodes it loads; ProductSum: the addend, if any
  int packed_b = -1, packed_c = -1;  // MatMul of several products: the packed weights and outputs
  std::vector<int> packs;            // Training over a pack: its packed tensors (emit_training.cpp)
  bool dead = false;                 // merged into another group

  int extra(FusedAs as) const;  // the first extra joined as `as`, or -1
};

// The groups of one graph and which group computes each node.
class Grouping {
 public:
  // One group per live node that computes something (not a leaf, not a view).
  Grouping(const Graph& g, const std::vector<bool>& live, const std::vector<bool>& view);

  const std::vector<DispatchGroup>& groups() const { return groups_; }
  DispatchGroup& group(int index) { return groups_[static_cast<size_t>(index)]; }
  const DispatchGroup& group(int index) const { return groups_[static_cast<size_t>(index)]; }
  // The group computing `node`, or -1 (leaves, views, dead nodes).
  int owner(int node) const { return owner_[static_cast<size_t>(node)]; }
  // The node is in a group of its own with nothing fused in: free for any pass to take.
  bool alone(int node) const;

  // A new group of `archetype` anchored at `anchor` computing `nodes`, each taken from its
  // group (which dies when its anchor is taken). Returns its index.
  int merge(Archetype archetype, int anchor, std::vector<int> nodes);
  // Moves `node` into group `into` as an extra.
  void absorb(int into, int node, FusedAs as, uint32_t slot = 0);
  // Adds `node` to group `into` as an extra that another group also computes (an rms_norm that
  // several GEMVs each apply as they load): its owner stays the first.
  void share(int into, int node, FusedAs as);

  // The groups a pass changed since the last call (for MEGANEURA_LOG=lower), ascending.
  std::vector<int> take_changed();
  // "#12 matmul @%40: %40, %41, %42 + glu %45" with each node's op and name.
  std::string describe(const Graph& g, int index) const;
  // Live groups ordered by anchor: the order lowering emits them in.
  std::vector<int> emission_order() const;

 private:
  void take(int node);  // removes `node` from its group (killing it when it is its anchor)
  std::vector<DispatchGroup> groups_;
  std::vector<int> owner_;
  std::vector<bool> changed_;
};

}  // namespace meganeura::lower
