#include "vulkan/util.hpp"

#include <cstdio>
#include <cstdlib>

#include "meganeura/error.hpp"
#include "util/env.hpp"

namespace meganeura::vk {

std::optional<std::string> env(const char* name) {
  std::string v = util::env(name);
  if (v.empty()) return std::nullopt;
  return v;
}

bool validation_requested() {
  auto v = env("MEGANEURA_VALIDATION");
  return v && *v != "0";
}

bool params_storage_requested() {
  return util::env_choice("MEGANEURA_PARAMS_BUFFER", {"uniform", "storage"}) == "storage";
}

double fence_timeout_s() {
  auto v = env("MEGANEURA_TIMEOUT_S");
  if (!v) return 60.0;
  char* end = nullptr;
  double s = std::strtod(v->c_str(), &end);
  if (end == v->c_str() || *end != '\0' || !(s > 0))
    throw DeviceError("MEGANEURA_TIMEOUT_S=" + *v + " is not a positive number of seconds");
  return s;
}

bool settle_fence(VkDevice device, VkFence fence) noexcept {
  double s = 60;
  try {
    s = fence_timeout_s();
  } catch (...) {}
  const VkResult r = vkWaitForFences(device, 1, &fence, VK_TRUE, static_cast<uint64_t>(s * 1e9));
  return r == VK_SUCCESS || r == VK_ERROR_DEVICE_LOST;
}

void memory_barrier(VkCommandBuffer cb, VkPipelineStageFlags src_stage, VkAccessFlags src_access,
                    VkPipelineStageFlags dst_stage, VkAccessFlags dst_access) {
  VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, src_access, dst_access};
  vkCmdPipelineBarrier(cb, src_stage, dst_stage, 0, 1, &b, 0, nullptr, 0, nullptr);
}

void leading_barrier(VkCommandBuffer cb) {
  memory_barrier(cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_ACCESS_MEMORY_WRITE_BIT, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                 VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT);
}

std::string format_bytes(uint64_t bytes) {
  constexpr double KiB = 1024.0, MiB = KiB * 1024, GiB = MiB * 1024;
  char buf[64];
  double b = static_cast<double>(bytes);
  if (b < KiB)
    std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(bytes));
  else if (b < MiB)
    std::snprintf(buf, sizeof buf, "%.1f KiB", b / KiB);
  else if (b < GiB)
    std::snprintf(buf, sizeof buf, "%.1f MiB", b / MiB);
  else
    std::snprintf(buf, sizeof buf, "%.1f GiB", b / GiB);
  return buf;
}

std::string format_gib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024 * 1024));
  return buf;
}

}  // namespace meganeura::vk
