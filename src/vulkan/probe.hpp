// What a physical device offers, read without creating a logical device: the public DeviceInfo
// plus the limits, memory types and feature bits the Context needs to create its device.
#pragma once
#include <vulkan/vulkan.h>

#include <span>
#include <string>
#include <vector>

#include "meganeura/device.hpp"
#include "vulkan/instance.hpp"

namespace meganeura::vk {

struct DeviceProbe {
  DeviceInfo info;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkPhysicalDeviceType type = VK_PHYSICAL_DEVICE_TYPE_OTHER;
  uint32_t api_version = 0;
  VkPhysicalDeviceLimits limits{};
  VkPhysicalDeviceMemoryProperties memory{};
  uint64_t max_allocation_size = 0;  // VkPhysicalDeviceMaintenance3Properties
  std::vector<std::string> extensions;
  // Features enabled on the logical device when present.
  bool shader_int16 = false, storage16 = false, bf16_coopmat = false;
  bool ubo_std430 = false;     // uniformBufferStandardLayout: params blocks are uniform buffers
  bool memory_budget = false;  // VK_EXT_memory_budget: free bytes for out-of-memory messages
  // vulkanMemoryModel (and its device scope): the tensor-core kernels declare the memory model.
  bool memory_model = false, memory_model_device_scope = false;
  // maintenance4 (Vulkan 1.3): kernels compiled for Vulkan 1.3 size their workgroup with
  // LocalSizeId (matmul_coop2.glsl).
  bool maintenance4 = false;
  // bufferDeviceAddress (Vulkan 1.2): the persistent decoding kernel reaches every tensor of a
  // model through a table of addresses (runtime/persistent_decode.hpp).
  bool device_address = false;

  bool has_extension(const char* name) const;
};

std::vector<DeviceProbe> probe_devices(const Instance& instance);

// The device to use: MEGANEURA_DEVICE (an index or a case-insensitive name substring) when set,
// else the first discrete GPU, then integrated, virtual, CPU. Throws DeviceError listing the
// devices when MEGANEURA_DEVICE matches none.
size_t choose_device(std::span<const DeviceProbe> devices);
// `index` of list_devices() (SessionOptions::device); throws DeviceError listing them when out of range.
size_t device_at(std::span<const DeviceProbe> devices, int index);

}  // namespace meganeura::vk
