// The driver's compiled pipelines (VkPipelineCache data) kept on disk between processes, in the
// kernel cache directory (kernels::cache_dir). The file is named after the device and driver,
// and its data is used only when its header (Vulkan spec, "Pipeline Cache Header", version one)
// names this very device: vendorID, deviceID and pipelineCacheUUID. Anything else is ignored
// and overwritten by the next save.
#pragma once
#include <vulkan/vulkan.h>

#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace meganeura::vk {

// Whether `data` starts with a version-one pipeline cache header for the device of `props`.
bool pipeline_cache_header_matches(std::span<const std::byte> data, const VkPhysicalDeviceProperties& props);

class PipelineCacheFile {
 public:
  explicit PipelineCacheFile(const VkPhysicalDeviceProperties& props);
  // The saved data when it is there, intact and for this device; empty otherwise.
  std::vector<std::byte> load() const;
  void save(std::span<const std::byte> data) const;
  const std::string& name() const { return name_; }  // "pipelines-10de-2330-<driver>-<uuid>.vkcache"

 private:
  VkPhysicalDeviceProperties props_;
  std::string name_;
};

}  // namespace meganeura::vk
