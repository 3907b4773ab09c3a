// The output of lowering: the tensors a graph needs storage for and the kernel calls that
// compute them, in execution order. Memory is not yet assigned (that is the planner's job).
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/kernel_abi.hpp"
#include "meganeura/graph.hpp"

namespace meganeura::lower {

enum class Role : uint8_t { Input, Parameter, Constant, Intermediate, Scratch };

struct TensorDesc {
  int node = -1;          // the graph node it holds (-1 for kernel scratch)
  uint64_t bytes = 0;     // storage size (at least 4)
  int alias_of = -1;      // a view (reshape) shares the storage of this tensor
  Role role = Role::Intermediate;
  bool output = false;    // read by the host after a step
};

struct Access {
  int tensor;
  bool write;
};

struct KernelCall {
  kernels::Kernel kernel;
  std::vector<uint32_t> spec;    // specialization constants 1..
  std::vector<uint32_t> params;  // the params block, as 32-bit words
  std::vector<Access> tensors;   // in binding order (binding 2..)
  std::array<uint32_t, 3> groups{1, 1, 1};
  std::string label;
  int node = -1;
};

struct Lowered {
  std::vector<TensorDesc> tensors;  // tensors[i] holds node i; scratch tensors follow the nodes
  std::vector<KernelCall> calls;
  // The tensor whose storage `t` uses (follows alias_of to the root).
  int root(int t) const {
    while (tensors[static_cast<size_t>(t)].alias_of >= 0) t = tensors[static_cast<size_t>(t)].alias_of;
    return t;
  }
};

// Lowers every node that an output depends on (inputs and parameters always get storage).
Lowered lower(const Graph& g);

}  // namespace meganeura::lower
