// Test-only fault injection (docs/environment.md, docs/reliability.md): a device allocation that
// fails with VK_ERROR_OUT_OF_DEVICE_MEMORY, a submission or fence wait that reports the device
// lost, a fence that never signals, a device that binds few storage buffers to a stage. All
// off unless a test arms them, here or through the MEGANEURA_FAULT_* variables (read once, at the
// first call). Thread-safe.
#pragma once
#include <vulkan/vulkan.h>

#include <cstdint>

namespace meganeura::vk::fault {

// Counts one device allocation (memory, a buffer, a pool, a descriptor set, a command buffer, a
// fence, a query pool, a shader module, a layout or a pipeline): VK_ERROR_OUT_OF_DEVICE_MEMORY
// when it is the armed one, else VK_SUCCESS — then the caller makes the real call.
VkResult allocation();
// Makes `call` (a lambda returning the real call's VkResult) unless allocation() fails it.
template <class Call>
VkResult allocate(Call&& call) {
  const VkResult injected = allocation();
  return injected != VK_SUCCESS ? injected : call();
}

enum class Loss { None, AtSubmit, AtWait };
// VK_ERROR_DEVICE_LOST (once) when a loss is armed at `where`, else VK_SUCCESS.
VkResult device_lost(Loss where);
// True (once) when a hang is armed: the next fence wait behaves as if the fence never signals.
bool hang();
// The storage buffers a compute stage may bind: the device's `limit`, or fewer where armed.
uint32_t storage_buffer_limit(uint32_t limit);

// The test API. arm_allocation(n): the n-th allocation from now fails, once (0: none); the
// count restarts either way. MEGANEURA_FAULT_DEVICE_ALLOC=n arms it at the first call.
void arm_allocation(uint64_t n);
uint64_t allocations_counted();  // since the last arm_allocation (or the process start)
// MEGANEURA_FAULT_DEVICE_LOST=submit|wait and MEGANEURA_FAULT_HANG=1 arm these.
void arm_device_lost(Loss where);
void arm_hang();
// arm_storage_buffers(n): devices bind at most n storage buffers a stage from now (0: their own
// limit); MEGANEURA_FAULT_STORAGE_BUFFERS=n arms it at the first call.
void arm_storage_buffers(uint32_t n);

}  // namespace meganeura::vk::fault
