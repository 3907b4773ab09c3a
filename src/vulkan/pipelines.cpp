#include "vulkan/pipelines.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <exception>
#include <set>
#include <string>
#include <thread>

#include "kernels/generated_kernel.hpp"
#include "kernels/spirv.hpp"
#include "meganeura/error.hpp"
#include "vulkan/fault.hpp"
#include "vulkan/util.hpp"

namespace meganeura::vk {

namespace {
constexpr uint32_t kFixedBindings = 2;  // 0: params, 1: status (kernels/kernel_abi.hpp)
}

PipelineCache::PipelineCache(const Context& ctx, const VkPhysicalDeviceProperties& props, VkDescriptorType params,
                             bool statistics)
    : ctx_(ctx), device_(ctx.device()), params_(params), statistics_(statistics), file_(props) {
  const std::vector<std::byte> saved = file_.load();  // empty unless made by this device and driver
  auto info = init<VkPipelineCacheCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO);
  info.initialDataSize = saved.size();
  info.pInitialData = saved.empty() ? nullptr : saved.data();
  if (vkCreatePipelineCache(device_, &info, nullptr, &cache_) == VK_SUCCESS) return;
  info.initialDataSize = 0;  // the driver refused the saved data: start empty
  info.pInitialData = nullptr;
  check(vkCreatePipelineCache(device_, &info, nullptr, &cache_), "vkCreatePipelineCache");
}

PipelineCache::~PipelineCache() {
  for (auto& [key, p] : pipelines_) vkDestroyPipeline(device_, p.pipeline, nullptr);
  for (auto& [n, l] : layouts_) {
    vkDestroyPipelineLayout(device_, l.pipeline, nullptr);
    vkDestroyDescriptorSetLayout(device_, l.set, nullptr);
  }
  for (VkShaderModule m : modules_) vkDestroyShaderModule(device_, m, nullptr);
  for (auto& [source, m] : generated_modules_) vkDestroyShaderModule(device_, m, nullptr);
  vkDestroyPipelineCache(device_, cache_, nullptr);
}

const PipelineCache::Layout& PipelineCache::layout(uint32_t tensor_bindings, std::string_view name) {
  // More buffers than the device binds to one stage (few on some mobile GPUs) would fail the
  // layout, or the pipeline, without saying why.
  const VkPhysicalDeviceLimits& limits = ctx_.limits();
  const uint32_t total = kFixedBindings + tensor_bindings;
  const uint32_t storage = total - (params_ == VK_DESCRIPTOR_TYPE_STORAGE_BUFFER ? 0 : 1);
  const uint32_t per_stage = fault::storage_buffer_limit(limits.maxPerStageDescriptorStorageBuffers);
  if (storage > std::min(per_stage, limits.maxDescriptorSetStorageBuffers) || total > limits.maxPerStageResources)
    throw DeviceError("kernel " + std::string(name) + " binds " + std::to_string(storage) + " storage buffers (" +
                      std::to_string(total) + " resources), more than " + ctx_.info().name +
                      " allows a compute stage (maxPerStageDescriptorStorageBuffers " + std::to_string(per_stage) +
                      ", maxDescriptorSetStorageBuffers " + std::to_string(limits.maxDescriptorSetStorageBuffers) +
                      ", maxPerStageResources " + std::to_string(limits.maxPerStageResources) + ")");
  auto it = layouts_.find(tensor_bindings);
  if (it != layouts_.end()) return it->second;
  std::vector<VkDescriptorSetLayoutBinding> bindings(total);
  for (uint32_t i = 0; i < bindings.size(); ++i) {
    bindings[i].binding = i;
    bindings[i].descriptorType = i == 0 ? params_ : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    bindings[i].descriptorCount = 1;
    bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  Layout l;
  auto set_info = init<VkDescriptorSetLayoutCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO);
  set_info.bindingCount = static_cast<uint32_t>(bindings.size());
  set_info.pBindings = bindings.data();
  ctx_.check_allocation(
      fault::allocate([&] { return vkCreateDescriptorSetLayout(device_, &set_info, nullptr, &l.set); }),
      "a descriptor set layout");
  auto info = init<VkPipelineLayoutCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO);
  info.setLayoutCount = 1;
  info.pSetLayouts = &l.set;
  VkResult r = fault::allocate([&] { return vkCreatePipelineLayout(device_, &info, nullptr, &l.pipeline); });
  if (r != VK_SUCCESS) vkDestroyDescriptorSetLayout(device_, l.set, nullptr);
  ctx_.check_allocation(r, "a pipeline layout");
  return layouts_.emplace(tensor_bindings, l).first->second;
}

