// meganeura-coopmat2-probe: how fast a workgroup-scope GL_NV_cooperative_matrix2 matmul runs on
// this device, before the library builds on it (docs/performance.md, "Cooperative matrix 2").
//   meganeura-coopmat2-probe SHADER.spv BMxBNxBK[:VARIANT] ...
// SHADER is one of this folder's kernels compiled by the build (build/bench/coopmat2/*.spv).
// Prints what the device offers (the flexible dimensions and features of
// VK_NV_cooperative_matrix2), then a Markdown table: for each tile and product shape, the median
// GPU µs a product (timestamps around repeated dispatches), TFLOP/s and the largest error of 64
// sampled outputs against a double-precision reference. Random f16 operands in [-1, 1].
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "vulkan/vk_ext.hpp"

namespace {

template <class T>
T init(VkStructureType type) {  // a Vulkan struct, zeroed, with its type
  T t{};
  t.sType = type;
  return t;
}

void check(VkResult r, const char* what) {
  if (r == VK_SUCCESS) return;
  std::fprintf(stderr, "coopmat2-probe: %s failed (VkResult %d)\n", what, static_cast<int>(r));
  std::exit(1);
}

uint16_t to_half(float f) {  // round to nearest; the probe's values are normal
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u, mantissa = x & 0x7fffffu;
  const int exponent = static_cast<int>((x >> 23) & 0xffu) - 127 + 15;
  if (exponent <= 0) return static_cast<uint16_t>(sign);
  return static_cast<uint16_t>(sign | (static_cast<uint32_t>(exponent) << 10) | ((mantissa + 0x1000u) >> 13));
}

float from_half(uint16_t h) {
  const int exponent = (h >> 10) & 31, mantissa = h & 1023;
  const float v = exponent ? std::ldexp(1.0f + static_cast<float>(mantissa) / 1024.0f, exponent - 15)
                           : std::ldexp(static_cast<float>(mantissa) / 1024.0f, -14);
  return (h & 0x8000u) ? -v : v;
}

struct Buffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  void* mapped = nullptr;
};

struct Shape {
  uint32_t m, n, k;
  const char* what;
};

struct Tile {
  uint32_t bm, bn, bk;
  uint32_t variant;  // spec 4 of matmul_tensor_variants.comp (ignored by the others)
};

class Probe {
 public:
  Probe() {
    open_instance();
    describe();
    open_device();
  }

  Buffer buffer(VkDeviceSize bytes, VkBufferUsageFlags usage, VkMemoryPropertyFlags flags);
  void run(const std::function<void()>& record);
  void upload(const Buffer& dst, const Buffer& staging, const void* data, size_t bytes);
  VkPipeline pipeline(const std::vector<char>& spirv, const Tile& t);
  double time_us(VkPipeline pipe, const Shape& s, const Tile& t, int reps);
  // The storage buffers at bindings 0.., and `shape`, a host-visible uniform buffer at kBindings
  // that time_us fills with M, N, K (read by matmul_tensor_variants.comp's variant 32).
  void bind(const std::vector<Buffer>& buffers, const Buffer& shape);

  VkCommandBuffer cmd = VK_NULL_HANDLE;

 private:
  void open_instance();
  void describe();
  void open_device();

  VkInstance instance_ = VK_NULL_HANDLE;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  VkPhysicalDeviceMemoryProperties memory_{};
  float timestamp_ns_ = 1;
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  VkDescriptorSet set_ = VK_NULL_HANDLE;
  VkQueryPool queries_ = VK_NULL_HANDLE;
  uint32_t* shape_ = nullptr;  // the uniform buffer's M, N, K
};

constexpr size_t kMaxA = 4096ull * 8192, kMaxB = 16384ull * 8192, kMaxC = 4096ull * 16384;
constexpr int kBindings = 4;  // A, B, C and the exponents (read by the rescaled kernel only)

