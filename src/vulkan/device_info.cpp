// Capability probe of each physical device, the one-line banner users paste into bug reports,
// and the device choice (MEGANEURA_DEVICE, else by device type).
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "meganeura/error.hpp"
#include "vulkan/context.hpp"
#include "vulkan/probe.hpp"
#include "vulkan/util.hpp"
#include "vulkan/vk_ext.hpp"

namespace meganeura {
namespace vk {
namespace {

std::string version_string(uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) + "." +
         std::to_string(VK_API_VERSION_PATCH(v));
}

const char* type_name(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete GPU";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated GPU";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual GPU";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "CPU";
    default: return "other";
  }
}

// Lower is preferred when MEGANEURA_DEVICE is unset.
int type_rank(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 3;
    default: return 4;
  }
}

// driverName + driverInfo ("NVIDIA 580.159"); decodes driverVersion where driverInfo is empty.
std::string driver_string(const VkPhysicalDeviceProperties& p, const VkPhysicalDeviceDriverProperties& d) {
  std::string name = d.driverName, detail = d.driverInfo;
  if (detail.empty()) {
    uint32_t v = p.driverVersion;
    char buf[48];
    if (p.vendorID == 0x10DE) {  // NVIDIA packs 10.8.8.6 bits
      unsigned major = v >> 22, minor = (v >> 14) & 0xff, patch = (v >> 6) & 0xff;
      if (patch)
        std::snprintf(buf, sizeof buf, "%u.%u.%02u", major, minor, patch);
      else
        std::snprintf(buf, sizeof buf, "%u.%u", major, minor);
    } else {
      std::snprintf(buf, sizeof buf, "%u.%u.%u", VK_API_VERSION_MAJOR(v), VK_API_VERSION_MINOR(v),
                    VK_API_VERSION_PATCH(v));
    }
    detail = buf;
  }
  if (name.empty()) return detail;
  return name + " " + detail;
}

const char* component_name(uint32_t t) {
  switch (t) {
    case 0: return "f16";
    case 1: return "f32";
    case 2: return "f64";
    case 3: return "s8";
    case 4: return "s16";
    case 5: return "s32";
    case 6: return "s64";
    case 7: return "u8";
    case 8: return "u16";
    case 9: return "u32";
    case 10: return "u64";
    case 1000141000: return "bf16";
    case 1000491002: return "e4m3";
    case 1000491003: return "e5m2";
    default: return "?";
  }
}

// "16x16x16 f16*f16->f32" (M x N x K, A*B -> result), with the scope when it is not a subgroup.
std::string describe_shape(uint32_t m, uint32_t n, uint32_t k, uint32_t a, uint32_t b, uint32_t result,
                           uint32_t scope) {
  std::string s = std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + " " + component_name(a) +
                  "*" + component_name(b) + "->" + component_name(result);
  if (scope != VK_SCOPE_SUBGROUP_NV) s += scope == VK_SCOPE_WORKGROUP_NV ? " (workgroup)" : " (other scope)";
  return s;
}

// Shapes from the KHR query where the device has it, else the NV one. Both use the same
// two-call idiom; only the struct differs.
template <class Props>
std::vector<Props> query_shapes(const Instance& inst, VkPhysicalDevice pd, const char* fn_name, VkStructureType stype) {
  using Fn = VkResult(VKAPI_PTR*)(VkPhysicalDevice, uint32_t*, Props*);
  auto fn = inst.proc<Fn>(fn_name);
  if (!fn) return {};
  uint32_t n = 0;
  check(fn(pd, &n, nullptr), fn_name);
  std::vector<Props> props(n);
  for (auto& p : props) p.sType = stype;
  check(fn(pd, &n, props.data()), fn_name);
  props.resize(n);
  return props;
}

