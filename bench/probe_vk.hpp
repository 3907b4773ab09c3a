// What the device probes (coopmat2/probe.cpp, sync/probe.cpp) share: bare Vulkan without the
// library, so that a probe measures one kernel and nothing else. A failed call ends the program.
#pragma once
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <utility>
#include <vector>

#include "vulkan/vk_ext.hpp"

namespace probe {

template <class T>
T init(VkStructureType type) {  // a Vulkan struct, zeroed, with its type
  T t{};
  t.sType = type;
  return t;
}

inline void check(VkResult r, const char* what) {
  if (r == VK_SUCCESS) return;
  std::fprintf(stderr, "%s: %s failed (VkResult %d)\n", program_invocation_short_name, what, static_cast<int>(r));
  std::exit(1);
}

// The SPIR-V file of argv[1]; with fewer than `args` arguments, `usage` and exit code 2.
inline std::vector<char> read_spirv(int argc, char** argv, int args, const char* usage) {
  if (argc < args) {
    std::fprintf(stderr, "usage: %s %s\n", program_invocation_short_name, usage);
    std::exit(2);
  }
  std::ifstream file(argv[1], std::ios::binary);
  std::vector<char> spirv((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (spirv.empty()) {
    std::fprintf(stderr, "%s: cannot read %s\n", program_invocation_short_name, argv[1]);
    std::exit(1);
  }
  return spirv;
}

struct Buffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  void* mapped = nullptr;
};

// One descriptor set of whole buffers and its pipeline layout (with `push_bytes` of push constants).
struct Bindings {
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkDescriptorSet set = VK_NULL_HANDLE;
};

// A device, its first queue and one command buffer to record into, run after run.
struct Queue {
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  VkQueryPool stamps = VK_NULL_HANDLE;  // median_us's two timestamps
  VkPhysicalDeviceMemoryProperties memory{};
  float timestamp_ns = 1;  // a timestamp tick

  // The first physical device of a Vulkan 1.3 instance (no device yet: open() makes it).
  static Queue first_device() {
    auto app = init<VkApplicationInfo>(VK_STRUCTURE_TYPE_APPLICATION_INFO);
    app.apiVersion = VK_API_VERSION_1_3;
    auto info = init<VkInstanceCreateInfo>(VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO);
    info.pApplicationInfo = &app;
    Queue q;
    check(vkCreateInstance(&info, nullptr, &q.instance), "vkCreateInstance");
    uint32_t count = 0;
    vkEnumeratePhysicalDevices(q.instance, &count, nullptr);
    if (count == 0) check(VK_ERROR_INITIALIZATION_FAILED, "finding a Vulkan device");
    std::vector<VkPhysicalDevice> all(count);
    vkEnumeratePhysicalDevices(q.instance, &count, all.data());
    q.physical = all[0];
    vkGetPhysicalDeviceMemoryProperties(q.physical, &q.memory);
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(q.physical, &props);
    q.timestamp_ns = props.limits.timestampPeriod;
    return q;
  }

  // The device with `features` (a pNext chain) and `extensions`, its queue and command buffer.
  void open(const void* features, const std::vector<const char*>& extensions) {
    const float priority = 1;
    auto queue_info = init<VkDeviceQueueCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO);
    queue_info.queueCount = 1;
    queue_info.pQueuePriorities = &priority;
    auto info = init<VkDeviceCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO);
    info.pNext = features;
    info.queueCreateInfoCount = 1;
    info.pQueueCreateInfos = &queue_info;
    info.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
    info.ppEnabledExtensionNames = extensions.data();
    check(vkCreateDevice(physical, &info, nullptr, &device), "vkCreateDevice");
    vkGetDeviceQueue(device, 0, 0, &queue);
    auto pool_info = init<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
    pool_info.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    VkCommandPool pool;
    check(vkCreateCommandPool(device, &pool_info, nullptr, &pool), "vkCreateCommandPool");
    auto cmd_info = init<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
    cmd_info.commandPool = pool;
    cmd_info.commandBufferCount = 1;
    check(vkAllocateCommandBuffers(device, &cmd_info, &cmd), "vkAllocateCommandBuffers");
    auto query_info = init<VkQueryPoolCreateInfo>(VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO);
    query_info.queryType = VK_QUERY_TYPE_TIMESTAMP;
    query_info.queryCount = 2;
    check(vkCreateQueryPool(device, &query_info, nullptr, &stamps), "vkCreateQueryPool");
  }

