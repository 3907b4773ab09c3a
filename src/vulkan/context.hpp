// The process's Vulkan context: instance (with the validation layer when MEGANEURA_VALIDATION
// is set), the chosen physical device and its capabilities, one logical device and compute
// queue, and a cache of compute pipelines keyed by kernel and specialization constants.
#pragma once
#include <vulkan/vulkan.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/generated_kernel.hpp"
#include "kernels/kernel_abi.hpp"
#include "meganeura/device.hpp"

namespace meganeura::vk {

// Throws DeviceError naming `call` and the VkResult (and what to do about it).
void check(VkResult r, std::string_view call);

struct Pipeline {
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  uint32_t tensor_bindings = 0;
};

// A pipeline a program will ask for: a built-in kernel with its spec constants, or a generated one.
struct PipelineWant {
  kernels::Kernel kernel = kernels::Kernel::Elementwise;
  const kernels::GeneratedKernel* generated = nullptr;  // set: this one, and kernel/spec unused
  std::span<const uint32_t> spec;
  uint32_t tensor_bindings = 0;
};

class Context {
 public:
  // The shared context of `device` (SessionOptions::device), created on first use: -1 is the
  // default device (see default_device_info for the choice), n the n-th of list_devices(). Each
  // value has a context of its own (instance, logical device, queue, pipelines), so -1 and the
  // index it picks are two logical devices on one GPU. Throws DeviceError for an unknown index.
  static std::shared_ptr<Context> get(int device = -1);
  ~Context();

  const DeviceInfo& info() const { return info_; }
  const VkPhysicalDeviceLimits& limits() const { return limits_; }
  VkDevice device() const { return device_; }
  VkPhysicalDevice physical() const { return physical_; }
  VkQueue queue() const { return queue_; }
  uint32_t queue_family() const { return queue_family_; }
  // Binding 0 (each kernel's params) as a uniform buffer (read through the constant cache), or,
  // on a device without uniformBufferStandardLayout, a storage buffer (the SPIR-V is rewritten).
  VkDescriptorType params_descriptor() const { return params_descriptor_; }

  // The pipeline for a kernel with specialization constants 1..spec.size() (0 is the workgroup
  // size) and `tensor_bindings` storage buffers after the params and status bindings. Cached.
  const Pipeline& pipeline(kernels::Kernel k, std::span<const uint32_t> spec, uint32_t tensor_bindings);
  // The pipeline of a kernel generated from the graph, compiled (or read from the disk cache)
  // on first use. Throws Error when its source does not compile.
  const Pipeline& pipeline(const kernels::GeneratedKernel& k, uint32_t tensor_bindings);
  // Creates the missing pipelines among `wants` in parallel (see PipelineCache::prepare).
  void prepare_pipelines(std::span<const PipelineWant> wants);
  // Saves the driver's pipeline cache to disk if pipelines were created since the last save.
  void save_pipeline_cache();

  // Memory type index among `type_bits` with all of `want`, preferring types with more of `nice`
  // and fewer of `avoid` (then the driver's order); throws DeviceError when none has `want`.
  // heap_report: "heap 0 has 0.4 GiB free" (VK_EXT_memory_budget where available, else the heap
  // size), for out-of-memory messages.
  uint32_t memory_type(uint32_t type_bits, VkMemoryPropertyFlags want, VkMemoryPropertyFlags nice,
                       VkMemoryPropertyFlags avoid = 0) const;
  std::string heap_report(uint32_t memory_type) const;
  // The largest single allocation the device allows (VkPhysicalDeviceMaintenance3Properties).
  uint64_t max_allocation_size() const;

  // Records `fn` into a one-shot command buffer, submits it and waits (uploads, downloads).
  void run_once(const std::function<void(VkCommandBuffer)>& fn);
  // Waits on a fence with the step timeout (MEGANEURA_TIMEOUT_S, default 60): a hang or a lost
  // device becomes a DeviceError instead of blocking forever.
  void wait(VkFence fence, std::string_view what);
  // Submits `cb` (queue access is serialized across threads), waits for `fence` as wait() does,
  // and resets it. `what` names the work in errors ("a step", "a transfer").
  void submit(VkCommandBuffer cb, VkFence fence, std::string_view what);

  std::vector<std::string> take_validation_messages();

 private:
  explicit Context(int device);
  // The instance, logical device, pools and pipeline cache, destroyed in the right order by
  // Impl's destructor (also when the constructor throws half-way). See context_impl.hpp.
  struct Impl;
  std::unique_ptr<Impl> impl_;
  DeviceInfo info_;
  VkPhysicalDeviceLimits limits_{};
  VkInstance instance_ = VK_NULL_HANDLE;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  VkDescriptorType params_descriptor_ = VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER;
};

}  // namespace meganeura::vk
