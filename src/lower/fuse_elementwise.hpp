// Fusion of elementwise chains: a DAG of elementwise nodes whose intermediate values nobody else
// needs runs as ONE generated kernel (kernels/pointwise_source.hpp) instead of one dispatch and
// one tensor round trip per node. Runs in lower(), after the e-graph, so it sees the final
// graph of a session (forward and backward for training).
#pragma once
#include <vector>

#include "lower/emit.hpp"

namespace meganeura::lower {

struct FusionGroup {
  int root = -1;             // the node whose value the kernel writes
  std::vector<int> members;  // ascending ids (dependency order); the root is last
  std::vector<int> inputs;   // nodes outside the group that it reads, in first-use order
};

struct Fusion {
  std::vector<FusionGroup> groups;
  std::vector<int> group_of;  // per node: its group, or -1
};

// Groups of at least two members. A member is an elementwise node (unary, binary, compare,
// where, 32-bit cast; autodiff's gelu/silu backward) with 32-bit dtypes and exactly the root's
// shape; a member other than the root is not `pinned` (an output or a kept tensor) and has every
// consumer inside the group. Inputs may broadcast (a bias [N] into [B,M,N]) and may be views
// (reshapes); movement ops and 16-bit casts are never members. A group reads at most
// kernels::kPointwiseMaxInputs tensors.
Fusion find_fusion_groups(const Graph& g, const std::vector<bool>& live, const std::vector<bool>& pinned);

// The generated kernel and its call for a group (at the root's place in the call order).
void emit_fused(Emitter& e, const FusionGroup& group);

// False when MEGANEURA_FUSE_ELEMENTWISE=0.
bool fusion_allowed_by_env();

}  // namespace meganeura::lower
