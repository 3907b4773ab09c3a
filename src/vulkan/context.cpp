// The process's Vulkan context: picks the device, creates the logical device with the features
// the kernels may use, and serializes access to the one compute queue.
#include "vulkan/context.hpp"

#include <chrono>
#include <cstdio>
#include <thread>

#include "meganeura/error.hpp"
#include "util/env.hpp"
#include "util/log_topic.hpp"
#include "vulkan/context_impl.hpp"
#include "vulkan/fault.hpp"
#include "vulkan/util.hpp"
#include "vulkan/vk_ext.hpp"

namespace meganeura::vk {
namespace {

bool pipeline_statistics_wanted(const DeviceProbe& d) {
  return util::log_topic("pipelines") && d.has_extension(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
}

// The first compute-capable family, preferring one with timestamps (for dispatch timing).
uint32_t compute_family(VkPhysicalDevice pd, const std::string& device_name) {
  uint32_t n = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, nullptr);
  std::vector<VkQueueFamilyProperties> families(n);
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, families.data());
  uint32_t found = UINT32_MAX;
  for (uint32_t i = 0; i < n; ++i) {
    if (!(families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) || families[i].queueCount == 0) continue;
    if (families[i].timestampValidBits) return i;
    if (found == UINT32_MAX) found = i;
  }
  if (found == UINT32_MAX)
    throw DeviceError(device_name + " has no compute queue; choose another with MEGANEURA_DEVICE");
  return found;
}

VkDevice create_device(const DeviceProbe& d, uint32_t family, bool stats) {
  float priority = 1.0f;
  auto queue = init<VkDeviceQueueCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO);
  queue.queueFamilyIndex = family;
  queue.queueCount = 1;
  queue.pQueuePriorities = &priority;

  // Optional extensions: tensor cores, bf16, memory budget (for out-of-memory messages), and
  // portability_subset, which must be enabled wherever it is offered (MoltenVK).
  std::vector<const char*> extensions;
  for (const char* e : {VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME,
                        VK_NV_COOPERATIVE_MATRIX_2_EXTENSION_NAME, VK_KHR_SHADER_BFLOAT16_EXTENSION_NAME,
                        VK_EXT_MEMORY_BUDGET_EXTENSION_NAME, "VK_KHR_portability_subset"})
    if (d.has_extension(e)) extensions.push_back(e);
  // MEGANEURA_LOG=pipelines: the driver's statistics of each pipeline (registers, ...).
  if (stats) extensions.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);

  auto features = init<VkPhysicalDeviceFeatures2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2);
  features.features.shaderInt16 = d.shader_int16;
  auto v11 = init<VkPhysicalDeviceVulkan11Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES);
  v11.storageBuffer16BitAccess = d.storage16;
  auto v12 = init<VkPhysicalDeviceVulkan12Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES);
  v12.shaderFloat16 = d.info.fp16;
  v12.uniformBufferStandardLayout = d.ubo_std430;  // the params blocks (Context::params_descriptor)
  v12.vulkanMemoryModel = d.memory_model;
  v12.vulkanMemoryModelDeviceScope = d.memory_model_device_scope;
  v12.bufferDeviceAddress = d.device_address;
  auto coop_khr = init<VkPhysicalDeviceCooperativeMatrixFeaturesKHR>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR);
  coop_khr.cooperativeMatrix = VK_TRUE;
  auto coop_nv = init<VkPhysicalDeviceCooperativeMatrixFeaturesNV>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV);
  coop_nv.cooperativeMatrix = VK_TRUE;
  auto bf16 =
      init<VkPhysicalDeviceShaderBfloat16FeaturesKHR>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_BFLOAT16_FEATURES_KHR);
  bf16.shaderBFloat16Type = VK_TRUE;
  bf16.shaderBFloat16CooperativeMatrix = d.bf16_coopmat;
  auto coop2 = init<VkPhysicalDeviceCooperativeMatrix2FeaturesNV>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV);
  coop2.cooperativeMatrixWorkgroupScope = coop2.cooperativeMatrixFlexibleDimensions = VK_TRUE;
  coop2.cooperativeMatrixTensorAddressing = coop2.cooperativeMatrixPerElementOperations = VK_TRUE;
  features.pNext = &v11;
  v11.pNext = &v12;
  void** tail = &v12.pNext;
  auto append = [&](auto& s) {
    *tail = &s;
    tail = &s.pNext;
  };
  if (d.info.coopmat_khr) append(coop_khr);
  if (d.info.coopmat_nv) append(coop_nv);
  if (d.info.bf16) append(bf16);
  if (d.info.coopmat2_nv) append(coop2);
  auto maintenance4 =
      init<VkPhysicalDeviceMaintenance4Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_FEATURES);
  maintenance4.maintenance4 = VK_TRUE;
  if (d.maintenance4) append(maintenance4);
  auto executables = init<VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR);
  executables.pipelineExecutableInfo = VK_TRUE;
  if (stats) append(executables);

  auto info = init<VkDeviceCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO);
  info.pNext = &features;
  info.queueCreateInfoCount = 1;
  info.pQueueCreateInfos = &queue;
  info.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();
  VkDevice device = VK_NULL_HANDLE;
  check(vkCreateDevice(d.physical, &info, nullptr, &device), "vkCreateDevice");
  return device;
}

