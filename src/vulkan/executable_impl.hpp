// Executable's state, shared by the files that implement it (executable.cpp: buffers, recording
// and replay; streamed_write.cpp: bulk uploads).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "meganeura/error.hpp"
#include "vulkan/executable.hpp"
#include "vulkan/memory.hpp"
#include "vulkan/util.hpp"

namespace meganeura::vk {

struct Executable::Impl {
  std::shared_ptr<Context> ctx;  // first, so it is released after everything made from it
  VkDevice device = VK_NULL_HANDLE;
  std::vector<plan::BufferDesc> descs;
  std::vector<kernels::GeneratedKernel> generated;  // Program::generated, which dispatches name by index
  std::vector<Buffer> buffers;
  VkDescriptorPool descriptor_pool = VK_NULL_HANDLE;
  VkCommandPool command_pool = VK_NULL_HANDLE;
  std::vector<VkCommandBuffer> cbs;  // one per command list
  VkFence fence = VK_NULL_HANDLE;
  VkQueryPool queries = VK_NULL_HANDLE;  // two timestamps per dispatch, when asked and supported
  uint64_t timestamp_mask = 0;
  std::vector<uint32_t> dispatches;   // per command list
  std::vector<uint32_t> first_query;  // per command list: its range of `queries`
  std::vector<bool> ran;              // per command list
  uint64_t recordings = 0;
  bool outstanding = false;  // a run that timed out may still use the buffers (Context::submit)

  ~Impl() {
    if (!device) return;
    if (!ctx->settle(fence, outstanding)) {
      // A hung GPU may still use all of this: leak it rather than free memory it writes.
      for (Buffer& b : buffers) b.abandon();
      return;
    }
    vkDestroyQueryPool(device, queries, nullptr);
    vkDestroyFence(device, fence, nullptr);
    vkDestroyCommandPool(device, command_pool, nullptr);
    vkDestroyDescriptorPool(device, descriptor_pool, nullptr);
  }

  // The planner's slices are trusted for nothing: a bad one would be a GPU fault, not an error.
  void check_slice(const plan::Slice& s, std::string_view use) const {
    if (s.buffer >= descs.size())
      throw Error("program error: " + std::string(use) + " names buffer " + std::to_string(s.buffer) + " of " +
                  std::to_string(descs.size()));
    if (s.offset > descs[s.buffer].size || s.size > descs[s.buffer].size - s.offset)
      throw Error("program error: " + std::string(use) + " reaches past the end of the " + descs[s.buffer].name + " (" +
                  std::to_string(s.offset) + " + " + std::to_string(s.size) + " > " +
                  std::to_string(descs[s.buffer].size) + " bytes)");
  }

  // A storage-buffer binding of the slice; `use` names the dispatch for errors.
  VkDescriptorBufferInfo binding(const plan::Slice& s, const std::string& use) const {
    check_slice(s, use);
    const auto& limits = ctx->limits();
    const std::string& name = descs[s.buffer].name;
    if (s.offset % limits.minStorageBufferOffsetAlignment)
      throw Error("program error: " + use + " binds the " + name + " at offset " + std::to_string(s.offset) +
                  ", not a multiple of minStorageBufferOffsetAlignment (" +
                  std::to_string(limits.minStorageBufferOffsetAlignment) + ")");
    if (s.size > limits.maxStorageBufferRange)
      throw DeviceError(use + " binds " + format_bytes(s.size) + " of the " + name +
                        ", more than one binding may span on " + ctx->info().name + " (maxStorageBufferRange " +
                        format_bytes(limits.maxStorageBufferRange) + "); reduce the batch size or sequence length");
    // An empty slice is never read; bind a valid 4-byte range (every buffer has at least 4).
    if (s.size == 0) return {buffers[s.buffer].handle(), 0, 4};
    return {buffers[s.buffer].handle(), s.offset, s.size};
  }

  // The params block's binding: a uniform buffer's alignment and range limits besides.
  VkDescriptorBufferInfo params_binding(const plan::Slice& s, const std::string& use) const {
    const auto& limits = ctx->limits();
    if (ctx->params_descriptor() == VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER &&
        (s.offset % limits.minUniformBufferOffsetAlignment || s.size > limits.maxUniformBufferRange))
      throw Error("program error: " + use + " binds its " + std::to_string(s.size) + "-byte params at offset " +
                  std::to_string(s.offset) + " (minUniformBufferOffsetAlignment " +
                  std::to_string(limits.minUniformBufferOffsetAlignment) + ", maxUniformBufferRange " +
                  std::to_string(limits.maxUniformBufferRange) + ")");
    return binding(s, use);
  }

  // Context::run_once, except that a transfer which timed out and still runs keeps `staging`
  // (leaked) instead of having it freed under it.
  void transfer(Buffer& staging, const std::function<void(VkCommandBuffer)>& fn) {
    try {
      ctx->run_once(fn);
    } catch (...) {
      if (!ctx->transfer_settled()) staging.abandon();
      throw;
    }
  }

  void create_pools(const plan::Program& program, bool timestamps);
  // Records command list `list` (0: the step) into cbs[list].
  void record(size_t list, const std::vector<plan::Command>& commands, uint32_t status_buffer);
};

}  // namespace meganeura::vk
