// The SPIR-V of each kernel, compiled from src/kernels/*.comp at build time and embedded.
#pragma once
#include <cstdint>
#include <span>
#include <string_view>

#include "kernels/kernel_abi.hpp"

namespace meganeura::kernels {

std::span<const uint32_t> spirv(Kernel k);
std::string_view kernel_name(Kernel k);  // "elementwise", "matmul", ...
// False for an optional variant this build's glslang could not compile (the KHR tensor-core matmuls).
bool kernel_built(Kernel k);

}  // namespace meganeura::kernels
