// The Vulkan devices meganeura can run on, and what each offers.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace meganeura {

struct DeviceInfo {
  int index = 0;       // position in the loader's list (what MEGANEURA_DEVICE takes)
  std::string name;    // "NVIDIA H200", "llvmpipe (LLVM 15.0.6, 256 bits)"
  std::string type;    // "discrete GPU", "integrated GPU", "virtual GPU", "CPU", "other"
  std::string driver;  // driver name and version, "NVIDIA 580.159", "llvmpipe Mesa 22.3.6"
  std::string api;     // "1.3.230"
  uint32_t subgroup_size = 0;
  bool subgroup_arithmetic = false;  // subgroupAdd and its kin in compute shaders
  uint32_t shared_memory = 0;        // bytes per workgroup
  uint32_t multiprocessors = 0;      // SMs (VK_NV_shader_sm_builtins); 0 where the device does not say
  uint64_t device_local_bytes = 0;
  bool fp16 = false;         // shaderFloat16
  bool bf16 = false;         // VK_KHR_shader_bfloat16
  bool coopmat_nv = false;   // VK_NV_cooperative_matrix
  bool coopmat_khr = false;  // VK_KHR_cooperative_matrix
  bool coopmat2_nv = false;  // VK_NV_cooperative_matrix2: workgroup-scope matrices, tensor loads, per-element ops
  std::vector<std::string> coopmat_shapes;  // "16x16x16 f16*f16->f32", ...
  // "0: NVIDIA H200 | Vulkan 1.4.312 | driver NVIDIA 580.159 | subgroup 32 | shared 48 KiB | 132 SMs | fp16 bf16 |
  // coopmat NV KHR (16x16x16 f16->f32, ...)" (the SM count only where the device reports it)
  std::string banner() const;
};

// Every Vulkan device the loader reports, in loader order. Throws DeviceError when Vulkan itself
// cannot be loaded (with what to install).
std::vector<DeviceInfo> list_devices();

// The device sessions run on by default: MEGANEURA_DEVICE (an index, or a case-insensitive
// substring of the name) if set, else the first discrete GPU, then integrated, virtual, CPU.
DeviceInfo default_device_info();

// Validation (MEGANEURA_VALIDATION=1 turns on the Khronos layer with synchronization checks):
// messages the layer printed since the last call. Tests fail on any.
std::vector<std::string> take_validation_messages();

}  // namespace meganeura
