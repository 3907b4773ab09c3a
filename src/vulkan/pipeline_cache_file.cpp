#include "vulkan/pipeline_cache_file.hpp"

#include <cstdio>
#include <cstring>

#include "kernels/disk_cache.hpp"

namespace meganeura::vk {

bool pipeline_cache_header_matches(std::span<const std::byte> data, const VkPhysicalDeviceProperties& props) {
  // uint32 header length (>= 32), uint32 header version, uint32 vendorID, uint32 deviceID, uint8[16] UUID.
  constexpr size_t kHeader = 16 + VK_UUID_SIZE;
  if (data.size() < kHeader) return false;
  uint32_t words[4];
  std::memcpy(words, data.data(), sizeof words);
  return words[0] >= kHeader && words[0] <= data.size() && words[1] == VK_PIPELINE_CACHE_HEADER_VERSION_ONE &&
         words[2] == props.vendorID && words[3] == props.deviceID &&
         std::memcmp(data.data() + 16, props.pipelineCacheUUID, VK_UUID_SIZE) == 0;
}

PipelineCacheFile::PipelineCacheFile(const VkPhysicalDeviceProperties& props) : props_(props) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "pipelines-%04x-%04x-%08x-", props.vendorID, props.deviceID, props.driverVersion);
  name_ = buf;
  for (uint8_t b : props.pipelineCacheUUID) {
    std::snprintf(buf, sizeof buf, "%02x", b);
    name_ += buf;
  }
  name_ += ".vkcache";
}

std::vector<std::byte> PipelineCacheFile::load() const {
  std::vector<std::byte> data;
  if (kernels::DiskCache(kernels::cache_dir()).read(name_, data) != kernels::CacheRead::Hit ||
      !pipeline_cache_header_matches(data, props_))
    data.clear();
  return data;
}

void PipelineCacheFile::save(std::span<const std::byte> data) const {
  if (pipeline_cache_header_matches(data, props_)) kernels::DiskCache(kernels::cache_dir()).write(name_, data);
}

}  // namespace meganeura::vk
