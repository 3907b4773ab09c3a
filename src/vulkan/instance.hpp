// The VkInstance, owned by whoever needs one (the Context, or list_devices() for a moment).
// With MEGANEURA_VALIDATION=1 it loads the Khronos validation layer with synchronization
// validation, and a debug messenger collects what the layer reports (take_validation_messages).
#pragma once
#include <vulkan/vulkan.h>

#include <vector>

namespace meganeura::vk {

class Instance {
 public:
  Instance();  // throws DeviceError (no loader/driver, missing validation layer)
  ~Instance();
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;

  VkInstance handle() const { return instance_; }
  uint32_t api_version() const { return api_version_; }
  // In loader order; throws DeviceError (with what to install) when there are none.
  std::vector<VkPhysicalDevice> physical_devices() const;
  // An instance-level function, or nullptr where the loader has none by that name.
  template <class Fn>
  Fn proc(const char* name) const {
    return reinterpret_cast<Fn>(vkGetInstanceProcAddr(instance_, name));
  }

 private:
  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  uint32_t api_version_ = 0;
};

}  // namespace meganeura::vk