std::vector<std::string> coopmat_shapes(const Instance& inst, const DeviceProbe& d) {
  std::vector<std::string> shapes;
  if (d.info.coopmat_khr) {
    for (const auto& p : query_shapes<VkCooperativeMatrixPropertiesKHR>(
             inst, d.physical, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR",
             VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR))
      shapes.push_back(describe_shape(p.MSize, p.NSize, p.KSize, p.AType, p.BType, p.ResultType, p.scope));
  } else if (d.info.coopmat_nv) {
    for (const auto& p : query_shapes<VkCooperativeMatrixPropertiesNV>(
             inst, d.physical, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV",
             VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV))
      shapes.push_back(describe_shape(p.MSize, p.NSize, p.KSize, p.AType, p.BType, p.DType, p.scope));
  }
  // Drivers list a shape once per accumulator variant (saturating or not): keep each once.
  std::vector<std::string> unique;
  for (auto& s : shapes)
    if (std::find(unique.begin(), unique.end(), s) == unique.end()) unique.push_back(std::move(s));
  return unique;
}

std::vector<std::string> device_extensions(VkPhysicalDevice pd) {
  uint32_t n = 0;
  check(vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, nullptr), "vkEnumerateDeviceExtensionProperties");
  std::vector<VkExtensionProperties> props(n);
  check(vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, props.data()), "vkEnumerateDeviceExtensionProperties");
  std::vector<std::string> names;
  for (uint32_t i = 0; i < n; ++i) names.emplace_back(props[i].extensionName);
  return names;
}

// Prepends `s` to a pNext chain whose head is `head`.
template <class S>
void link(void*& head, S& s) {
  s.pNext = head;
  head = &s;
}