void Probe::open_instance() {
  auto app = init<VkApplicationInfo>(VK_STRUCTURE_TYPE_APPLICATION_INFO);
  app.apiVersion = VK_API_VERSION_1_3;
  auto info = init<VkInstanceCreateInfo>(VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO);
  info.pApplicationInfo = &app;
  check(vkCreateInstance(&info, nullptr, &instance_), "vkCreateInstance");
  uint32_t count = 0;
  vkEnumeratePhysicalDevices(instance_, &count, nullptr);
  if (count == 0) check(VK_ERROR_INITIALIZATION_FAILED, "finding a Vulkan device");
  std::vector<VkPhysicalDevice> all(count);
  vkEnumeratePhysicalDevices(instance_, &count, all.data());
  physical_ = all[0];
  VkPhysicalDeviceProperties props;
  vkGetPhysicalDeviceProperties(physical_, &props);
  timestamp_ns_ = props.limits.timestampPeriod;
  vkGetPhysicalDeviceMemoryProperties(physical_, &memory_);
  std::printf("device: %s\n", props.deviceName);
}

void Probe::describe() {
  auto flexible = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV>(
      vkGetInstanceProcAddr(instance_, "vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV"));
  if (!flexible) check(VK_ERROR_EXTENSION_NOT_PRESENT, "VK_NV_cooperative_matrix2");
  uint32_t count = 0;
  flexible(physical_, &count, nullptr);
  std::vector<VkCooperativeMatrixFlexibleDimensionsPropertiesNV> dims(
      count, init<VkCooperativeMatrixFlexibleDimensionsPropertiesNV>(
                 VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_FLEXIBLE_DIMENSIONS_PROPERTIES_NV));
  flexible(physical_, &count, dims.data());
  for (const auto& d : dims)  // component types as VkComponentTypeKHR numbers (0 f16, 1 f32, 1000141000 bf16)
    std::printf("flexible: M %u N %u K %u granules, A %d B %d C %d result %d, scope %d, %u invocations\n",
                d.MGranularity, d.NGranularity, d.KGranularity, d.AType, d.BType, d.CType, d.ResultType, d.scope,
                d.workgroupInvocations);
}

void Probe::open_device() {
  auto coop2 = init<VkPhysicalDeviceCooperativeMatrix2FeaturesNV>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV);
  auto coop = init<VkPhysicalDeviceCooperativeMatrixFeaturesKHR>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR);
  coop.pNext = &coop2;
  auto v13 = init<VkPhysicalDeviceVulkan13Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES);
  v13.pNext = &coop;
  auto v12 = init<VkPhysicalDeviceVulkan12Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES);
  v12.pNext = &v13;
  auto v11 = init<VkPhysicalDeviceVulkan11Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES);
  v11.pNext = &v12;
  auto features = init<VkPhysicalDeviceFeatures2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2);
  features.pNext = &v11;
  vkGetPhysicalDeviceFeatures2(physical_, &features);  // every feature offered is enabled
  std::printf("features: workgroup scope %u, flexible dimensions %u, tensor addressing %u, per-element %u\n",
              coop2.cooperativeMatrixWorkgroupScope, coop2.cooperativeMatrixFlexibleDimensions,
              coop2.cooperativeMatrixTensorAddressing, coop2.cooperativeMatrixPerElementOperations);
  const float priority = 1;
  auto queue = init<VkDeviceQueueCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO);
  queue.queueCount = 1;
  queue.pQueuePriorities = &priority;
  const char* extensions[] = {VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME, VK_NV_COOPERATIVE_MATRIX_2_EXTENSION_NAME};
  auto info = init<VkDeviceCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO);
  info.pNext = &features;
  info.queueCreateInfoCount = 1;
  info.pQueueCreateInfos = &queue;
  info.enabledExtensionCount = 2;
  info.ppEnabledExtensionNames = extensions;
  check(vkCreateDevice(physical_, &info, nullptr, &device_), "vkCreateDevice");
  vkGetDeviceQueue(device_, 0, 0, &queue_);

  std::vector<VkDescriptorSetLayoutBinding> bindings;
  for (uint32_t i = 0; i < kBindings; ++i)
    bindings.push_back({i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr});
  bindings.push_back({kBindings, VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr});
  auto set_info = init<VkDescriptorSetLayoutCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO);
  set_info.bindingCount = kBindings + 1;
  set_info.pBindings = bindings.data();
  check(vkCreateDescriptorSetLayout(device_, &set_info, nullptr, &set_layout_), "vkCreateDescriptorSetLayout");
  const VkPushConstantRange shape{VK_SHADER_STAGE_COMPUTE_BIT, 0, 16};  // M, N, K, B's first element
  auto layout_info = init<VkPipelineLayoutCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO);
  layout_info.setLayoutCount = 1;
  layout_info.pSetLayouts = &set_layout_;
  layout_info.pushConstantRangeCount = 1;
  layout_info.pPushConstantRanges = &shape;
  check(vkCreatePipelineLayout(device_, &layout_info, nullptr, &layout_), "vkCreatePipelineLayout");
  const VkDescriptorPoolSize sizes[2] = {{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kBindings},
                                         {VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, 1}};
  auto pool_info = init<VkDescriptorPoolCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO);
  pool_info.maxSets = 1;
  pool_info.poolSizeCount = 2;
  pool_info.pPoolSizes = sizes;
  VkDescriptorPool pool;
  check(vkCreateDescriptorPool(device_, &pool_info, nullptr, &pool), "vkCreateDescriptorPool");
  auto set_alloc = init<VkDescriptorSetAllocateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO);
  set_alloc.descriptorPool = pool;
  set_alloc.descriptorSetCount = 1;
  set_alloc.pSetLayouts = &set_layout_;
  check(vkAllocateDescriptorSets(device_, &set_alloc, &set_), "vkAllocateDescriptorSets");
  auto cmd_pool_info = init<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
  cmd_pool_info.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  VkCommandPool cmd_pool;
  check(vkCreateCommandPool(device_, &cmd_pool_info, nullptr, &cmd_pool), "vkCreateCommandPool");
  auto cmd_info = init<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
  cmd_info.commandPool = cmd_pool;
  cmd_info.commandBufferCount = 1;
  check(vkAllocateCommandBuffers(device_, &cmd_info, &cmd), "vkAllocateCommandBuffers");
  auto query_info = init<VkQueryPoolCreateInfo>(VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO);
  query_info.queryType = VK_QUERY_TYPE_TIMESTAMP;
  query_info.queryCount = 2;
  check(vkCreateQueryPool(device_, &query_info, nullptr, &queries_), "vkCreateQueryPool");
}

