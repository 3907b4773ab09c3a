// Horizontal fusion at lowering: matmuls that read the same A with f32 weight parameters as B
// (a transformer's Q/K/V or gate/up projections) run as one dispatch. Their weights stay the
// user's parameters (save, load and read_parameter see their names) but are laid out one after
// another in a packed tensor, and their outputs likewise in one tensor, so that the grouped
// kernel binds one B and one C and indexes each product's part by offset. This is a lowering
// decision, not an e-graph rewrite: one e-class holds one value, and a group has several.
#pragma once
#include <vector>

#include "lower/lowered.hpp"

namespace meganeura::lower {

struct MatMulGroup {
  std::vector<int> members;  // matmul node ids, in graph order (2..kMatMulMaxGroups)
  int weights = -1;          // the packed tensor the members' weights view
  int outputs = -1;          // the packed tensor the members' outputs view
};

// Finds the groups among the live nodes, appends their packed tensors to out.tensors and makes
// the members' weight and output tensors views into them. group_of[node] = index or -1.
std::vector<MatMulGroup> group_matmuls(const Graph& g, const std::vector<bool>& live, Lowered& out,
                                       std::vector<int>& group_of);

// MEGANEURA_HORIZONTAL_FUSION=0 turns the grouping off.
bool horizontal_fusion_enabled();

// Members are placed this many bytes apart at least, so each stays a valid descriptor offset
// (Vulkan's largest minStorageBufferOffsetAlignment).
inline constexpr uint64_t kPackAlignment = 256;
// `bytes` rounded up to kPackAlignment: where the next member of a pack may start.
inline uint64_t pack_offset(uint64_t bytes) { return (bytes + kPackAlignment - 1) / kPackAlignment * kPackAlignment; }

}  // namespace meganeura::lower
