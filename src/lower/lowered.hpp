// The output of lowering: the tensors a graph needs storage for and the kernel calls that
// compute them, in execution order. Memory is not yet assigned (that is the planner's job).
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/generated_kernel.hpp"
#include "kernels/kernel_abi.hpp"
#include "lower/matmul_tiers.hpp"
#include "meganeura/graph.hpp"

namespace meganeura::lower {

// State: persistent, zero-initialised, updated in place by kernels (optimizer moments, gradient
// accumulators).
enum class Role : uint8_t { Input, Parameter, Constant, State, Intermediate, Scratch };

struct TensorDesc {
  int node = -1;              // the graph node it holds (-1 for kernel scratch)
  uint64_t bytes = 0;         // storage size (at least 4)
  int alias_of = -1;          // a view shares the storage of this tensor (a reshape, or a member of a
                              // horizontally fused matmul's packed weights or outputs)...
  uint64_t alias_offset = 0;  // ...starting this many bytes into it
  Role role = Role::Intermediate;
  bool output = false;  // kept alive to the end of the step (graph outputs, gradients)
};

struct Access {
  int tensor;
  bool write;
};

struct KernelCall {
  kernels::Kernel kernel;        // a precompiled kernel, unless `generated` names one
  int generated = -1;            // index into Lowered::generated: a kernel generated from the graph
  std::vector<uint32_t> spec;    // specialization constants 1..
  std::vector<uint32_t> params;  // the params block, as 32-bit words
  std::vector<Access> tensors;   // in binding order (binding 2..)
  std::array<uint32_t, 3> groups{1, 1, 1};
  std::string label;
  int node = -1;
  // Computed from parameters that no call writes (a weight staged for the tensor cores): not part
  // of the step or of any program, but of the `derived` list, which the session runs after the
  // parameters change.
  bool derived = false;
};

struct Lowered {
  std::vector<TensorDesc> tensors;  // tensors[i] holds node i; scratch tensors follow the nodes
  std::vector<KernelCall> calls;
  std::vector<kernels::GeneratedKernel> generated;  // distinct sources, compiled at session build
  // Command lists beyond the step, each a subsequence of `calls` that downloads some outputs: a
  // training session's forward pass, an inference session's programs (prefill, decode).
  struct CommandList {
    std::vector<size_t> calls;  // indices into `calls`, ascending
    std::vector<int> outputs;   // graph node ids of the outputs it downloads; empty: all of them
    bool derived = false;       // the derived calls (KernelCall::derived): no uploads or downloads
  };
  std::vector<CommandList> extra_lists;
  // The tensor whose storage `t` uses (follows alias_of to the root).
  int root(int t) const {
    while (tensors[static_cast<size_t>(t)].alias_of >= 0) t = tensors[static_cast<size_t>(t)].alias_of;
    return t;
  }
  // Where `t` starts within its root's storage, in bytes.
  uint64_t offset_in_root(int t) const {
    uint64_t offset = 0;
    for (; tensors[static_cast<size_t>(t)].alias_of >= 0; t = tensors[static_cast<size_t>(t)].alias_of)
      offset += tensors[static_cast<size_t>(t)].alias_offset;
    return offset;
  }
};

// The nodes that `roots` depend on, roots included (nodes are in topological order).
std::vector<bool> reaching(const Graph& g, const std::vector<int>& roots);

// Everything lowering depends on besides the graph: sessions fill it at the edge, from the device
// and the environment (src/runtime/stage_options.cpp); lowering itself reads no environment.
struct LowerOptions {
  // The fusion passes (src/lower/fuse/). Sessions turn them on with the optimizer, so that a
  // graph without it runs exactly as written.
  bool fuse = false;
  bool fuse_elementwise = true;          // with fuse: chains of elementwise ops as one generated kernel
  bool group_matmuls = true;             // with fuse: matmuls sharing an input as one dispatch
  bool log = false;                      // print the dispatch groups after each pass to stderr
  std::vector<std::string> skip_passes;  // fusion passes not to run, by name (measurements, tests)
  // The most bytes of parameters one optimizer update dispatch covers (fuse/update_packs.cpp);
  // 0: every parameter its own dispatch. Not a fusion of the optimizer's: it applies without fuse.
  uint64_t update_pack_bytes = 0;
  // Which matmul kernels the device offers; the default is the exact f32 tiers.
  MatMulTiers matmul;
  // A CPU implementation (lavapipe): a workgroup's barriers are switches between coroutines and
  // shared memory is plain memory, so reductions fold one invocation an output wherever they
  // have the outputs for it, and the exact product takes its CPU tile (emit_reduce.cpp,
  // tile_spec in emit_matmul.cpp; split-K is off there, stage_options.cpp).
  bool cpu_device = false;
};

// Lowers every node that an output or one of `keep` depends on (inputs and parameters always
// get storage). `keep` are tensors the device needs that the host does not read (gradients);
// they stay alive to the end of the step.
Lowered lower(const Graph& g, const std::vector<int>& keep = {}, const LowerOptions& options = {});

}  // namespace meganeura::lower
