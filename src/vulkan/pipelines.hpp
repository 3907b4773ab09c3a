// Compute pipelines, created on first use and kept for the context's lifetime. All kernels share
// one descriptor layout shape (params, status, tensors...), so set and pipeline layouts are
// cached by the number of tensor bindings and shader modules by kernel.
#pragma once
#include <vulkan/vulkan.h>

#include <array>
#include <map>
#include <mutex>
#include <span>
#include <tuple>
#include <vector>

#include "kernels/kernel_abi.hpp"
#include "vulkan/context.hpp"

namespace meganeura::vk {

class PipelineCache {
 public:
  explicit PipelineCache(VkDevice device);
  ~PipelineCache();
  PipelineCache(const PipelineCache&) = delete;
  PipelineCache& operator=(const PipelineCache&) = delete;

  // Thread-safe; the reference stays valid until the cache is destroyed.
  const Pipeline& get(kernels::Kernel k, std::span<const uint32_t> spec, uint32_t tensor_bindings);

 private:
  struct Layout {
    VkDescriptorSetLayout set = VK_NULL_HANDLE;
    VkPipelineLayout pipeline = VK_NULL_HANDLE;
  };
  // Both called with mutex_ held.
  const Layout& layout(uint32_t tensor_bindings);
  VkShaderModule module(kernels::Kernel k);

  using Key = std::tuple<kernels::Kernel, std::vector<uint32_t>, uint32_t>;
  VkDevice device_;
  VkPipelineCache cache_ = VK_NULL_HANDLE;
  std::mutex mutex_;
  std::map<uint32_t, Layout> layouts_;
  std::array<VkShaderModule, static_cast<size_t>(kernels::Kernel::Count)> modules_{};
  std::map<Key, Pipeline> pipelines_;  // std::map: references survive insertions
};

}  // namespace meganeura::vk
