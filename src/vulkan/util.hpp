// Small helpers shared by the Vulkan runtime's files: environment variables, byte counts, and
// the names of VkResult codes. Private to src/vulkan.
#pragma once
#include <vulkan/vulkan.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace meganeura::vk {

// A zeroed Vulkan struct with its sType set (`VkFoo x{VK_STRUCTURE_TYPE_FOO}` would trip
// -Wmissing-field-initializers).
template <class T>
T init(VkStructureType type) {
  T s{};
  s.sType = type;
  return s;
}

// "VK_ERROR_OUT_OF_DEVICE_MEMORY", or "VkResult -13" for codes this build does not know.
std::string result_name(VkResult r);

// The value of an environment variable, absent when unset or empty.
std::optional<std::string> env(const char* name);
// True when MEGANEURA_VALIDATION is set to something other than "0".
bool validation_requested();
// Seconds a fence wait may take before it is reported as a hang (MEGANEURA_TIMEOUT_S, default 60).
double fence_timeout_s();
// Waits (that timeout; 60 s where the variable is bad) for a fence whose submission may still
// run, before what it uses is destroyed. True once it is over — a lost device's work is over too
// — false when it still runs after the timeout (then leak what it uses rather than destroy it).
bool settle_fence(VkDevice device, VkFence fence) noexcept;
// MEGANEURA_PARAMS_BUFFER: true for `storage` (params blocks as storage buffers even where the
// device could read them as uniform buffers), false for unset or `uniform`; anything else throws.
bool params_storage_requested();

// One global memory barrier (vkCmdPipelineBarrier with a single VkMemoryBarrier).
void memory_barrier(VkCommandBuffer cb, VkPipelineStageFlags src_stage, VkAccessFlags src_access,
                    VkPipelineStageFlags dst_stage, VkAccessFlags dst_access);
// A barrier from everything submitted before to everything after. Recorded first in every
// command buffer: a pipeline barrier's scopes reach across submissions on the queue, and the
// host's fence wait alone orders nothing between one submission's writes and the next one's
// accesses (validation layers newer than Debian 12's 1.3.239 report those as hazards at submit
// time). The GPU is idle at that point anyway, so it costs nothing.
void leading_barrier(VkCommandBuffer cb);

// "256 bytes", "12.0 KiB", "3.5 MiB", "1.9 GiB": for error messages.
std::string format_bytes(uint64_t bytes);
// Always in GiB with one decimal ("0.4 GiB"): for heap sizes, which are compared with each other.
std::string format_gib(uint64_t bytes);

}  // namespace meganeura::vk
