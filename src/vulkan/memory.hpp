// One VkBuffer with its own VkDeviceMemory, mapped for as long as it lives when host-visible.
// Programs have few, large buffers (arenas, parameters, staging), so one allocation each is fine.
#pragma once
#include <vulkan/vulkan.h>

#include <atomic>
#include <cstdint>
#include <string_view>

#include "plan/program.hpp"
#include "vulkan/context.hpp"

namespace meganeura::vk {

class Buffer {
 public:
  // `name` is quoted in errors ("out of device memory allocating the activation arena ...").
  // Throws OutOfMemoryError when the heap is full, DeviceError when `size` exceeds a limit.
  Buffer(const Context& ctx, std::string_view name, uint64_t size, plan::Memory memory);
  ~Buffer();
  Buffer(Buffer&& o) noexcept;
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  VkBuffer handle() const { return buffer_; }
  uint64_t size() const { return size_; }   // as allocated: at least 4 bytes, a multiple of 4
  void* mapped() const { return mapped_; }  // null for DeviceLocal buffers
  // The buffer's address for shaders (GL_EXT_buffer_reference): device-local buffers have one
  // where Context::device_addresses(); 0 otherwise.
  uint64_t device_address() const { return address_; }
  // Make device writes visible to the host / host writes visible to the device where the memory
  // type is not coherent; no-ops otherwise.
  void invalidate() const;
  void flush() const;
  // Forgets the buffer without destroying it: for a buffer that work which never finished (a
  // hung GPU) may still use, where destroying it would be undefined behaviour.
  void abandon() noexcept;

 private:
  void release() noexcept;
  VkDevice device_ = VK_NULL_HANDLE;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  void* mapped_ = nullptr;
  uint64_t size_ = 0;
  uint64_t address_ = 0;
  bool coherent_ = true;
  std::atomic<uint64_t>* held_ = nullptr;  // the heap's Context::held_bytes, while memory_ lives
  uint64_t held_size_ = 0;
};

}  // namespace meganeura::vk
