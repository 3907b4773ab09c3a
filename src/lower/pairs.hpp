// Pairs of nodes that one dispatch computes (a layer's q and k rotaries, an attention's d k and
// d v, a projection and the norm after it, ...): where both can run, and which of them emits the
// call. Decided once, before lowering emits anything.
#pragma once
#include <functional>
#include <vector>

#include "lower/horizontal.hpp"
#include "lower/lowered.hpp"
#include "meganeura/graph.hpp"

namespace meganeura::lower {

inline constexpr int kEmittedWithPartner = -2;

// partner[a] = b: a's emission computes both; b is kEmittedWithPartner; -1: alone. `match(a, b)`
// (a < b, both live) says whether they may share a dispatch. They run at a when b's inputs are
// ready there, else at b when nothing reads a's bytes before b (readers through views).
std::vector<int> pair_nodes(const Graph& g, const std::vector<bool>& live, const std::function<bool(int, int)>& match);

// Who reads each node: readers[n] holds a live node once per input slot it reads n through;
// kept[n]: kept for a later pass (training's backward), so its value must be stored.
struct NodeUses {
  std::vector<std::vector<int>> readers;
  std::vector<bool> kept;
};
NodeUses node_uses(const Graph& g, const std::vector<bool>& live, const std::vector<int>& keep);
// Node id's value is needed by nothing but its one reader: not kept, not a graph output.
bool dies_in_one_reader(const NodeUses& uses, const Lowered& out, int id);

// A q/k rotary pair that a q/k/v group's split-K summing pass computes (node[i] rotates product
// product[i] of the group); node[0] < 0: none.
struct GroupRotary {
  int node[2] = {-1, -1};
  uint32_t product[2] = {0, 0};
};

// A sum of matmul products that one split-K dispatch computes over their K ranges together
// (product_sums.cpp): a backward's d x = dq·Wq + dk·Wk + dv·Wv, or d gate·Wg + d up·Wu.
struct ProductSum {
  std::vector<int> products;  // matmul / matmul_add nodes whose A·B are added (2..kMatMulMaxGroups)
  int residual = -1;          // the one addend that is not a product, or -1
};

// Everything lowering computes inside another node's dispatch. partner: as pair_nodes (rotaries,
// d k with d v, a single product and its norm), and kEmittedWithPartner for every node another
// emission computes. By node: norm_of_add (the norm backward an add emits, adding its other
// operand), map_of_reduce (the product a sum/mean maps, or the abs a sum/mean/max maps),
// norm_a_of (the rms_norm a GEMV product takes as A; a group: at its first member). By matmul group: glu_of_group (its swiglu),
// rotary_of_group (the rotary pair its summing pass computes). sum_of: the sum (index into
// sums) a node emits, the node whose value the sum is; in_sum: nodes computed by a sum.
struct Fusions {
  std::vector<int> partner, norm_of_add, map_of_reduce, norm_a_of;
  std::vector<int> glu_of_group;
  std::vector<GroupRotary> rotary_of_group;
  std::vector<ProductSum> sums;
  std::vector<int> sum_of;
  std::vector<bool> in_sum;
};

// Finds the sums of products (after every other claim of find_fusions), in `f`; gives their
// operands' storage its layout in `out` (each product's A in one packed tensor).
void find_product_sums(const Graph& g, const std::vector<bool>& live, const NodeUses& uses, Lowered& out,
                       const std::vector<int>& group_of, const std::vector<int>& fused_group_of,
                       const LowerOptions& options, Fusions& f);
// group_of: each node's matmul group (horizontal.hpp); fused_group_of: its elementwise group
// (fuse_elementwise.hpp), or -1. With options.fuse off, nothing pairs (every vector all -1).
Fusions find_fusions(const Graph& g, const std::vector<bool>& live, const NodeUses& uses, const Lowered& out,
                     const std::vector<MatMulGroup>& groups, const std::vector<int>& group_of,
                     const std::vector<int>& fused_group_of, const LowerOptions& options);

}  // namespace meganeura::lower
