// What lowering's passes ask about nodes: which are live, which are views, who reads them.
#pragma once
#include <vector>

#include "lower/lowered.hpp"
#include "meganeura/graph.hpp"

namespace meganeura::lower {

// A reshape, or a permute that moves only dimensions of size 1 (a [1, 1, H, D] query turned
// [1, H, 1, D] when decoding): every element stays where it was, so lowering gives it no kernel
// and its tensor views its input's bytes.
bool is_view(const Graph& g, const Node& n);

// A node whose value is its first input's bytes, changed in place: cache_write (a KV cache),
// assign (a running statistic) and the training ops (a gradient sum, the hyper block, a parameter).
bool writes_in_place(Op op);

// Who reads each node: readers[n] holds a live node once per input slot it reads n through;
// kept[n]: kept for a later pass (training's backward), so its value must be stored.
struct NodeUses {
  std::vector<std::vector<int>> readers;
  std::vector<bool> kept;
};
NodeUses node_uses(const Graph& g, const std::vector<bool>& live, const std::vector<int>& keep);
// Node id's value is needed by nothing but its one reader: not kept, not a graph output.
bool dies_in_one_reader(const NodeUses& uses, const Lowered& out, int id);

}  // namespace meganeura::lower