Buffer Probe::buffer(VkDeviceSize bytes, VkBufferUsageFlags usage, VkMemoryPropertyFlags flags) {
  Buffer b;
  auto info = init<VkBufferCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO);
  info.size = bytes;
  info.usage = usage;
  check(vkCreateBuffer(device_, &info, nullptr, &b.buffer), "vkCreateBuffer");
  VkMemoryRequirements needs;
  vkGetBufferMemoryRequirements(device_, b.buffer, &needs);
  uint32_t type = 0;
  while (type < memory_.memoryTypeCount &&
         !((needs.memoryTypeBits >> type & 1u) && (memory_.memoryTypes[type].propertyFlags & flags) == flags))
    ++type;
  auto alloc = init<VkMemoryAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO);
  alloc.allocationSize = needs.size;
  alloc.memoryTypeIndex = type;
  check(vkAllocateMemory(device_, &alloc, nullptr, &b.memory), "vkAllocateMemory");
  check(vkBindBufferMemory(device_, b.buffer, b.memory, 0), "vkBindBufferMemory");
  if (flags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) check(vkMapMemory(device_, b.memory, 0, bytes, 0, &b.mapped), "map");
  return b;
}

void Probe::run(const std::function<void()>& record) {
  auto begin = init<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
  check(vkBeginCommandBuffer(cmd, &begin), "vkBeginCommandBuffer");
  record();
  check(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
  auto submit = init<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &cmd;
  check(vkQueueSubmit(queue_, 1, &submit, VK_NULL_HANDLE), "vkQueueSubmit");
  check(vkQueueWaitIdle(queue_), "vkQueueWaitIdle");
}

void Probe::upload(const Buffer& dst, const Buffer& staging, const void* data, size_t bytes) {
  std::memcpy(staging.mapped, data, bytes);
  run([&] {
    const VkBufferCopy region{0, 0, bytes};
    vkCmdCopyBuffer(cmd, staging.buffer, dst.buffer, 1, &region);
  });
}

void Probe::bind(const std::vector<Buffer>& buffers, const Buffer& shape) {
  std::vector<VkDescriptorBufferInfo> infos;
  for (const Buffer& b : buffers) infos.push_back({b.buffer, 0, VK_WHOLE_SIZE});
  infos.push_back({shape.buffer, 0, VK_WHOLE_SIZE});
  std::vector<VkWriteDescriptorSet> writes(infos.size(),
                                           init<VkWriteDescriptorSet>(VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET));
  for (size_t i = 0; i < infos.size(); ++i) {
    writes[i].dstSet = set_;
    writes[i].dstBinding = static_cast<uint32_t>(i);
    writes[i].descriptorCount = 1;
    writes[i].descriptorType =
        i < buffers.size() ? VK_DESCRIPTOR_TYPE_STORAGE_BUFFER : VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER;
    writes[i].pBufferInfo = &infos[i];
  }
  shape_ = static_cast<uint32_t*>(shape.mapped);
  vkUpdateDescriptorSets(device_, static_cast<uint32_t>(writes.size()), writes.data(), 0, nullptr);
}

// The tile's pipeline, or VK_NULL_HANDLE where the driver refuses it (a size it does not take).
VkPipeline Probe::pipeline(const std::vector<char>& spirv, const Tile& t) {
  auto module_info = init<VkShaderModuleCreateInfo>(VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO);
  module_info.codeSize = spirv.size();
  module_info.pCode = reinterpret_cast<const uint32_t*>(spirv.data());
  VkShaderModule module;
  check(vkCreateShaderModule(device_, &module_info, nullptr, &module), "vkCreateShaderModule");
  const uint32_t tile[5] = {t.bm, t.bn, t.bk, t.variant, 256};  // constant 0: a kernel's workgroup size
  const VkSpecializationMapEntry entries[5] = {{1, 0, 4}, {2, 4, 4}, {3, 8, 4}, {4, 12, 4}, {0, 16, 4}};
  const VkSpecializationInfo spec{5, entries, sizeof tile, tile};
  auto info = init<VkComputePipelineCreateInfo>(VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO);
  info.stage = init<VkPipelineShaderStageCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO);
  info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  info.stage.module = module;
  info.stage.pName = "main";
  info.stage.pSpecializationInfo = &spec;
  info.layout = layout_;
  VkPipeline pipe = VK_NULL_HANDLE;
  if (vkCreateComputePipelines(device_, VK_NULL_HANDLE, 1, &info, nullptr, &pipe) != VK_SUCCESS) pipe = VK_NULL_HANDLE;
  vkDestroyShaderModule(device_, module, nullptr);
  return pipe;
}

