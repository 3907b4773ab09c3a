// meganeura-sync-probe: what it costs to order a decoding step's phases on this device — one
// dispatch a phase behind a pipeline barrier (how programs run today), the same dispatches with
// no barrier (wrong results; the launch cost alone) or chained by device-memory counters, and one
// persistent dispatch whose workgroups meet at a grid barrier between phases
// (docs/performance.md, "Persistent decoding: what a phase costs").
//   meganeura-sync-probe SHADER.spv [SMS [quick]]
// SHADER is build/bench/sync/gemv_phases.spv; SMS the device's multiprocessors where the driver
// does not report them (VK_NV_shader_sm_builtins); `quick` runs two layers (lavapipe). Prints a Markdown table: for
// each chain of phases (GEMVs of SmolLM2-135M's and the 1.7B shape's decoding step, and empty phases), the median GPU
// µs of the chain and a phase in each mode.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "probe_vk.hpp"

namespace {

using probe::Buffer;
using probe::check;
using probe::init;

struct Phase {
  uint32_t k, n, w_at, pad;  // as gemv_phases.comp's
};

struct Chain {
  std::string what;
  std::vector<Phase> phases;
  uint64_t weight_bytes = 0;
};

struct Push {
  uint32_t first, count, grid, timeout_at;
};

constexpr uint32_t kMaxPhases = 4096;
constexpr uint64_t kWeightBytes = uint64_t{3} << 30;  // 3 GiB: more layers than L2 holds

class Device {
 public:
  Device();
  VkPipeline pipeline(const std::vector<char>& spirv, uint32_t persistent, uint32_t prefetch);

  probe::Queue q;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkDescriptorSet set = VK_NULL_HANDLE;
  uint32_t sms = 0;
};

Device::Device() : q(probe::Queue::first_device()) {
  auto sm = init<VkPhysicalDeviceShaderSMBuiltinsPropertiesNV>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV);
  auto props = init<VkPhysicalDeviceProperties2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2);
  props.pNext = &sm;
  vkGetPhysicalDeviceProperties2(q.physical, &props);
  sms = sm.shaderSMCount;
  std::printf("device: %s, %u SMs reported\n", props.properties.deviceName, sms);
  auto v12 = init<VkPhysicalDeviceVulkan12Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES);
  v12.vulkanMemoryModel = v12.vulkanMemoryModelDeviceScope = VK_TRUE;  // gemv_phases_vmm.spv
  q.open(&v12, {});

  const probe::Bindings b =
      q.bindings(std::vector<VkDescriptorType>(4, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER), sizeof(Push));
  layout = b.layout;
  set = b.set;
}

VkPipeline Device::pipeline(const std::vector<char>& spirv, uint32_t persistent, uint32_t prefetch) {
  const VkPipeline pipe = q.pipeline(spirv, layout, {{1, persistent}, {2, prefetch}});
  if (!pipe) check(VK_ERROR_UNKNOWN, "vkCreateComputePipelines");
  return pipe;
}

// Every earlier shader or transfer write before every later shader, transfer or host access.
void compute_barrier(VkCommandBuffer cmd) {
  auto barrier = init<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                          VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(
      cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
      VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
      &barrier, 0, nullptr, 0, nullptr);
}

// A decoding step's products, layer after layer (q/k/v, o, gate/up, down), with two empty phases
// a layer where rotary and attention would be; weights from a window of `kWeightBytes` that the
// layers cycle through (far more than L2).
Chain decode_chain(const std::string& what, uint32_t layers, uint32_t hidden, uint32_t qkv, uint32_t ffn) {
  Chain c{what, {}, 0};
  const std::vector<std::pair<uint32_t, uint32_t>> products = {{hidden, qkv},    {64, 64},          {64, 64},
                                                               {hidden, hidden}, {hidden, 2 * ffn}, {ffn, hidden}};
  uint64_t at = 0;  // in vec4s
  for (uint32_t l = 0; l < layers; ++l)
    for (const auto& [k, n] : products) {
      const uint64_t vec4s = uint64_t{k} * n / 4;
      if ((at + vec4s) * 16 > kWeightBytes) at = 0;
      c.phases.push_back({k, n, static_cast<uint32_t>(at), 0});
      at += vec4s;
      c.weight_bytes += vec4s * 16;
    }
  return c;
}

