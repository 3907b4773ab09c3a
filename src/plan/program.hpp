// A compiled step as plain data: the buffers a session needs and the fixed list of commands
// (copies, barriers, dispatches) that the runtime records once and replays on every step.
// Produced by the planner, consumed by src/vulkan; no Vulkan types here.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "kernels/generated_kernel.hpp"
#include "kernels/kernel_abi.hpp"

namespace meganeura::plan {

enum class Memory : uint8_t {
  DeviceLocal,  // arenas, parameters, params blocks
  Upload,       // host-visible, written by the CPU and copied to device-local memory
  Readback,     // host-visible (cached where possible), read by the CPU after a step
  HostShared,   // host-visible and coherent, read and written by both (the status block)
};

struct BufferDesc {
  std::string name;   // "activation arena", "parameters", ... (quoted in out-of-memory errors)
  uint64_t size = 0;  // bytes
  Memory memory = Memory::DeviceLocal;
};

struct Slice {
  uint32_t buffer = 0;  // index into Program::buffers
  uint64_t offset = 0, size = 0;
};

struct Dispatch {
  kernels::Kernel kernel = kernels::Kernel::Elementwise;  // unless `generated` names a kernel
  int generated = -1;                                     // index into Program::generated
  std::vector<uint32_t> spec;  // specialization constants 1.. (0, the workgroup size, is added)
  Slice params;                // binding 0
  std::vector<Slice> tensors;  // bindings 2.. (binding 1 is the program's status buffer)
  std::array<uint32_t, 3> groups{1, 1, 1};
  std::string label;  // "matmul %12 [64,64]x[64,32]" for traces and listings
};

struct Copy {
  Slice src, dst;
};

// A global memory barrier between the stages named; the planner emits one only where a later
// command touches bytes an earlier one wrote (or writes bytes it read).
struct Barrier {
  enum Kind : uint8_t {
    TransferToCompute,
    ComputeToCompute,
    ComputeToTransfer,
    TransferToHost
  } kind = ComputeToCompute;
};

using Command = std::variant<Dispatch, Copy, Barrier>;

struct Program {
  std::vector<BufferDesc> buffers;
  uint32_t status_buffer = 0;     // a HostShared buffer of sizeof(kernels::Status) bytes
  std::vector<Command> commands;  // the step
  // Further command lists over the same buffers, each recorded once too (a training session's
  // forward-only evaluation pass). Executable::run(1 + i) runs extra[i].
  std::vector<std::vector<Command>> extra;
  // Command list `i` as Executable::run(i) numbers them: 0 the step, 1 + k extra[k].
  const std::vector<Command>& list(size_t i) const { return i == 0 ? commands : extra.at(i - 1); }
  // Kernels generated from the graph (fused elementwise chains), compiled when the program is
  // made real (vk::Executable) and cached on disk.
  std::vector<kernels::GeneratedKernel> generated;
};

}  // namespace meganeura::plan
