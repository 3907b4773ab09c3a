// The SPIR-V of each kernel, compiled from src/kernels/*.comp at build time and embedded.
#pragma once
#include <cstdint>
#include <span>
#include <string_view>

#include "kernels/kernel_abi.hpp"

namespace meganeura::kernels {

std::span<const uint32_t> spirv(Kernel k);
std::string_view kernel_name(Kernel k);  // "elementwise", "matmul", ...

}  // namespace meganeura::kernels