Chain empty_chain(uint32_t phases) {
  Chain c{std::to_string(phases) + " empty phases", {}, 0};
  for (uint32_t p = 0; p < phases; ++p) c.phases.push_back({4, 8, 0, 0});
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<char> spirv = probe::read_spirv(argc, argv, 2, "SHADER.spv [SMS [quick]]");
  Device dev;
  const uint32_t sms = argc > 2 ? static_cast<uint32_t>(std::atoi(argv[2])) : dev.sms;
  if (sms == 0) {
    std::fprintf(stderr, "%s: the driver reports no SM count: give it as the second argument\n",
                 program_invocation_short_name);
    return 2;
  }
  const VkMemoryPropertyFlags local = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT,
                              host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  const VkBufferUsageFlags use =
      VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT;
  auto buffer = [&](VkDeviceSize bytes, VkMemoryPropertyFlags flags) { return dev.q.buffer(bytes, use, flags); };
  const Buffer phases = buffer(kMaxPhases * sizeof(Phase), host);
  const Buffer weights = buffer(kWeightBytes, local);
  constexpr uint64_t kActBytes = 2 * 16384 * 4;
  const Buffer acts = buffer(kActBytes, local), acts_read = buffer(kActBytes, host);
  const Buffer counters = buffer((kMaxPhases + 1) * 4, local);
  const Buffer flag = buffer(4, host);
  dev.q.bind(dev.set, {phases, weights, acts, counters});
  const VkCommandBuffer cmd = dev.q.cmd;
  dev.q.run([&] { vkCmdFillBuffer(cmd, weights.buffer, 0, VK_WHOLE_SIZE, 0x3a83126fu); });  // 1e-3f
  constexpr uint32_t kPrefetch = 8;  // 16-byte loads a lane: a 1024-deep column of a subgroup of 32
  const VkPipeline per_phase = dev.pipeline(spirv, 0, 0), persistent = dev.pipeline(spirv, 1, 0),
                   prefetching = dev.pipeline(spirv, 1, kPrefetch), chained = dev.pipeline(spirv, 2, 0),
                   chained_prefetching = dev.pipeline(spirv, 2, kPrefetch),
                   per_phase_prefetching = dev.pipeline(spirv, 0, kPrefetch);

  const bool quick = argc > 3 && std::string(argv[3]) == "quick";
  const int rounds = quick ? 3 : 15;
  std::vector<Chain> chains = {decode_chain("SmolLM2-135M decoding step", quick ? 2 : 30, 576, 960, 1536),
                               empty_chain(quick ? 12 : 180)};
  if (!quick) chains.push_back(decode_chain("1.7B shape decoding step", 24, 2048, 6144, 8192));
  std::printf("\n| chain | phases | weights MB | mode | µs | µs a phase | weights GB/s | differs by |\n");
  std::printf("|---|---:|---:|---|---:|---:|---:|---:|\n");
  for (const Chain& c : chains) {
    std::copy(c.phases.begin(), c.phases.end(), static_cast<Phase*>(phases.mapped));
    const auto n = static_cast<uint32_t>(c.phases.size());
    auto start = [&] {  // every mode starts from inputs of 1 and counters at 0
      vkCmdFillBuffer(cmd, acts.buffer, 0, VK_WHOLE_SIZE, 0x3f800000u);
      vkCmdFillBuffer(cmd, counters.buffer, 0, VK_WHOLE_SIZE, 0);
      compute_barrier(cmd);
    };
    auto finish = [&] {  // the chain's activations and the timeout flag to the host
      compute_barrier(cmd);
      const VkBufferCopy all{0, 0, kActBytes}, timeout_flag{kMaxPhases * 4, 0, 4};
      vkCmdCopyBuffer(cmd, acts.buffer, acts_read.buffer, 1, &all);
      vkCmdCopyBuffer(cmd, counters.buffer, flag.buffer, 1, &timeout_flag);
      compute_barrier(cmd);
    };
    std::vector<float> want(kActBytes / 4);
    auto differs = [&] {  // largest difference from the barriers' results
      const auto* got = static_cast<const float*>(acts_read.mapped);
      float worst = 0;
      for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i]));
      return worst;
    };
    auto bind = [&](VkPipeline pipe) {
      vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
      vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, dev.layout, 0, 1, &dev.set, 0, nullptr);
    };
    // A dispatch a phase: ordered by barriers, by counters (`pipe` is chained) or not at all.
    // With `other`, odd phases run it: a pipeline switch (and a descriptor set bound) a dispatch,
    // as a model's step has.
    auto dispatches = [&](bool barriers, VkPipeline pipe, VkPipeline other = VK_NULL_HANDLE) {
      start();
      bind(pipe);
      for (uint32_t p = 0; p < n; ++p) {
        if (other) bind(p % 2 ? other : pipe);
        const Push push{p, 1, (c.phases[p].n + 7) / 8, kMaxPhases};
        vkCmdPushConstants(cmd, dev.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof push, &push);
        vkCmdDispatch(cmd, (c.phases[p].n + 7) / 8, 1, 1);
        if (barriers) compute_barrier(cmd);
      }
      finish();
    };
    auto one_dispatch = [&](uint32_t grid, VkPipeline pipe) {
      start();
      bind(pipe);
      const Push push{0, n, grid, kMaxPhases};
      vkCmdPushConstants(cmd, dev.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof push, &push);
      vkCmdDispatch(cmd, grid, 1, 1);
      finish();
    };
    auto timed_out = [&] { return *static_cast<const uint32_t*>(flag.mapped) != 0; };  // of the last run
    auto row = [&](const std::string& mode, double us) {
      std::printf("| %s | %u | %.0f | %s | %.1f | %.2f | %.0f | %.3g |\n", c.what.c_str(), n, c.weight_bytes / 1e6,
                  mode.c_str(), us, us / n, c.weight_bytes / us / 1e3, differs());
      std::fflush(stdout);
    };
    dev.q.median_us(3, [&] { dispatches(true, per_phase); });  // warm-up: clocks up
    const double barriers_us = dev.q.median_us(rounds, [&] { dispatches(true, per_phase); });
    std::copy_n(static_cast<const float*>(acts_read.mapped), want.size(), want.begin());
    row("a dispatch a phase, barriers", barriers_us);
    row("a dispatch a phase, no barriers (wrong results)",
        dev.q.median_us(rounds, [&] { dispatches(false, per_phase); }));
    row("… two pipelines taking turns, barriers",
        dev.q.median_us(rounds, [&] { dispatches(true, per_phase, per_phase_prefetching); }));
    row("… two pipelines taking turns, no barriers (wrong results)",
        dev.q.median_us(rounds, [&] { dispatches(false, per_phase, per_phase_prefetching); }));
    row("… two pipelines taking turns, chained by counters",
        dev.q.median_us(rounds, [&] { dispatches(false, chained, chained_prefetching); }));
    for (const bool early : {false, true}) {
      const double us = dev.q.median_us(rounds, [&] { dispatches(false, early ? chained_prefetching : chained); });
      row(std::string("a dispatch a phase, chained by counters") + (early ? ", weights loaded before the wait" : "") +
              (timed_out() ? " (TIMED OUT)" : ""),
          us);
    }
    for (const bool early : {false, true})
      for (uint32_t per_sm : {1u, 2u}) {
        const double us =
            dev.q.median_us(rounds, [&] { one_dispatch(per_sm * sms, early ? prefetching : persistent); });
        row("one persistent dispatch, " + std::to_string(per_sm) + " workgroups an SM" +
                (early ? ", weights loaded before the wait" : "") +
                (timed_out() ? " (TIMED OUT: not co-resident)" : ""),
            us);
      }
  }
  return 0;
}
