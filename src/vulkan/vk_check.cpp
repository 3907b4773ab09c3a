// vk::check: every VkResult goes through here, so every failed call becomes a DeviceError that
// names the call, the result and what the user can do about it.
#include "meganeura/error.hpp"
#include "vulkan/context.hpp"
#include "vulkan/util.hpp"

namespace meganeura::vk {

std::string result_name(VkResult r) {
  switch (r) {
#define MEGANEURA_RESULT(x) \
  case x: return #x;
    MEGANEURA_RESULT(VK_SUCCESS)
    MEGANEURA_RESULT(VK_NOT_READY)
    MEGANEURA_RESULT(VK_TIMEOUT)
    MEGANEURA_RESULT(VK_EVENT_SET)
    MEGANEURA_RESULT(VK_EVENT_RESET)
    MEGANEURA_RESULT(VK_INCOMPLETE)
    MEGANEURA_RESULT(VK_ERROR_OUT_OF_HOST_MEMORY)
    MEGANEURA_RESULT(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    MEGANEURA_RESULT(VK_ERROR_INITIALIZATION_FAILED)
    MEGANEURA_RESULT(VK_ERROR_DEVICE_LOST)
    MEGANEURA_RESULT(VK_ERROR_MEMORY_MAP_FAILED)
    MEGANEURA_RESULT(VK_ERROR_LAYER_NOT_PRESENT)
    MEGANEURA_RESULT(VK_ERROR_EXTENSION_NOT_PRESENT)
    MEGANEURA_RESULT(VK_ERROR_FEATURE_NOT_PRESENT)
    MEGANEURA_RESULT(VK_ERROR_INCOMPATIBLE_DRIVER)
    MEGANEURA_RESULT(VK_ERROR_TOO_MANY_OBJECTS)
    MEGANEURA_RESULT(VK_ERROR_FORMAT_NOT_SUPPORTED)
    MEGANEURA_RESULT(VK_ERROR_FRAGMENTED_POOL)
    MEGANEURA_RESULT(VK_ERROR_UNKNOWN)
    MEGANEURA_RESULT(VK_ERROR_OUT_OF_POOL_MEMORY)
    MEGANEURA_RESULT(VK_ERROR_INVALID_EXTERNAL_HANDLE)
    MEGANEURA_RESULT(VK_ERROR_FRAGMENTATION)
    MEGANEURA_RESULT(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS)
    MEGANEURA_RESULT(VK_PIPELINE_COMPILE_REQUIRED)
    MEGANEURA_RESULT(VK_ERROR_VALIDATION_FAILED_EXT)
#undef MEGANEURA_RESULT
    default: return "VkResult " + std::to_string(static_cast<int>(r));
  }
}

namespace {

// What the user can do about a failed call, by result.
const char* hint(VkResult r) {
  switch (r) {
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
      return "the GPU is out of memory: reduce the batch size or sequence length, or set MEGANEURA_DEVICE";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "the host is out of memory";
    case VK_ERROR_INCOMPATIBLE_DRIVER:
    case VK_ERROR_INITIALIZATION_FAILED:
      return "no usable Vulkan driver: install your GPU's Vulkan driver "
             "(on a machine without a GPU: apt-get install mesa-vulkan-drivers libvulkan1)";
    case VK_ERROR_LAYER_NOT_PRESENT: return "install vulkan-validationlayers, or unset MEGANEURA_VALIDATION";
    case VK_ERROR_EXTENSION_NOT_PRESENT:
    case VK_ERROR_FEATURE_NOT_PRESENT:
      return "the driver lacks something meganeura asked for; please report it with the output of "
             "`meganeura info`";
    case VK_ERROR_TOO_MANY_OBJECTS:
    case VK_ERROR_FRAGMENTED_POOL:
    case VK_ERROR_OUT_OF_POOL_MEMORY: return "a meganeura bug in sizing a pool; please report it";
    default: return "please report it with the output of `meganeura info`";
  }
}

}  // namespace

void check(VkResult r, std::string_view call) {
  if (r == VK_SUCCESS) return;
  std::string where(call);
  if (r == VK_ERROR_DEVICE_LOST)
    throw DeviceError("the GPU was lost (device lost) during " + where +
                      "; the driver gave up on it after a crash or a hang (a kernel that ran too long, "
                      "or an out-of-bounds access). The system log (dmesg) may say why; "
                      "MEGANEURA_VALIDATION=1 may find the cause");
  std::string msg = where + " failed: " + result_name(r) + " (" + hint(r) + ")";
  if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY) throw OutOfMemoryError(msg);
  throw DeviceError(msg);
}

}  // namespace meganeura::vk
