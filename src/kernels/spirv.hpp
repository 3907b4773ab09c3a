// The SPIR-V of each kernel, compiled from src/kernels/*.comp at build time and embedded.
#pragma once
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "kernels/kernel_abi.hpp"

namespace meganeura::kernels {

std::span<const uint32_t> spirv(Kernel k);
std::string_view kernel_name(Kernel k);  // "elementwise", "matmul", ...
// False for an optional variant this build's glslang could not compile (the KHR tensor-core matmuls).
bool kernel_built(Kernel k);
// The module with its params block (descriptor set 0, binding 0, a uniform block) turned into a
// storage block (Block -> BufferBlock: SPIR-V 1.3's storage buffers), for devices without
// uniformBufferStandardLayout. Throws Error naming `what` if the module has no such block.
std::vector<uint32_t> params_as_storage(std::span<const uint32_t> code, std::string_view what);

}  // namespace meganeura::kernels
