// The planner turns lowered kernel calls into a Program: it places every tensor in a buffer
// (intermediates share an arena by liveness), writes the params blocks, and puts a barrier
// only before a command that touches bytes a command since the last barrier wrote (or writes
// bytes one of them read).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "lower/lowered.hpp"
#include "plan/program.hpp"

namespace meganeura::plan {

// Buffer indices of every Program the planner makes.
enum : uint32_t {
  kParamsBuffer = 0,
  kStatusBuffer,
  kPersistentBuffer,
  kInputBuffer,
  kArenaBuffer,
  kUploadBuffer,
  kReadbackBuffer,
  kBufferCount
};

struct PlanOptions {
  bool reuse_memory = true;
  uint64_t alignment = 256;  // >= every device's minStorageBufferOffsetAlignment
  // The largest buffer the device takes (maxMemoryAllocationSize, maxStorageBufferRange):
  // parameters and intermediates beyond it go into further buffers ("parameters 2", ...,
  // "activation arena 2", ...), appended after kBufferCount; a single tensor above it is an
  // error naming the tensor.
  uint64_t max_buffer_bytes = UINT64_MAX;
  // Record calls level by level (schedule.hpp); false keeps lowering's order.
  bool schedule_by_level = true;
};

struct Planned {
  Program program;
  std::vector<Slice> tensor;                // where each lowered tensor lives (size 0: never needed)
  std::vector<Slice> upload;                // per tensor: its staging slice, for inputs
  std::vector<Slice> readback;              // per graph output (in Graph::outputs order)
  std::vector<uint32_t> params_words;       // contents of the params buffer
  std::vector<uint32_t> parameter_buffers;  // kPersistentBuffer, then the further ones
  std::vector<uint32_t> arena_buffers;      // kArenaBuffer, then the further ones
  uint64_t arena_unshared = 0;              // what the arenas would take without reuse
  uint32_t dispatches = 0, barriers = 0;
};

Planned plan_program(const lower::Lowered& lowered, const Graph& g, const PlanOptions& opts);

}  // namespace meganeura::plan
