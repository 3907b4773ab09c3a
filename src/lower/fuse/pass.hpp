// Lowering's fusion passes: each claims nodes that another node's dispatch can compute and
// merges their groups (dispatch_group.hpp). They run in the order passes.cpp lists, each over
// the groups the passes before it left; with MEGANEURA_LOG=lower each prints what it changed.
#pragma once
#include <vector>

#include "lower/dispatch_group.hpp"
#include "lower/lowered.hpp"
#include "lower/match.hpp"
#include "lower/node_facts.hpp"

namespace meganeura::lower {

// What a pass reads, and the tensors it may lay out (packed weights, outputs and operands).
struct PassContext {
  const Graph& g;
  const std::vector<bool>& live;
  const NodeUses& uses;
  Lowered& out;
  const LowerOptions& options;

  const Node& node(int id) const { return g.node(id); }
  bool is_live(int id) const { return live[static_cast<size_t>(id)]; }
  // Its value is needed by nothing but the one reader computing it.
  bool dies_in_one_reader(int id) const { return lower::dies_in_one_reader(uses, out, id); }
  // Its value must be stored: a graph output or a tensor kept for later.
  bool pinned(int id) const {
    return uses.kept[static_cast<size_t>(id)] || out.tensors[static_cast<size_t>(id)].output;
  }
};

using PassFn = void (*)(PassContext&, Grouping&);
struct Pass {
  const char* name;
  const char* claims;  // one line: what it fuses into what
  PassFn run;
  bool always = false;  // runs without LowerOptions::fuse too (a memory or training layout)
};

// The passes, in the order they run.
const std::vector<Pass>& fusion_passes();
// Runs every pass (none but scatter_in_place without options.fuse), logging with options.log.
void run_passes(PassContext& c, Grouping& groups);

// The passes (one file each in src/lower/fuse/).
void matmul_siblings(PassContext& c, Grouping& groups);
void elementwise_chains(PassContext& c, Grouping& groups);
void scatter_in_place(PassContext& c, Grouping& groups);
void rotary_pairs(PassContext& c, Grouping& groups);
void attention_grad_pairs(PassContext& c, Grouping& groups);
void norm_after_matmul(PassContext& c, Grouping& groups);
void add_in_norm_backward(PassContext& c, Grouping& groups);
void map_in_reduction(PassContext& c, Grouping& groups);
void swiglu_in_matmul(PassContext& c, Grouping& groups);
void rotary_in_matmul(PassContext& c, Grouping& groups);
void rms_norm_in_gemv(PassContext& c, Grouping& groups);
void cache_appends_in_rotary(PassContext& c, Grouping& groups);
void product_sums(PassContext& c, Grouping& groups);
void update_packs(PassContext& c, Grouping& groups);

// rotary(?x, ?cos, ?sin): what rotary_pairs pairs and rotary_in_matmul takes into a matmul group.
const Pattern& rotary_pattern();

// Pairs nodes of `op` that one dispatch computes: for a < b, both alone and `match(a, b)`, b joins
// a's group when its inputs are ready at a, else a joins b's when nothing reads a's bytes before b.
void pair_nodes(PassContext& c, Grouping& groups, Op op, bool (*match)(const Graph&, int a, int b));

}  // namespace meganeura::lower
