// A CPU reference for every op of the op table, in double, written from the documented
// (PyTorch) semantics and independently of the GPU kernels. Tests compare sessions against it.
#pragma once
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "meganeura/graph.hpp"
#include "meganeura/session.hpp"

namespace mntest {

// A tensor of the reference: values held as double whatever the dtype (f16/bf16 values are the
// exactly decoded 16-bit values; integers are exact).
struct RefTensor {
  meganeura::Shape shape;
  meganeura::DType dtype = meganeura::DType::f32;
  std::vector<double> v;
};

// Raised by the reference for data it cannot evaluate (an index out of range, ...).
struct ReferenceError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// 16-bit float conversions, round to nearest even (own implementations, not the library's).
uint16_t f32_to_f16_bits(float f);
float f16_bits_to_f32(uint16_t h);
uint16_t f32_to_bf16_bits(float f);
float bf16_bits_to_f32(uint16_t h);

// Whether index `raw` of a gather or scatter_add along an axis of `dim` is a window map's padding
// tap (Attrs::window_padding: the index one past the axis), which reads the fill (Attrs::scalar)
// and adds nothing.
inline bool padding_tap(const meganeura::Attrs& a, double raw, int64_t dim) {
  return a.window_padding && raw == static_cast<double>(dim);
}

// Decodes host bytes (any dtype) to a RefTensor.
RefTensor from_host(const meganeura::HostTensor& t);

// Evaluates every node of `g` in order. `feeds` holds the values of every input and parameter
// by name. Returns one RefTensor per node id.
std::vector<RefTensor> evaluate(const meganeura::Graph& g, const std::map<std::string, meganeura::HostTensor>& feeds);

}  // namespace mntest
