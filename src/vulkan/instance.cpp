#include "vulkan/instance.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>

#include "meganeura/device.hpp"
#include "meganeura/error.hpp"
#include "vulkan/context.hpp"
#include "vulkan/util.hpp"

namespace meganeura {
namespace vk {
namespace {

constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";
constexpr const char* kInstallDriver =
    "install your GPU's Vulkan driver (on a machine without a GPU: apt-get install mesa-vulkan-drivers "
    "libvulkan1)";

// Messages from the validation layer. Deliberately never destroyed: the layer may still report
// while static destructors run at exit (the shared Context is destroyed then).
struct MessageStore {
  std::mutex mutex;
  std::vector<std::string> messages;
};
MessageStore& store() {
  static auto* s = new MessageStore;
  return *s;
}

VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT, VkDebugUtilsMessageTypeFlagsEXT,
                                          const VkDebugUtilsMessengerCallbackDataEXT* data, void*) {
  std::string msg = data && data->pMessage ? data->pMessage : "(no message)";
  std::fprintf(stderr, "meganeura: validation: %s\n", msg.c_str());
  auto& s = store();
  std::lock_guard lock(s.mutex);
  s.messages.push_back(std::move(msg));
  return VK_FALSE;  // never abort the call that triggered the message
}

VkDebugUtilsMessengerCreateInfoEXT messenger_info() {
  auto info = init<VkDebugUtilsMessengerCreateInfoEXT>(VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT);
  info.messageSeverity =
      VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  info.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  info.pfnUserCallback = on_message;
  return info;
}

std::vector<VkExtensionProperties> instance_extensions(const char* layer) {
  uint32_t n = 0;
  check(vkEnumerateInstanceExtensionProperties(layer, &n, nullptr), "vkEnumerateInstanceExtensionProperties");
  std::vector<VkExtensionProperties> exts(n);
  check(vkEnumerateInstanceExtensionProperties(layer, &n, exts.data()), "vkEnumerateInstanceExtensionProperties");
  exts.resize(n);
  return exts;
}

bool has_extension(const std::vector<VkExtensionProperties>& exts, const char* name) {
  return std::any_of(exts.begin(), exts.end(), [&](const auto& e) { return std::strcmp(e.extensionName, name) == 0; });
}

bool has_layer(const char* name) {
  uint32_t n = 0;
  check(vkEnumerateInstanceLayerProperties(&n, nullptr), "vkEnumerateInstanceLayerProperties");
  std::vector<VkLayerProperties> layers(n);
  check(vkEnumerateInstanceLayerProperties(&n, layers.data()), "vkEnumerateInstanceLayerProperties");
  layers.resize(n);
  return std::any_of(layers.begin(), layers.end(), [&](const auto& l) { return std::strcmp(l.layerName, name) == 0; });
}

uint32_t loader_version() {
  // vkEnumerateInstanceVersion is absent from 1.0 loaders: look it up rather than link it.
  auto fn =
      reinterpret_cast<PFN_vkEnumerateInstanceVersion>(vkGetInstanceProcAddr(nullptr, "vkEnumerateInstanceVersion"));
  uint32_t v = VK_API_VERSION_1_0;
  if (fn) check(fn(&v), "vkEnumerateInstanceVersion");
  return v;
}

}  // namespace

Instance::Instance() {
  uint32_t loader = loader_version();
  if (VK_API_VERSION_MAJOR(loader) == 1 && VK_API_VERSION_MINOR(loader) < 2)
    throw DeviceError("the Vulkan loader supports only Vulkan 1." + std::to_string(VK_API_VERSION_MINOR(loader)) +
                      "; meganeura needs 1.2 or newer: update libvulkan1");
  api_version_ = std::min(loader, VK_API_VERSION_1_3);

  const bool validation = validation_requested();
  std::vector<const char*> layers, extensions;
  auto available = instance_extensions(nullptr);
  if (validation) {
    if (!has_layer(kValidationLayer))
      throw DeviceError(
          "MEGANEURA_VALIDATION is set but the Vulkan validation layer (VK_LAYER_KHRONOS_validation) is not "
          "installed: apt-get install vulkan-validationlayers, or unset MEGANEURA_VALIDATION");
    layers.push_back(kValidationLayer);
    auto from_layer = instance_extensions(kValidationLayer);
    available.insert(available.end(), from_layer.begin(), from_layer.end());
    if (!has_extension(available, VK_EXT_DEBUG_UTILS_EXTENSION_NAME))
      throw DeviceError("the validation layer offers no VK_EXT_debug_utils, so its messages cannot be collected");
    extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    if (has_extension(available, VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME))
      extensions.push_back(VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);
  }
  // MoltenVK and other non-conformant drivers are listed only when we opt in.
  VkInstanceCreateFlags flags = 0;
  if (has_extension(available, VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME)) {
    extensions.push_back(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME);
    flags |= VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR;
  }

  auto app = init<VkApplicationInfo>(VK_STRUCTURE_TYPE_APPLICATION_INFO);
  app.pApplicationName = "meganeura";
  app.pEngineName = "meganeura";
  app.apiVersion = api_version_;

  // Synchronization validation checks the planner's barriers; the messenger chained into the
  // create info also catches what the layer says during vkCreateInstance itself.
  VkValidationFeatureEnableEXT enables[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
  auto features = init<VkValidationFeaturesEXT>(VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT);
  features.enabledValidationFeatureCount = 1;
  features.pEnabledValidationFeatures = enables;
  VkDebugUtilsMessengerCreateInfoEXT messenger = messenger_info();
  messenger.pNext = &features;

  auto info = init<VkInstanceCreateInfo>(VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO);
  info.pNext = validation ? &messenger : nullptr;
  info.flags = flags;
  info.pApplicationInfo = &app;
  info.enabledLayerCount = static_cast<uint32_t>(layers.size());
  info.ppEnabledLayerNames = layers.data();
  info.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();
  check(vkCreateInstance(&info, nullptr, &instance_), "vkCreateInstance");

  if (validation) {
    auto create = proc<PFN_vkCreateDebugUtilsMessengerEXT>("vkCreateDebugUtilsMessengerEXT");
    VkDebugUtilsMessengerCreateInfoEXT mi = messenger_info();
    VkResult r = create ? create(instance_, &mi, nullptr, &messenger_) : VK_ERROR_EXTENSION_NOT_PRESENT;
    if (r != VK_SUCCESS) {
      vkDestroyInstance(instance_, nullptr);
      check(r, "vkCreateDebugUtilsMessengerEXT");
    }
  }
}

Instance::~Instance() {
  if (messenger_) {
    auto destroy = proc<PFN_vkDestroyDebugUtilsMessengerEXT>("vkDestroyDebugUtilsMessengerEXT");
    if (destroy) destroy(instance_, messenger_, nullptr);
  }
  vkDestroyInstance(instance_, nullptr);
}

std::vector<VkPhysicalDevice> Instance::physical_devices() const {
  uint32_t n = 0;
  check(vkEnumeratePhysicalDevices(instance_, &n, nullptr), "vkEnumeratePhysicalDevices");
  std::vector<VkPhysicalDevice> devices(n);
  check(vkEnumeratePhysicalDevices(instance_, &n, devices.data()), "vkEnumeratePhysicalDevices");
  devices.resize(n);
  if (devices.empty()) throw DeviceError(std::string("no Vulkan device found: ") + kInstallDriver);
  return devices;
}

}  // namespace vk

std::vector<std::string> take_validation_messages() {
  auto& s = vk::store();
  std::lock_guard lock(s.mutex);
  return std::exchange(s.messages, {});
}

}  // namespace meganeura
