// GLSL -> SPIR-V at run time (shaderc), for the kernels generated when a session is built.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace meganeura::kernels {

// Compiles a compute shader with the options the build-time kernels get (cmake/EmbedKernels.cmake:
// glslangValidator -V --target-env vulkan1.1, no optimisation); `#include "x.glsl"` resolves to
// the embedded include files. A failure throws Error with shaderc's message and the head of the
// source: generated kernels that do not compile are a bug in their generator.
std::vector<uint32_t> compile_compute_shader(std::string_view source, std::string_view name);

// What the SPIR-V depends on besides the source: shaderc's release and the options above.
std::string_view compiler_fingerprint();

}  // namespace meganeura::kernels
