// Test-only fault injection: counters and one-shot switches (see fault.hpp).
#include "vulkan/fault.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>

#include "util/env.hpp"

namespace meganeura::vk::fault {
namespace {

struct Switches {
  std::atomic<uint64_t> counted{0}, fail_at{0};  // fail_at 0: never
  std::atomic<Loss> loss{Loss::None};
  std::atomic<bool> hang{false};
  std::atomic<uint32_t> storage_buffers{0};  // 0: the device's own limit
};

Switches& switches() {
  static Switches s;
  static std::once_flag from_env;
  std::call_once(from_env, [] {
    s.fail_at = util::env_number("MEGANEURA_FAULT_DEVICE_ALLOC", UINT64_MAX, 0, "the number of the allocation to fail");
    const std::string loss = util::env_choice("MEGANEURA_FAULT_DEVICE_LOST", {"submit", "wait"});
    if (!loss.empty()) s.loss = loss == "submit" ? Loss::AtSubmit : Loss::AtWait;
    s.hang = util::env("MEGANEURA_FAULT_HANG") == "1";
    s.storage_buffers = static_cast<uint32_t>(
        util::env_number("MEGANEURA_FAULT_STORAGE_BUFFERS", 1u << 20, 0, "the storage buffers a stage may bind"));
  });
  return s;
}

}  // namespace

VkResult allocation() {
  Switches& s = switches();
  const uint64_t n = ++s.counted;
  uint64_t armed = n;
  // Exactly one caller sees its number match and disarms the switch.
  return s.fail_at.compare_exchange_strong(armed, 0) ? VK_ERROR_OUT_OF_DEVICE_MEMORY : VK_SUCCESS;
}

VkResult device_lost(Loss where) {
  Loss armed = where;
  return switches().loss.compare_exchange_strong(armed, Loss::None) ? VK_ERROR_DEVICE_LOST : VK_SUCCESS;
}

bool hang() { return switches().hang.exchange(false); }

uint32_t storage_buffer_limit(uint32_t limit) {
  const uint32_t armed = switches().storage_buffers;
  return armed ? std::min(armed, limit) : limit;
}

void arm_allocation(uint64_t n) {
  Switches& s = switches();
  s.fail_at = 0;
  s.counted = 0;
  s.fail_at = n;
}

uint64_t allocations_counted() { return switches().counted; }

void arm_device_lost(Loss where) { switches().loss = where; }

void arm_hang() { switches().hang = true; }

void arm_storage_buffers(uint32_t n) { switches().storage_buffers = n; }

}  // namespace meganeura::vk::fault
