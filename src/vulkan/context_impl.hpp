// Context's private state, shared by context.cpp, memory.cpp and pipelines (not by users).
// Members are declared in creation order, so they are destroyed in reverse: pipelines and
// pools before the device, the device before the instance.
#pragma once
#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>

#include "vulkan/context.hpp"
#include "vulkan/instance.hpp"
#include "vulkan/pipelines.hpp"
#include "vulkan/probe.hpp"

namespace meganeura::vk {

// Owns the logical device handle so that it is destroyed after everything made from it.
struct DeviceHandle {
  VkDevice device = VK_NULL_HANDLE;
  DeviceHandle() = default;
  DeviceHandle(const DeviceHandle&) = delete;
  DeviceHandle& operator=(const DeviceHandle&) = delete;
  ~DeviceHandle() { vkDestroyDevice(device, nullptr); }
};

struct Context::Impl {
  std::unique_ptr<Instance> instance;
  DeviceProbe probe;
  DeviceHandle device;
  std::mutex queue_mutex;  // vkQueueSubmit needs the queue externally synchronized
  // How long a wait polls its fence before sleeping in vkWaitForFences (MEGANEURA_SPIN_US).
  std::chrono::microseconds spin{0};
  std::atomic<bool> lost{false};
  // Bytes of each heap held by this context's buffers: what out-of-memory messages report where
  // the driver has no VK_EXT_memory_budget (lavapipe, older drivers).
  std::array<std::atomic<uint64_t>, VK_MAX_MEMORY_HEAPS> held{};  // a submission or wait reported VK_ERROR_DEVICE_LOST

  // run_once's command buffer and fence, reused under once_mutex.
  std::mutex once_mutex;
  VkCommandPool once_pool = VK_NULL_HANDLE;
  VkCommandBuffer once_cb = VK_NULL_HANDLE;
  VkFence once_fence = VK_NULL_HANDLE;
  bool once_outstanding = false;  // a transfer that timed out may still run (Context::submit)

  std::unique_ptr<PipelineCache> pipelines;

  Impl() = default;
  ~Impl();
};

}  // namespace meganeura::vk