  // A buffer in the first memory type with `flags`, mapped where host-visible.
  Buffer buffer(VkDeviceSize bytes, VkBufferUsageFlags usage, VkMemoryPropertyFlags flags) const {
    Buffer b;
    auto info = init<VkBufferCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO);
    info.size = bytes;
    info.usage = usage;
    check(vkCreateBuffer(device, &info, nullptr, &b.buffer), "vkCreateBuffer");
    VkMemoryRequirements needs;
    vkGetBufferMemoryRequirements(device, b.buffer, &needs);
    uint32_t type = 0;
    while (type < memory.memoryTypeCount &&
           !((needs.memoryTypeBits >> type & 1u) && (memory.memoryTypes[type].propertyFlags & flags) == flags))
      ++type;
    auto alloc = init<VkMemoryAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO);
    alloc.allocationSize = needs.size;
    alloc.memoryTypeIndex = type;
    check(vkAllocateMemory(device, &alloc, nullptr, &b.memory), "vkAllocateMemory");
    check(vkBindBufferMemory(device, b.buffer, b.memory, 0), "vkBindBufferMemory");
    if (flags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)
      check(vkMapMemory(device, b.memory, 0, bytes, 0, &b.mapped), "vkMapMemory");
    return b;
  }

  // Records the command buffer with `record`, submits it and waits for the queue.
  void run(const std::function<void()>& record) const {
    auto begin = init<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
    check(vkBeginCommandBuffer(cmd, &begin), "vkBeginCommandBuffer");
    record();
    check(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
    auto submit = init<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &cmd;
    check(vkQueueSubmit(queue, 1, &submit, VK_NULL_HANDLE), "vkQueueSubmit");
    check(vkQueueWaitIdle(queue), "vkQueueWaitIdle");
  }

  // Bindings 0.. of `types` (a layout of one set, the set allocated).
  Bindings bindings(const std::vector<VkDescriptorType>& types, uint32_t push_bytes) const {
    std::vector<VkDescriptorSetLayoutBinding> list;
    std::vector<VkDescriptorPoolSize> sizes;
    for (uint32_t i = 0; i < types.size(); ++i) {
      list.push_back({i, types[i], 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr});
      sizes.push_back({types[i], 1});
    }
    auto set_info = init<VkDescriptorSetLayoutCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO);
    set_info.bindingCount = static_cast<uint32_t>(list.size());
    set_info.pBindings = list.data();
    VkDescriptorSetLayout set_layout;
    check(vkCreateDescriptorSetLayout(device, &set_info, nullptr, &set_layout), "vkCreateDescriptorSetLayout");
    const VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes};
    auto layout_info = init<VkPipelineLayoutCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO);
    layout_info.setLayoutCount = 1;
    layout_info.pSetLayouts = &set_layout;
    layout_info.pushConstantRangeCount = push_bytes ? 1 : 0;
    layout_info.pPushConstantRanges = &push;
    Bindings b;
    check(vkCreatePipelineLayout(device, &layout_info, nullptr, &b.layout), "vkCreatePipelineLayout");
    auto pool_info = init<VkDescriptorPoolCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO);
    pool_info.maxSets = 1;
    pool_info.poolSizeCount = static_cast<uint32_t>(sizes.size());
    pool_info.pPoolSizes = sizes.data();
    VkDescriptorPool pool;
    check(vkCreateDescriptorPool(device, &pool_info, nullptr, &pool), "vkCreateDescriptorPool");
    auto set_alloc = init<VkDescriptorSetAllocateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO);
    set_alloc.descriptorPool = pool;
    set_alloc.descriptorSetCount = 1;
    set_alloc.pSetLayouts = &set_layout;
    check(vkAllocateDescriptorSets(device, &set_alloc, &b.set), "vkAllocateDescriptorSets");
    return b;
  }

  // A compute pipeline of `spirv` with specialisation constants (id, value); VK_NULL_HANDLE where
  // the driver refuses it.
  VkPipeline pipeline(const std::vector<char>& spirv, VkPipelineLayout layout,
                      const std::vector<std::pair<uint32_t, uint32_t>>& constants) const {
    auto module_info = init<VkShaderModuleCreateInfo>(VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO);
    module_info.codeSize = spirv.size();
    module_info.pCode = reinterpret_cast<const uint32_t*>(spirv.data());
    VkShaderModule module;
    check(vkCreateShaderModule(device, &module_info, nullptr, &module), "vkCreateShaderModule");
    std::vector<uint32_t> values;
    std::vector<VkSpecializationMapEntry> entries;
    for (const auto& [id, value] : constants) {
      entries.push_back({id, static_cast<uint32_t>(4 * values.size()), 4});
      values.push_back(value);
    }
    const VkSpecializationInfo spec{static_cast<uint32_t>(entries.size()), entries.data(), 4 * values.size(),
                                    values.data()};
    auto info = init<VkComputePipelineCreateInfo>(VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO);
    info.stage = init<VkPipelineShaderStageCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO);
    info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    info.stage.module = module;
    info.stage.pName = "main";
    info.stage.pSpecializationInfo = &spec;
    info.layout = layout;
    VkPipeline pipe = VK_NULL_HANDLE;
    if (vkCreateComputePipelines(device, VK_NULL_HANDLE, 1, &info, nullptr, &pipe) != VK_SUCCESS) pipe = VK_NULL_HANDLE;
    vkDestroyShaderModule(device, module, nullptr);
    return pipe;
  }

  // The median over `rounds` runs of the GPU µs between a timestamp before and one after what
  // `record` records.
  double median_us(int rounds, const std::function<void()>& record) const {
    std::vector<double> us;
    for (int round = 0; round < rounds; ++round) {
      run([&] {
        vkCmdResetQueryPool(cmd, stamps, 0, 2);
        vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, stamps, 0);
        record();
        vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, stamps, 1);
      });
      uint64_t ticks[2];
      check(vkGetQueryPoolResults(device, stamps, 0, 2, sizeof ticks, ticks, 8,
                                  VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
            "vkGetQueryPoolResults");
      us.push_back(static_cast<double>(ticks[1] - ticks[0]) * timestamp_ns / 1000.0);
    }
    std::sort(us.begin(), us.end());
    return us[us.size() / 2];
  }

  // Points bindings 0.. of `set` at whole buffers, of `types[i]` (storage where none is given).
  void bind(VkDescriptorSet set, const std::vector<Buffer>& buffers,
            const std::vector<VkDescriptorType>& types = {}) const {
    std::vector<VkDescriptorBufferInfo> infos;
    for (const Buffer& b : buffers) infos.push_back({b.buffer, 0, VK_WHOLE_SIZE});
    std::vector<VkWriteDescriptorSet> writes(infos.size(),
                                             init<VkWriteDescriptorSet>(VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET));
    for (size_t i = 0; i < infos.size(); ++i) {
      writes[i].dstSet = set;
      writes[i].dstBinding = static_cast<uint32_t>(i);
      writes[i].descriptorCount = 1;
      writes[i].descriptorType = i < types.size() ? types[i] : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      writes[i].pBufferInfo = &infos[i];
    }
    vkUpdateDescriptorSets(device, static_cast<uint32_t>(writes.size()), writes.data(), 0, nullptr);
  }
};

}  // namespace probe