void PipelineCache::print_statistics(VkPipeline p, std::string_view name, std::span<const uint32_t> spec) const {
  auto properties = reinterpret_cast<PFN_vkGetPipelineExecutablePropertiesKHR>(
      vkGetDeviceProcAddr(device_, "vkGetPipelineExecutablePropertiesKHR"));
  auto statistics = reinterpret_cast<PFN_vkGetPipelineExecutableStatisticsKHR>(
      vkGetDeviceProcAddr(device_, "vkGetPipelineExecutableStatisticsKHR"));
  if (!properties || !statistics) return;
  std::string line = "meganeura: pipeline " + std::string(name) + " spec [";
  for (size_t i = 0; i < spec.size(); ++i) line.append(i ? " " : "").append(std::to_string(spec[i]));
  line += "]";
  auto pipeline_info = init<VkPipelineInfoKHR>(VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR);
  pipeline_info.pipeline = p;
  uint32_t executables = 0;
  if (properties(device_, &pipeline_info, &executables, nullptr) != VK_SUCCESS) return;
  for (uint32_t e = 0; e < executables; ++e) {
    auto exec = init<VkPipelineExecutableInfoKHR>(VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR);
    exec.pipeline = p;
    exec.executableIndex = e;
    uint32_t count = 0;
    if (statistics(device_, &exec, &count, nullptr) != VK_SUCCESS) continue;
    std::vector<VkPipelineExecutableStatisticKHR> stats(count);
    for (auto& s : stats)
      s = init<VkPipelineExecutableStatisticKHR>(VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR);
    if (statistics(device_, &exec, &count, stats.data()) != VK_SUCCESS) continue;
    for (const auto& s : stats) {
      line += std::string(" | ") + s.name + " ";
      switch (s.format) {
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: line += s.value.b32 ? "true" : "false"; break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: line += std::to_string(s.value.i64); break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR: line += std::to_string(s.value.u64); break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR: line += std::to_string(s.value.f64); break;
        default: line += "?";
      }
    }
  }
  std::fprintf(stderr, "%s\n", line.c_str());
}

VkShaderModule PipelineCache::create_module(std::span<const uint32_t> code, std::string_view name) {
  std::vector<uint32_t> rewritten;
  if (params_ == VK_DESCRIPTOR_TYPE_STORAGE_BUFFER) {
    rewritten = kernels::params_as_storage(code, name);
    code = rewritten;
  }
  auto info = init<VkShaderModuleCreateInfo>(VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO);
  info.codeSize = code.size_bytes();
  info.pCode = code.data();
  VkShaderModule m = VK_NULL_HANDLE;
  ctx_.check_allocation(fault::allocate([&] { return vkCreateShaderModule(device_, &info, nullptr, &m); }),
                        "the shader module of " + std::string(name));
  return m;
}

VkShaderModule PipelineCache::module(kernels::Kernel k) {
  VkShaderModule& m = modules_.at(static_cast<size_t>(k));
  if (m) return m;
  std::span<const uint32_t> code = kernels::spirv(k);
  if (code.empty())
    throw DeviceError("no SPIR-V was built for the " + std::string(kernels::kernel_name(k)) + " kernel");
  m = create_module(code, kernels::kernel_name(k));
  return m;
}

const Pipeline& PipelineCache::get(kernels::Kernel k, std::span<const uint32_t> spec, uint32_t tensor_bindings) {
  std::lock_guard lock(mutex_);
  return pipeline(module(k), kernels::kernel_name(k), spec, tensor_bindings);
}

VkShaderModule PipelineCache::module(const kernels::GeneratedKernel& k) {
  VkShaderModule& m = generated_modules_[k.source];
  if (!m) {
    try {
      m = create_module(kernels::generated_spirv(k), k.name);
    } catch (...) {
      generated_modules_.erase(k.source);
      throw;
    }
  }
  return m;
}

const Pipeline& PipelineCache::get(const kernels::GeneratedKernel& k, uint32_t tensor_bindings) {
  std::lock_guard lock(mutex_);
  return pipeline(module(k), k.name, {}, tensor_bindings);
}

