// Compute pipelines, created on first use and kept for the context's lifetime. All kernels share
// one descriptor layout shape (params, status, tensors...), so set and pipeline layouts are
// cached by the number of tensor bindings; shader modules by kernel (precompiled) or by source
// (generated from the graph); pipelines by module, spec constants and bindings. The driver's
// pipeline cache is loaded from and saved to disk (vulkan/pipeline_cache_file.hpp).
#pragma once
#include <vulkan/vulkan.h>

#include <array>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "kernels/generated_kernel.hpp"
#include "kernels/kernel_abi.hpp"
#include "vulkan/context.hpp"
#include "vulkan/pipeline_cache_file.hpp"

namespace meganeura::vk {

class PipelineCache {
 public:
  // params: binding 0's descriptor type (Context::params_descriptor); with a storage buffer,
  // each module's params block is rewritten into one (kernels::params_as_storage).
  // statistics: print the driver's statistics of each pipeline created (MEGANEURA_LOG=pipelines;
  // the device has VK_KHR_pipeline_executable_properties enabled).
  // `ctx` (the owner) reports out-of-memory failures (Context::check_allocation).
  PipelineCache(const Context& ctx, const VkPhysicalDeviceProperties& props, VkDescriptorType params, bool statistics);
  ~PipelineCache();
  PipelineCache(const PipelineCache&) = delete;
  PipelineCache& operator=(const PipelineCache&) = delete;

  // Thread-safe; the reference stays valid until the cache is destroyed.
  const Pipeline& get(kernels::Kernel k, std::span<const uint32_t> spec, uint32_t tensor_bindings);
  // A kernel generated from the graph (no spec constants but the workgroup size); its SPIR-V
  // comes from kernels::generated_spirv (the disk cache, else shaderc) the first time.
  const Pipeline& get(const kernels::GeneratedKernel& k, uint32_t tensor_bindings);
  // Creates the pipelines of these dispatches that do not exist yet, several threads at once: a
  // driver compiles a pipeline on the calling thread (tens of ms each on NVIDIA), and a cold
  // session needs tens of them. Later get()s of these find them made.
  void prepare(std::span<const PipelineWant> wants);
  // Writes the driver's pipeline cache to disk if pipelines were created since the last save.
  void save();

 private:
  struct Layout {
    VkDescriptorSetLayout set = VK_NULL_HANDLE;
    VkPipelineLayout pipeline = VK_NULL_HANDLE;
  };
  // All called with mutex_ held. `name`: the kernel whose layout it is, for errors.
  const Layout& layout(uint32_t tensor_bindings, std::string_view name);
  VkShaderModule create_module(std::span<const uint32_t> code, std::string_view name);
  VkShaderModule module(kernels::Kernel k);
  VkShaderModule module(const kernels::GeneratedKernel& k);  // SPIR-V from generated_spirv the first time
  const Pipeline& pipeline(VkShaderModule module, std::string_view name, std::span<const uint32_t> spec,
                           uint32_t tensor_bindings);
  // vkCreateComputePipelines for one pipeline (no lock needed: the VkPipelineCache is internally
  // synchronized); the caller owns the result.
  VkPipeline create(VkShaderModule module, std::string_view name, std::span<const uint32_t> spec,
                    VkPipelineLayout layout);
  // Prints one line of the driver's statistics of `p` (statistics_: MEGANEURA_LOG=pipelines).
  void print_statistics(VkPipeline p, std::string_view name, std::span<const uint32_t> spec) const;

  using Key = std::tuple<VkShaderModule, std::vector<uint32_t>, uint32_t>;
  const Context& ctx_;
  VkDevice device_;
  VkDescriptorType params_;
  bool statistics_;
  PipelineCacheFile file_;
  VkPipelineCache cache_ = VK_NULL_HANDLE;
  bool unsaved_ = false;  // pipelines created since the cache was loaded or saved
  std::mutex mutex_;
  std::map<uint32_t, Layout> layouts_;
  std::array<VkShaderModule, static_cast<size_t>(kernels::Kernel::Count)> modules_{};
  std::map<std::string, VkShaderModule> generated_modules_;  // by source
  std::map<Key, Pipeline> pipelines_;                        // std::map: references survive insertions
};

}  // namespace meganeura::vk
