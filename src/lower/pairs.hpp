// Pairs of nodes that one dispatch computes (a layer's q and k rotaries, an attention's d k and
// d v): where both can run, and which of them emits the call.
#pragma once
#include <functional>
#include <vector>

#include "meganeura/graph.hpp"

namespace meganeura::lower {

inline constexpr int kEmittedWithPartner = -2;

// partner[a] = b: a's emission computes both; b is kEmittedWithPartner; -1: alone. `match(a, b)`
// (a < b, both live) says whether they may share a dispatch. They run at a when b's inputs are
// ready there, else at b when nothing reads a's bytes before b (readers through views).
std::vector<int> pair_nodes(const Graph& g, const std::vector<bool>& live, const std::function<bool(int, int)>& match);

}  // namespace meganeura::lower
