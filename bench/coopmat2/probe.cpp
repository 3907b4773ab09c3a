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
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "probe_vk.hpp"

namespace {

using probe::Buffer;
using probe::check;
using probe::init;

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
  Probe() : q(probe::Queue::first_device()) {
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(q.physical, &props);
    std::printf("device: %s\n", props.deviceName);
    describe();
    open_device();
  }

  Buffer buffer(VkDeviceSize bytes, VkBufferUsageFlags usage, VkMemoryPropertyFlags flags) const {
    return q.buffer(bytes, usage, flags);
  }
  void run(const std::function<void()>& record) const { q.run(record); }
  void upload(const Buffer& dst, const Buffer& staging, const void* data, size_t bytes);
  VkPipeline pipeline(const std::vector<char>& spirv, const Tile& t);
  double time_us(VkPipeline pipe, const Shape& s, const Tile& t, int reps);
  // The storage buffers at bindings 0.., and `shape`, a host-visible uniform buffer at kBindings
  // that time_us fills with M, N, K (read by matmul_tensor_variants.comp's variant 32).
  void bind(const std::vector<Buffer>& buffers, const Buffer& shape);

  probe::Queue q;
  const VkCommandBuffer& cmd = q.cmd;

 private:
  void describe();
  void open_device();

  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  VkDescriptorSet set_ = VK_NULL_HANDLE;
  uint32_t* shape_ = nullptr;  // the uniform buffer's M, N, K
};

constexpr size_t kMaxA = 4096ull * 8192, kMaxB = 16384ull * 8192, kMaxC = 4096ull * 16384;
constexpr int kBindings = 4;  // A, B, C and the exponents (read by the rescaled kernel only)

void Probe::describe() {
  auto flexible = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV>(
      vkGetInstanceProcAddr(q.instance, "vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV"));
  if (!flexible) check(VK_ERROR_EXTENSION_NOT_PRESENT, "VK_NV_cooperative_matrix2");
  uint32_t count = 0;
  flexible(q.physical, &count, nullptr);
  std::vector<VkCooperativeMatrixFlexibleDimensionsPropertiesNV> dims(
      count, init<VkCooperativeMatrixFlexibleDimensionsPropertiesNV>(
                 VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_FLEXIBLE_DIMENSIONS_PROPERTIES_NV));
  flexible(q.physical, &count, dims.data());
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
  vkGetPhysicalDeviceFeatures2(q.physical, &features);  // every feature offered is enabled
  std::printf("features: workgroup scope %u, flexible dimensions %u, tensor addressing %u, per-element %u\n",
              coop2.cooperativeMatrixWorkgroupScope, coop2.cooperativeMatrixFlexibleDimensions,
              coop2.cooperativeMatrixTensorAddressing, coop2.cooperativeMatrixPerElementOperations);
  q.open(&features, {VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME, VK_NV_COOPERATIVE_MATRIX_2_EXTENSION_NAME});

  std::vector<VkDescriptorType> types(kBindings, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER);
  types.push_back(VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER);  // M, N, K for variant 32
  const probe::Bindings b = q.bindings(types, 16);     // push constants: M, N, K, B's first element
  layout_ = b.layout;
  set_ = b.set;
}

void Probe::upload(const Buffer& dst, const Buffer& staging, const void* data, size_t bytes) {
  std::memcpy(staging.mapped, data, bytes);
  run([&] {
    const VkBufferCopy region{0, 0, bytes};
    vkCmdCopyBuffer(cmd, staging.buffer, dst.buffer, 1, &region);
  });
}

void Probe::bind(const std::vector<Buffer>& buffers, const Buffer& shape) {
  std::vector<Buffer> all = buffers;
  all.push_back(shape);
  std::vector<VkDescriptorType> types(buffers.size(), VK_DESCRIPTOR_TYPE_STORAGE_BUFFER);
  types.push_back(VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER);
  q.bind(set_, all, types);
  shape_ = static_cast<uint32_t*>(shape.mapped);
}

// The tile's pipeline, or VK_NULL_HANDLE where the driver refuses it (a size it does not take).
VkPipeline Probe::pipeline(const std::vector<char>& spirv, const Tile& t) {
  // Constant 0 is a kernel's workgroup size.
  return q.pipeline(spirv, layout_, {{1, t.bm}, {2, t.bn}, {3, t.bk}, {4, t.variant}, {0, 256}});
}

// Median over 5 submissions of the GPU µs a product takes, `reps` products a submission.
double Probe::time_us(VkPipeline pipe, const Shape& s, const Tile& t, int reps) {
  uint32_t shape[4] = {s.m, s.n, s.k, 0};
  std::memcpy(shape_, shape, 12);  // the uniform copy (host-coherent: seen by the next submission)
  const uint64_t b_elements = uint64_t{s.n} * s.k, slices = std::max<uint64_t>(kMaxB / b_elements, 1);
  return q.median_us(5, [&] {
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
    vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout_, 0, 1, &set_, 0, nullptr);
    for (int i = 0; i < reps; ++i) {
      // B from another slice of its buffer each time (the last at 0, which max_error checks),
      // as a model's layers read weights that are not in L2; kernels that do not read it
      // ignore it.
      shape[3] = static_cast<uint32_t>((reps - 1 - i) % slices * b_elements);
      vkCmdPushConstants(cmd, layout_, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof shape, shape);
      vkCmdDispatch(cmd, (s.n + t.bn - 1) / t.bn, (s.m + t.bm - 1) / t.bm, 1);
      auto barrier = init<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
      barrier.srcAccessMask = barrier.dstAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
      vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1,
                           &barrier, 0, nullptr, 0, nullptr);
    }
  }) / reps;
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
  const std::vector<char> spirv = probe::read_spirv(argc, argv, 3, "SHADER.spv BMxBNxBK[:VARIANT] ...");
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
