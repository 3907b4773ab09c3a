// Kernels generated from the graph when a session is built (fused pointwise chains). Their SPIR-V
// comes from the on-disk cache (kernels/disk_cache.hpp) when it is there, else from shaderc,
// and then goes to the cache. The cache key is the source, the embedded include files and the
// compiler's release and options; SPIR-V does not depend on the driver (the driver's own
// compiled pipelines are cached by vulkan/pipeline_cache_file.hpp, keyed by the device).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace meganeura::kernels {

struct GeneratedKernel {
  std::string name;    // "fused[exp,mul,add]": labels, logs, compile errors
  std::string source;  // GLSL compute shader with the descriptor layout of kernel_abi.hpp
};

// Since the process started: kernels compiled with shaderc, and kernels read from the disk cache.
struct GeneratedKernelStats {
  uint64_t compiled = 0, from_disk = 0;
};
GeneratedKernelStats generated_kernel_stats();

// The SPIR-V of `k` (see above). Throws Error when the source does not compile.
std::vector<uint32_t> generated_spirv(const GeneratedKernel& k);

// The name of k's file in the cache directory.
std::string generated_cache_file(const GeneratedKernel& k);

}  // namespace meganeura::kernels