// A short step finishes long before a sleeping vkWaitForFences wakes its caller (tens of µs
// on NVIDIA's driver, a tenth of a decoding step): a wait first polls the fence for up to
// MEGANEURA_SPIN_US (default 20,000 µs on a GPU, as CUDA's default synchronisation spins; 0 on a
// CPU device, whose work runs on the cores a poll would take), then sleeps.
std::chrono::microseconds spin_of(const DeviceInfo& info) {
  const uint64_t fallback = info.type == "CPU" ? 0 : 20000;
  return std::chrono::microseconds(
      util::env_number("MEGANEURA_SPIN_US", 1000000, fallback, "microseconds to poll a fence, up to 1000000"));
}

VkResult poll_then_wait(VkDevice device, VkFence fence, std::chrono::microseconds spin, double seconds) {
  const auto until = std::chrono::steady_clock::now() + spin;
  while (spin.count() > 0) {
    const VkResult r = vkGetFenceStatus(device, fence);
    if (r != VK_NOT_READY) return r;  // done, or the device was lost
    if (std::chrono::steady_clock::now() >= until) break;
  }
  return vkWaitForFences(device, 1, &fence, VK_TRUE, static_cast<uint64_t>(seconds * 1e9));
}

// A simulated hang (fault::hang): the fence is left alone, as one that never signals would be,
// and the wait ends with the timeout.
VkResult wait_as_hung(double seconds) {
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  return VK_TIMEOUT;
}

}  // namespace

Context::Impl::~Impl() {
  pipelines.reset();
  if (device.device && (!once_outstanding || settle_fence(device.device, once_fence))) {
    vkDestroyFence(device.device, once_fence, nullptr);
    vkDestroyCommandPool(device.device, once_pool, nullptr);
  }
}

std::shared_ptr<Context> Context::get(int device) {
  // Created on first use; a failed creation is not cached, so a later call retries. Deliberately
  // never destroyed: at exit NVIDIA's driver libraries tear themselves down before (or while)
  // static destructors run, and destroying the device then crashes the process. The OS reclaims
  // it. Sessions still free their buffers and pipelines' users when they are destroyed.
  static auto* mutex = new std::mutex;
  static auto* shared = new std::map<int, std::shared_ptr<Context>>;
  std::lock_guard lock(*mutex);
  // A lost device serves no new work: new sessions get a new one (the old is destroyed with the
  // last session that holds it).
  std::shared_ptr<Context>& context = (*shared)[device < 0 ? -1 : device];
  if (!context || context->lost()) context.reset(new Context(device));
  return context;
}

Context::Context(int device) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  fence_timeout_s();  // a bad MEGANEURA_TIMEOUT_S fails here, before any work
  m.instance = std::make_unique<Instance>();
  auto devices = probe_devices(*m.instance);
  m.probe = std::move(devices[device < 0 ? choose_device(devices) : device_at(devices, device)]);
  info_ = m.probe.info;
  m.spin = spin_of(info_);
  if (VK_API_VERSION_MAJOR(m.probe.api_version) == 1 && VK_API_VERSION_MINOR(m.probe.api_version) < 2)
    throw DeviceError(info_.name + " offers Vulkan " + info_.api +
                      "; meganeura needs 1.2 or newer: update its driver, or choose another with MEGANEURA_DEVICE");
  limits_ = m.probe.limits;
  instance_ = m.instance->handle();
  physical_ = m.probe.physical;
  queue_family_ = compute_family(physical_, info_.name);
  const bool statistics = pipeline_statistics_wanted(m.probe);
  m.device.device = device_ = create_device(m.probe, queue_family_, statistics);
  vkGetDeviceQueue(device_, queue_family_, 0, &queue_);

  auto pool = init<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
  pool.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pool.queueFamilyIndex = queue_family_;
  check(vkCreateCommandPool(device_, &pool, nullptr, &m.once_pool), "vkCreateCommandPool");
  auto alloc = init<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
  alloc.commandPool = m.once_pool;
  alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  alloc.commandBufferCount = 1;
  check(vkAllocateCommandBuffers(device_, &alloc, &m.once_cb), "vkAllocateCommandBuffers");
  auto fence = init<VkFenceCreateInfo>(VK_STRUCTURE_TYPE_FENCE_CREATE_INFO);
  check(vkCreateFence(device_, &fence, nullptr, &m.once_fence), "vkCreateFence");
  VkPhysicalDeviceProperties props;
  vkGetPhysicalDeviceProperties(physical_, &props);
  params_descriptor_ = m.probe.ubo_std430 && !params_storage_requested() ? VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER
                                                                         : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
  m.pipelines = std::make_unique<PipelineCache>(*this, props, params_descriptor_, statistics);
}

