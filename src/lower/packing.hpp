// Packed tensors: several tensors laid out one after another in one storage (a matmul group's
// weights and outputs, a sum of products' operands, an optimizer update pack's parameters).
#pragma once
#include <cstdint>

namespace meganeura::lower {

// Members are placed this many bytes apart at least, so each stays a valid descriptor offset
// (Vulkan's largest minStorageBufferOffsetAlignment).
inline constexpr uint64_t kPackAlignment = 256;
// `bytes` rounded up to kPackAlignment: where the next member of a pack may start.
inline uint64_t pack_offset(uint64_t bytes) { return (bytes + kPackAlignment - 1) / kPackAlignment * kPackAlignment; }

}  // namespace meganeura::lower