// Median over 5 submissions of the GPU µs a product takes, `reps` products a submission.
double Probe::time_us(VkPipeline pipe, const Shape& s, const Tile& t, int reps) {
  uint32_t shape[4] = {s.m, s.n, s.k, 0};
  std::memcpy(shape_, shape, 12);  // the uniform copy (host-coherent: seen by the next submission)
  const uint64_t b_elements = uint64_t{s.n} * s.k, slices = std::max<uint64_t>(kMaxB / b_elements, 1);
  std::vector<double> us;
  for (int round = 0; round < 5; ++round) {
    run([&] {
      vkCmdResetQueryPool(cmd, queries_, 0, 2);
      vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
      vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout_, 0, 1, &set_, 0, nullptr);
      vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, queries_, 0);
      for (int i = 0; i < reps; ++i) {
        // B from another slice of its buffer each time (the last at 0, which max_error checks), as
        // a model's layers read weights that are not in L2; kernels that do not read it ignore it.
        shape[3] = static_cast<uint32_t>((reps - 1 - i) % slices * b_elements);
        vkCmdPushConstants(cmd, layout_, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof shape, shape);
        vkCmdDispatch(cmd, (s.n + t.bn - 1) / t.bn, (s.m + t.bm - 1) / t.bm, 1);
        auto barrier = init<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
        barrier.srcAccessMask = barrier.dstAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
        vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1,
                             &barrier, 0, nullptr, 0, nullptr);
      }
      vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries_, 1);
    });
    uint64_t stamps[2];
    check(vkGetQueryPoolResults(device_, queries_, 0, 2, sizeof stamps, stamps, 8,
                                VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
          "vkGetQueryPoolResults");
    us.push_back(static_cast<double>(stamps[1] - stamps[0]) * timestamp_ns_ / 1000.0 / reps);
  }
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

