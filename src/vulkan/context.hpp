// The process's Vulkan context: instance (with the validation layer when MEGANEURA_VALIDATION
// is set), the chosen physical device and its capabilities, one logical device and compute
// queue, and a cache of compute pipelines keyed by kernel and specialization constants.
#pragma once
#include <vulkan/vulkan.h>

#include <atomic>
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
  // The counter of bytes held in `memory_type`'s heap, which each Buffer adds to while it lives.
  std::atomic<uint64_t>& held_bytes(uint32_t memory_type) const;
  // For the result of creating `what` ("the activation arena (1.2 MiB)", "the pipeline of
  // matmul"): out of device or host memory throws OutOfMemoryError naming the device, the free
  // space of `memory_type`'s heap (UINT32_MAX: the device-local heap's) and what to do; other
  // failures throw as check() does.
  void check_allocation(VkResult r, std::string_view what, uint32_t memory_type = UINT32_MAX) const;
  // The largest single allocation the device allows (VkPhysicalDeviceMaintenance3Properties).
  uint64_t max_allocation_size() const;
  // bufferDeviceAddress is enabled: device-local buffers have addresses (Buffer::device_address).
  bool device_addresses() const;

  // Records `fn` into a one-shot command buffer, submits it and waits (uploads, downloads).
  void run_once(const std::function<void(VkCommandBuffer)>& fn);
  // Waits on a fence with the step timeout (MEGANEURA_TIMEOUT_S, default 60, read at each wait):
  // a hang or a lost device becomes a DeviceError instead of blocking forever.
  void wait(VkFence fence, std::string_view what);
  // Submits `cb` (queue access is serialized across threads), waits for `fence` as wait() does,
  // and resets it. `what` names the work in errors ("a step", "a transfer"). `outstanding` is the
  // fence's owner's flag: set while a submission may still run — after a timeout, the next submit
  // first waits for that one again (a late finish is not an error). Once the device was lost,
  // every submit throws DeviceError.
  void submit(VkCommandBuffer cb, VkFence fence, bool& outstanding, std::string_view what);
  // Before destroying what a submission may still use: waits for it (the timeout) if
  // `outstanding`. False when it still runs — then its objects must be leaked, not destroyed.
  bool settle(VkFence fence, bool& outstanding);  // and resets the fence when it was outstanding
  // settle() for run_once's last transfer: false while it still runs, so the buffers it copies
  // between must be leaked, not destroyed.
  bool transfer_settled();
  // True once a submission or wait reported the device lost: Context::get() then makes a new
  // context for new sessions, and this one only serves destruction.
  bool lost() const;

  std::vector<std::string> take_validation_messages();

 private:
  explicit Context(int device);
  // If `outstanding`, waits for that earlier submission (the timeout) and resets its fence.
  void catch_up(VkFence fence, bool& outstanding, std::string_view what);
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