DeviceProbe probe(const Instance& inst, VkPhysicalDevice pd, int index) {
  DeviceProbe d;
  d.physical = pd;
  d.extensions = device_extensions(pd);
  VkPhysicalDeviceProperties base{};
  vkGetPhysicalDeviceProperties(pd, &base);
  d.type = base.deviceType;
  d.api_version = base.apiVersion;
  d.limits = base.limits;
  vkGetPhysicalDeviceMemoryProperties(pd, &d.memory);
  const bool v12 = VK_API_VERSION_MINOR(base.apiVersion) >= 2 || VK_API_VERSION_MAJOR(base.apiVersion) > 1;
  const bool v11 = VK_API_VERSION_MINOR(base.apiVersion) >= 1 || VK_API_VERSION_MAJOR(base.apiVersion) > 1;

  // Properties: subgroup size, driver name, largest allocation. Structs are chained only where
  // the device's version or extensions define them (the validation layer checks this).
  auto subgroup = init<VkPhysicalDeviceSubgroupProperties>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES);
  auto driver = init<VkPhysicalDeviceDriverProperties>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES);
  auto maint3 =
      init<VkPhysicalDeviceMaintenance3Properties>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES);
  auto props = init<VkPhysicalDeviceProperties2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2);
  void* head = nullptr;
  if (v11) {
    link(head, subgroup);
    link(head, maint3);
  }
  if (v12 || d.has_extension(VK_KHR_DRIVER_PROPERTIES_EXTENSION_NAME)) link(head, driver);
  auto sm = init<VkPhysicalDeviceShaderSMBuiltinsPropertiesNV>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV);
  if (d.has_extension(VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME)) link(head, sm);
  props.pNext = head;
  vkGetPhysicalDeviceProperties2(pd, &props);
  d.max_allocation_size = v11 ? maint3.maxMemoryAllocationSize : UINT64_MAX;

  // Features: the 16-bit types and the tensor-core extensions.
  d.info.coopmat_khr = d.has_extension(VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME);
  d.info.coopmat_nv = d.has_extension(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
  d.info.bf16 = d.has_extension(VK_KHR_SHADER_BFLOAT16_EXTENSION_NAME);
  d.info.coopmat2_nv = d.has_extension(VK_NV_COOPERATIVE_MATRIX_2_EXTENSION_NAME);
  d.memory_budget = d.has_extension(VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
  auto storage16 = init<VkPhysicalDevice16BitStorageFeatures>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES);
  auto float16 =
      init<VkPhysicalDeviceShaderFloat16Int8Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES);
  auto coop_khr = init<VkPhysicalDeviceCooperativeMatrixFeaturesKHR>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR);
  auto coop_nv = init<VkPhysicalDeviceCooperativeMatrixFeaturesNV>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV);
  auto bf16 =
      init<VkPhysicalDeviceShaderBfloat16FeaturesKHR>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_BFLOAT16_FEATURES_KHR);
  auto coop2 = init<VkPhysicalDeviceCooperativeMatrix2FeaturesNV>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV);
  auto maintenance4 =
      init<VkPhysicalDeviceMaintenance4Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_FEATURES);
  const bool v13 = VK_API_VERSION_MINOR(base.apiVersion) >= 3 || VK_API_VERSION_MAJOR(base.apiVersion) > 1;
  auto ubo_layout = init<VkPhysicalDeviceUniformBufferStandardLayoutFeatures>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_UNIFORM_BUFFER_STANDARD_LAYOUT_FEATURES);
  auto memory_model =
      init<VkPhysicalDeviceVulkanMemoryModelFeatures>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES);
  auto address = init<VkPhysicalDeviceBufferDeviceAddressFeatures>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_BUFFER_DEVICE_ADDRESS_FEATURES);
  auto features = init<VkPhysicalDeviceFeatures2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2);
  head = nullptr;
  if (v11) link(head, storage16);
  if (v12) {
    link(head, ubo_layout);
    link(head, memory_model);
    link(head, address);
  }
  if (v12 || d.has_extension(VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME)) link(head, float16);
  if (d.info.coopmat_khr) link(head, coop_khr);
  if (d.info.coopmat_nv) link(head, coop_nv);
  if (d.info.bf16) link(head, bf16);
  if (d.info.coopmat2_nv) link(head, coop2);
  if (v13) link(head, maintenance4);
  features.pNext = head;
  vkGetPhysicalDeviceFeatures2(pd, &features);
  d.shader_int16 = features.features.shaderInt16;
  d.storage16 = storage16.storageBuffer16BitAccess;
  d.ubo_std430 = ubo_layout.uniformBufferStandardLayout;
  d.info.fp16 = float16.shaderFloat16;
  d.memory_model = memory_model.vulkanMemoryModel;
  d.memory_model_device_scope = memory_model.vulkanMemoryModelDeviceScope;
  // The tensor-core kernels are written against the Vulkan memory model (coop_fragments.glsl).
  d.info.coopmat_khr = d.info.coopmat_khr && coop_khr.cooperativeMatrix && d.memory_model;
  d.info.coopmat_nv = d.info.coopmat_nv && coop_nv.cooperativeMatrix && d.memory_model;
  // matmul_coop2.glsl: workgroup-scope matrices of its tile sizes, loaded and stored through
  // tensor layouts, finished element by element; on top of the KHR extension and 16-bit storage.
  d.maintenance4 = maintenance4.maintenance4;
  d.device_address = address.bufferDeviceAddress;
  d.info.coopmat2_nv = d.info.coopmat2_nv && d.info.coopmat_khr && d.storage16 && d.info.fp16 && d.maintenance4 &&
                       coop2.cooperativeMatrixWorkgroupScope && coop2.cooperativeMatrixFlexibleDimensions &&
                       coop2.cooperativeMatrixTensorAddressing && coop2.cooperativeMatrixPerElementOperations;
  d.info.bf16 = d.info.bf16 && bf16.shaderBFloat16Type;
  d.bf16_coopmat = d.info.bf16 && bf16.shaderBFloat16CooperativeMatrix;

  DeviceInfo& info = d.info;
  info.index = index;
  info.name = base.deviceName;
  info.type = type_name(base.deviceType);
  info.driver = driver_string(base, driver);
  info.api = version_string(base.apiVersion);
  info.subgroup_size = subgroup.subgroupSize;
  info.subgroup_arithmetic = v11 && (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                             (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT);
  info.shared_memory = base.limits.maxComputeSharedMemorySize;
  info.multiprocessors = sm.shaderSMCount;
  for (uint32_t i = 0; i < d.memory.memoryHeapCount; ++i)
    if (d.memory.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      info.device_local_bytes += d.memory.memoryHeaps[i].size;
  info.coopmat_shapes = coopmat_shapes(inst, d);
  return d;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

bool DeviceProbe::has_extension(const char* name) const {
  return std::find(extensions.begin(), extensions.end(), name) != extensions.end();
}

std::vector<DeviceProbe> probe_devices(const Instance& instance) {
  std::vector<DeviceProbe> out;
  auto devices = instance.physical_devices();
  for (size_t i = 0; i < devices.size(); ++i) out.push_back(probe(instance, devices[i], static_cast<int>(i)));
  return out;
}

static std::string device_list(std::span<const DeviceProbe> devices) {
  std::string list;
  for (const auto& d : devices) list += "\n  " + d.info.banner();
  return list;
}

size_t device_at(std::span<const DeviceProbe> devices, int index) {
  if (index >= 0 && static_cast<size_t>(index) < devices.size()) return static_cast<size_t>(index);
  throw DeviceError("device " + std::to_string(index) + " does not exist: the Vulkan devices are" +
                    device_list(devices));
}

size_t choose_device(std::span<const DeviceProbe> devices) {
  if (auto want = env("MEGANEURA_DEVICE")) {
    const bool is_index =
        std::all_of(want->begin(), want->end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    for (size_t i = 0; i < devices.size(); ++i) {
      if (is_index ? std::to_string(i) == *want : lower(devices[i].info.name).find(lower(*want)) != std::string::npos)
        return i;
    }
    throw DeviceError("MEGANEURA_DEVICE=" + *want +
                      " matches none of the Vulkan devices (give an index or part of a name):" + device_list(devices));
  }
  size_t best = 0;
  for (size_t i = 1; i < devices.size(); ++i)
    if (type_rank(devices[i].type) < type_rank(devices[best].type)) best = i;
  return best;
}

}  // namespace vk

std::string DeviceInfo::banner() const {
  std::string s = std::to_string(index) + ": " + name + " | Vulkan " + api + " | driver " + driver + " | subgroup " +
                  std::to_string(subgroup_size) + " | shared " + std::to_string(shared_memory / 1024) + " KiB | ";
  if (multiprocessors) s += std::to_string(multiprocessors) + " SMs | ";
  if (fp16 && bf16)
    s += "fp16 bf16";
  else if (fp16)
    s += "fp16";
  else if (bf16)
    s += "bf16";
  else
    s += "no fp16";
  s += " | coopmat";
  if (!coopmat_nv && !coopmat_khr) return s + " none";
  if (coopmat_nv) s += " NV";
  if (coopmat_khr) s += " KHR";
  if (coopmat2_nv) s += " NV2";
  if (!coopmat_shapes.empty()) {
    s += " (";
    for (size_t i = 0; i < coopmat_shapes.size(); ++i) s += (i ? ", " : "") + coopmat_shapes[i];
    s += ")";
  }
  return s;
}

// The instance that lists devices: made once and kept, like the contexts' (vk::Context::get).
// Destroying it let the loader unload the driver each time, whose state then showed as leaks
// of an unnamed library under LeakSanitizer (`meganeura info`), and reloaded it on each call.
static const vk::Instance& listing_instance() {
  static auto* mutex = new std::mutex;
  static vk::Instance* instance = nullptr;
  std::lock_guard lock(*mutex);
  if (!instance) instance = new vk::Instance();  // a failure is not kept: a later call retries
  return *instance;
}

std::vector<DeviceInfo> list_devices() {
  std::vector<DeviceInfo> out;
  for (auto& d : vk::probe_devices(listing_instance())) out.push_back(std::move(d.info));
  return out;
}

DeviceInfo default_device_info() {
  auto devices = vk::probe_devices(listing_instance());
  return devices[vk::choose_device(devices)].info;
}

}  // namespace meganeura