// The SmolLM2-1.7B shape's products at 1 x 128 and 8 x 512 tokens, and 4096³.
const Shape kShapes[] = {
    {4096, 4096, 4096, "4096³"},    {128, 6144, 2048, "q/k/v, 128 tokens"},  {128, 16384, 2048, "gate/up, 128"},
    {128, 2048, 8192, "down, 128"}, {4096, 16384, 2048, "gate/up, 8 x 512"}, {4096, 2048, 8192, "down, 8 x 512"}};

double max_error(const std::vector<uint16_t>& a, const std::vector<uint16_t>& b, const float* c, const Shape& s) {
  double worst = 0;
  for (uint32_t i = 0; i < 64; ++i) {
    const uint32_t m = (i * 977u) % s.m, n = (i * 7919u) % s.n;
    double want = 0;
    for (uint32_t k = 0; k < s.k; ++k)
      want += double(from_half(a[size_t(m) * s.k + k])) * from_half(b[size_t(n) * s.k + k]);
    worst = std::max(worst, std::fabs(c[size_t(m) * s.n + n] - want));
  }
  return worst;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: meganeura-coopmat2-probe SHADER.spv BMxBNxBK[:VARIANT] ...\n");
    return 2;
  }
  std::ifstream file(argv[1], std::ios::binary);
  const std::vector<char> spirv((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (spirv.empty()) {
    std::fprintf(stderr, "coopmat2-probe: cannot read %s\n", argv[1]);
    return 1;
  }
  Probe probe;
  const VkBufferUsageFlags use =
      VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT;
  const Buffer a = probe.buffer(kMaxA * 2, use, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  const Buffer b = probe.buffer(kMaxB * 2, use, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  const Buffer c = probe.buffer(kMaxC * 4, use, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  const Buffer exponents = probe.buffer(4u << 20, use, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  const Buffer host =
      probe.buffer(kMaxC * 4, use, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> uniform(-1, 1);
  std::vector<uint16_t> ha(kMaxA), hb(kMaxB);
  for (uint16_t& x : ha) x = to_half(uniform(rng));
  for (uint16_t& x : hb) x = to_half(uniform(rng));
  probe.upload(a, host, ha.data(), kMaxA * 2);
  probe.upload(b, host, hb.data(), kMaxB * 2);
  const std::vector<int32_t> zero_exponents(1u << 20, 0);  // every block at 2^0: results as unscaled
  probe.upload(exponents, host, zero_exponents.data(), 4u << 20);
  const Buffer shape = probe.buffer(256, VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT,
                                    VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
  probe.bind({a, b, c, exponents}, shape);

  std::printf("| product | tile | µs | TFLOP/s | max error |\n|---|---|---:|---:|---:|\n");
  for (int i = 2; i < argc; ++i) {
    Tile t{};
    if (std::sscanf(argv[i], "%ux%ux%u:%u", &t.bm, &t.bn, &t.bk, &t.variant) < 3) {
      std::fprintf(stderr, "coopmat2-probe: '%s' is not BMxBNxBK[:VARIANT]\n", argv[i]);
      return 2;
    }
    const VkPipeline pipe = probe.pipeline(spirv, t);
    if (!pipe) {
      std::printf("| - | %ux%ux%u:%u | refused by the driver | | |\n", t.bm, t.bn, t.bk, t.variant);
      continue;
    }
    probe.time_us(pipe, kShapes[0], t, 2);  // warm-up: clocks up before the first figure
    for (const Shape& s : kShapes) {
      const double flop = 2.0 * s.m * s.n * s.k, us = probe.time_us(pipe, s, t, flop > 1e11 ? 10 : 50);
      probe.run([&] {
        const VkBufferCopy region{0, 0, size_t(s.m) * s.n * 4};
        vkCmdCopyBuffer(probe.cmd, c.buffer, host.buffer, 1, &region);
      });
      std::printf("| %s | %ux%ux%u:%u | %.1f | %.1f | %.2g |\n", s.what, t.bm, t.bn, t.bk, t.variant, us,
                  flop / us / 1e6, max_error(ha, hb, static_cast<const float*>(host.mapped), s));
      std::fflush(stdout);
    }
  }
  return 0;
}