void PipelineCache::save() {
  std::lock_guard lock(mutex_);
  if (!unsaved_) return;
  size_t size = 0;
  check(vkGetPipelineCacheData(device_, cache_, &size, nullptr), "vkGetPipelineCacheData");
  std::vector<std::byte> data(size);
  check(vkGetPipelineCacheData(device_, cache_, &size, data.data()), "vkGetPipelineCacheData");
  data.resize(size);
  file_.save(data);
  unsaved_ = false;
}

VkPipeline PipelineCache::create(VkShaderModule module, std::string_view name, std::span<const uint32_t> spec,
                                 VkPipelineLayout layout) {
  // Constant 0 is the workgroup size (local_size_x_id = 0); constants 1.. are the kernel's.
  std::vector<uint32_t> values{kernels::kWorkgroupSize};
  values.insert(values.end(), spec.begin(), spec.end());
  std::vector<VkSpecializationMapEntry> entries(values.size());
  for (uint32_t i = 0; i < entries.size(); ++i) entries[i] = {i, i * uint32_t(sizeof(uint32_t)), sizeof(uint32_t)};
  VkSpecializationInfo spec_info{static_cast<uint32_t>(entries.size()), entries.data(),
                                 values.size() * sizeof(uint32_t), values.data()};

  auto info = init<VkComputePipelineCreateInfo>(VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO);
  info.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  info.stage.module = module;
  info.stage.pName = "main";
  info.stage.pSpecializationInfo = &spec_info;
  info.layout = layout;
  if (statistics_) info.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
  VkPipeline p = VK_NULL_HANDLE;
  ctx_.check_allocation(
      fault::allocate([&] { return vkCreateComputePipelines(device_, cache_, 1, &info, nullptr, &p); }),
      "the pipeline of " + std::string(name));
  if (statistics_) print_statistics(p, name, spec);
  return p;
}

const Pipeline& PipelineCache::pipeline(VkShaderModule module, std::string_view name, std::span<const uint32_t> spec,
                                        uint32_t tensor_bindings) {
  Key key{module, std::vector<uint32_t>(spec.begin(), spec.end()), tensor_bindings};
  if (auto it = pipelines_.find(key); it != pipelines_.end()) return it->second;
  const Layout& l = layout(tensor_bindings, name);
  Pipeline p{create(module, name, spec, l.pipeline), l.pipeline, l.set, tensor_bindings};
  unsaved_ = true;
  return pipelines_.emplace(std::move(key), p).first->second;
}

void PipelineCache::prepare(std::span<const PipelineWant> wants) {
  struct Job {
    Key key;
    std::string name;
    Layout layout;
    VkPipeline made = VK_NULL_HANDLE;
    std::exception_ptr error;
  };
  std::vector<Job> jobs;
  {
    std::lock_guard lock(mutex_);
    std::set<Key> queued;
    for (const PipelineWant& w : wants) {
      // Generated kernels compile here, serially: the shader compiler runs one source at a time.
      const VkShaderModule m = w.generated ? module(*w.generated) : module(w.kernel);
      std::string name = w.generated ? w.generated->name : std::string(kernels::kernel_name(w.kernel));
      Key key{m, w.generated ? std::vector<uint32_t>{} : std::vector<uint32_t>(w.spec.begin(), w.spec.end()),
              w.tensor_bindings};
      if (pipelines_.count(key) || !queued.insert(key).second) continue;
      const Layout& l = layout(w.tensor_bindings, name);
      jobs.push_back({std::move(key), std::move(name), l, VK_NULL_HANDLE, nullptr});
    }
  }
  if (jobs.empty()) return;
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next++) < jobs.size();) {
      Job& j = jobs[i];
      try {
        j.made = create(std::get<0>(j.key), j.name, std::get<1>(j.key), j.layout.pipeline);
      } catch (...) {
        j.error = std::current_exception();
      }
    }
  };
  const size_t threads = std::min<size_t>({jobs.size(), std::max(1u, std::thread::hardware_concurrency()), 16});
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  std::exception_ptr first_error;
  std::lock_guard lock(mutex_);
  for (Job& j : jobs) {
    if (j.error && !first_error) first_error = j.error;
    if (!j.made) continue;
    unsaved_ = true;
    auto [it, inserted] =
        pipelines_.emplace(j.key, Pipeline{j.made, j.layout.pipeline, j.layout.set, std::get<2>(j.key)});
    if (!inserted) vkDestroyPipeline(device_, j.made, nullptr);  // another thread made it meanwhile
  }
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace meganeura::vk
