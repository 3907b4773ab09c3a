// Index arithmetic shared by the lowering of strided kernels: contiguous and broadcast
// strides, and collapsing dimensions so kernels loop over as few as possible.
#pragma once
#include <cstdint>
#include <vector>

#include "meganeura/graph.hpp"

namespace meganeura::lower {

using Strides = std::vector<int64_t>;

Strides contiguous_strides(const Shape& s);
// Strides that read `in` (right-aligned) as if it had shape `out`: 0 along broadcast dims.
Strides broadcast_strides(const Shape& in, const Shape& out);

// Drops size-1 dims and merges neighbours that every operand walks contiguously. `strides`
// holds one stride vector per operand, each the length of `shape`; all are rewritten.
void collapse(Shape& shape, std::vector<Strides>& strides);
// The same, leaving the last dimension alone (a kernel that pairs elements along it: rotary).
void collapse_but_last(Shape& shape, std::vector<Strides>& strides);

// Narrows to the 32-bit fields of the kernel ABI, or throws naming what overflowed.
uint32_t u32(int64_t v, const char* what);

}  // namespace meganeura::lower
