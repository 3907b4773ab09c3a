// A fused pointwise kernel as data (a DAG of elementwise ops over one index space), and the GLSL
// it becomes. The source depends only on the ops, their dtypes and how many inputs there are —
// never on sizes, which travel in the params block — so one compiled kernel serves every
// session with the same chain (and the on-disk cache hits across processes).
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/kernel_abi.hpp"

namespace meganeura::kernels {

// One value of the kernel, a 32-bit word of `dtype`: a tensor read, or an op on earlier values.
struct PointwiseValue {
  enum Kind : uint8_t { Load, Unary, Binary, Compare, Where, Convert };
  Kind kind = Load;
  uint32_t op = 0;                      // EW_* (Unary, Binary, Compare)
  uint32_t dtype = DT_F32;              // DT_* of the result
  uint32_t operand_dtype = DT_F32;      // Compare: both operands'; Where: the condition's; Convert: the source's
  std::array<int, 3> args{-1, -1, -1};  // earlier values (Where: cond, a, b)
  int input = -1;                       // Load: which input (binding 2 + input)
  float scalar = 0;                     // EW_POW's exponent
  std::string what;                     // the op's name, a comment in the source
};

struct PointwiseExpr {
  uint32_t inputs = 0;                 // each read by exactly one Load
  std::vector<PointwiseValue> values;  // in dependency order; the last is the output
};

// GLSL of the compute shader (the ABI of kernel_abi.hpp, "Pointwise"); it #includes common.glsl
// and elementwise_ops.glsl, so every op is computed by the same code as the Elementwise kernel.
std::string pointwise_source(const PointwiseExpr& e);

}  // namespace meganeura::kernels
