// Tensor data on the host: what sessions, checkpoints and datasets hand each other.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "meganeura/dtype.hpp"
#include "meganeura/graph.hpp"

namespace meganeura {

// Host-side tensor data: shape, dtype and the raw bytes (row-major, contiguous).
struct HostTensor {
  Shape shape;
  DType dtype = f32;
  std::vector<std::byte> bytes;

  static HostTensor f32s(Shape shape, std::span<const float> values);
  static HostTensor i32s(Shape shape, std::span<const int32_t> values);
  static HostTensor u32s(Shape shape, std::span<const uint32_t> values);
  int64_t numel() const { return meganeura::numel(shape); }
  // Typed view; throws DTypeError if T does not match dtype (uint16_t for f16/bf16).
  template <class T>
  std::span<const T> data() const;
  // Values converted to float (any dtype).
  std::vector<float> to_f32() const;
};

}  // namespace meganeura