// Not vkDeviceWaitIdle: every submission was waited for, except one that timed out, and waiting
// for that one could hang the process at exit.
Context::~Context() = default;

const Pipeline& Context::pipeline(kernels::Kernel k, std::span<const uint32_t> spec, uint32_t tensor_bindings) {
  return impl_->pipelines->get(k, spec, tensor_bindings);
}

const Pipeline& Context::pipeline(const kernels::GeneratedKernel& k, uint32_t tensor_bindings) {
  return impl_->pipelines->get(k, tensor_bindings);
}

void Context::prepare_pipelines(std::span<const PipelineWant> wants) { impl_->pipelines->prepare(wants); }

void Context::save_pipeline_cache() { impl_->pipelines->save(); }

uint64_t Context::max_allocation_size() const { return impl_->probe.max_allocation_size; }

bool Context::device_addresses() const { return impl_->probe.device_address; }

void Context::wait(VkFence fence, std::string_view what) {
  const double s = fence_timeout_s();
  VkResult r = fault::device_lost(fault::Loss::AtWait);
  if (r == VK_SUCCESS) r = fault::hang() ? wait_as_hung(s) : poll_then_wait(device_, fence, impl_->spin, s);
  if (r == VK_TIMEOUT) {
    char secs[32];
    std::snprintf(secs, sizeof secs, "%g", s);
    throw DeviceError("the GPU did not finish " + std::string(what) + " within " + secs +
                      " s (a hang?); set MEGANEURA_TIMEOUT_S to wait longer. The session stays usable: its next "
                      "step first waits for this one again");
  }
  if (r == VK_ERROR_DEVICE_LOST) impl_->lost = true;
  check(r, r == VK_ERROR_DEVICE_LOST ? what : std::string_view("vkWaitForFences"));
}

void Context::submit(VkCommandBuffer cb, VkFence fence, bool& outstanding, std::string_view what) {
  if (impl_->lost)
    throw DeviceError("the GPU (" + info_.name + ") was lost earlier; " + std::string(what) +
                      " cannot run on it. Destroy this session and build a new one (it gets a new device)");
  catch_up(fence, outstanding, what);
  auto submit = init<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &cb;
  VkResult r = fault::device_lost(fault::Loss::AtSubmit);
  if (r == VK_SUCCESS) {
    std::lock_guard lock(impl_->queue_mutex);
    r = vkQueueSubmit(queue_, 1, &submit, fence);
  }
  if (r == VK_ERROR_DEVICE_LOST) impl_->lost = true;
  check(r, r == VK_ERROR_DEVICE_LOST ? what : std::string_view("vkQueueSubmit"));
  outstanding = true;
  wait(fence, what);
  outstanding = false;
  check(vkResetFences(device_, 1, &fence), "vkResetFences");
}

void Context::catch_up(VkFence fence, bool& outstanding, std::string_view what) {
  if (!outstanding) return;  // else an earlier submission timed out: it must be over before its fence is reused
  wait(fence, "the earlier work that timed out (before " + std::string(what) + ")");
  outstanding = false;
  check(vkResetFences(device_, 1, &fence), "vkResetFences");
}

bool Context::settle(VkFence fence, bool& outstanding) {
  if (!outstanding) return true;
  if (!settle_fence(device_, fence)) return false;
  outstanding = false;
  vkResetFences(device_, 1, &fence);  // ready for the next submission (if the fence is not destroyed)
  return true;
}

bool Context::transfer_settled() {
  std::lock_guard lock(impl_->once_mutex);
  return settle(impl_->once_fence, impl_->once_outstanding);
}

bool Context::lost() const { return impl_->lost; }

void Context::run_once(const std::function<void(VkCommandBuffer)>& fn) {
  std::lock_guard lock(impl_->once_mutex);
  VkCommandBuffer cb = impl_->once_cb;
  catch_up(impl_->once_fence, impl_->once_outstanding, "a transfer");  // before cb is reset
  // Resetting first also recovers from an earlier `fn` that threw half-way through recording.
  check(vkResetCommandBuffer(cb, 0), "vkResetCommandBuffer");
  auto begin = init<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check(vkBeginCommandBuffer(cb, &begin), "vkBeginCommandBuffer");
  leading_barrier(cb);
  fn(cb);
  check(vkEndCommandBuffer(cb), "vkEndCommandBuffer");
  submit(cb, impl_->once_fence, impl_->once_outstanding, "a transfer");
}

std::vector<std::string> Context::take_validation_messages() { return meganeura::take_validation_messages(); }

}  // namespace meganeura::vk
