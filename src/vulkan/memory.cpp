// Buffer allocation and memory-type choice, with out-of-memory errors that say which buffer,
// how big, on which device, and how much of the heap was free.
#include "vulkan/memory.hpp"

#include <algorithm>
#include <bit>
#include <utility>

#include "meganeura/error.hpp"
#include "vulkan/context_impl.hpp"
#include "vulkan/fault.hpp"
#include "vulkan/util.hpp"

namespace meganeura::vk {
namespace {

struct MemoryWish {
  VkMemoryPropertyFlags want, nice, avoid;
};

MemoryWish wish(plan::Memory m) {
  constexpr auto local = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, visible = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT,
                 coherent = VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, cached = VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
  switch (m) {
    // Host-visible device memory (ReBAR) is small on many GPUs: keep arenas out of it.
    case plan::Memory::DeviceLocal: return {local, 0, visible};
    // Staging lives in system memory; the GPU reads it once per copy.
    case plan::Memory::Upload: return {visible | coherent, 0, local};
    // The CPU reads it: cached memory is much faster to read (invalidated after each step if
    // not coherent).
    case plan::Memory::Readback: return {visible, cached | coherent, 0};
    case plan::Memory::HostShared: return {visible | coherent, 0, 0};
  }
  return {visible | coherent, 0, 0};
}

}  // namespace

uint32_t Context::memory_type(uint32_t type_bits, VkMemoryPropertyFlags want, VkMemoryPropertyFlags nice,
                              VkMemoryPropertyFlags avoid) const {
  const auto& mem = impl_->probe.memory;
  uint32_t best = UINT32_MAX;
  int best_score = 0;
  for (uint32_t i = 0; i < mem.memoryTypeCount; ++i) {
    VkMemoryPropertyFlags f = mem.memoryTypes[i].propertyFlags;
    if (!(type_bits & (1u << i)) || (f & want) != want) continue;
    int score = std::popcount(f & nice) - std::popcount(f & avoid);
    if (best == UINT32_MAX || score > best_score) best = i, best_score = score;
  }
  if (best == UINT32_MAX)
    throw DeviceError(info_.name + " has no memory type with the properties meganeura needs (flags " +
                      std::to_string(want) + ")");
  return best;
}

std::string Context::heap_report(uint32_t memory_type) const {
  const uint32_t heap = impl_->probe.memory.memoryTypes[memory_type].heapIndex;
  const std::string h = "heap " + std::to_string(heap);
  if (impl_->probe.memory_budget) {
    auto budget =
        init<VkPhysicalDeviceMemoryBudgetPropertiesEXT>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT);
    auto props = init<VkPhysicalDeviceMemoryProperties2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2);
    props.pNext = &budget;
    vkGetPhysicalDeviceMemoryProperties2(physical_, &props);
    uint64_t b = budget.heapBudget[heap], used = budget.heapUsage[heap];
    return h + " has " + format_gib(b > used ? b - used : 0) + " free";
  }
  return h + " holds " + format_gib(impl_->probe.memory.memoryHeaps[heap].size) + " in all, " +
         format_bytes(impl_->held[heap]) + " of it in meganeura's buffers (the driver reports no free space)";
}

std::atomic<uint64_t>& Context::held_bytes(uint32_t memory_type) const {
  return impl_->held[impl_->probe.memory.memoryTypes[memory_type].heapIndex];
}

void Context::check_allocation(VkResult r, std::string_view what, uint32_t memory_type) const {
  if (r != VK_ERROR_OUT_OF_DEVICE_MEMORY && r != VK_ERROR_OUT_OF_HOST_MEMORY) return check(r, what);
  if (memory_type == UINT32_MAX) memory_type = this->memory_type(~0u, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0);
  throw OutOfMemoryError(
      std::string(r == VK_ERROR_OUT_OF_DEVICE_MEMORY ? "out of device memory" : "out of host memory") + " allocating " +
      std::string(what) + " on " + info_.name + ": " + heap_report(memory_type) +
      ". Reduce the batch size or sequence length, or set MEGANEURA_DEVICE.");
}

Buffer::Buffer(const Context& ctx, std::string_view name, uint64_t size, plan::Memory memory)
    : device_(ctx.device()), size_(std::max<uint64_t>((size + 3) / 4 * 4, 4)) {  // Vulkan has no empty buffers
  const std::string what(name);
  if (size_ > ctx.max_allocation_size())
    throw DeviceError("the " + what + " needs " + format_bytes(size) + ", more than one allocation may hold on " +
                      ctx.info().name + " (maxMemoryAllocationSize " + format_bytes(ctx.max_allocation_size()) +
                      "); reduce the batch size or sequence length");
  try {
    auto info = init<VkBufferCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO);
    info.size = size_;
    // Uniform too: the params buffer is bound as one (Context::params_descriptor).
    info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT |
                 VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    const bool addressed = memory == plan::Memory::DeviceLocal && ctx.device_addresses();
    if (addressed) info.usage |= VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT;
    info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    const std::string asked = "the " + what + " (" + format_bytes(size) + ")";
    ctx.check_allocation(fault::allocate([&] { return vkCreateBuffer(device_, &info, nullptr, &buffer_); }), asked);

    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(device_, buffer_, &req);
    const MemoryWish w = wish(memory);
    const uint32_t type = ctx.memory_type(req.memoryTypeBits, w.want, w.nice, w.avoid);
    auto alloc = init<VkMemoryAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO);
    alloc.allocationSize = req.size;
    alloc.memoryTypeIndex = type;
    auto flags = init<VkMemoryAllocateFlagsInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO);
    flags.flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT;
    if (addressed) alloc.pNext = &flags;
    ctx.check_allocation(fault::allocate([&] { return vkAllocateMemory(device_, &alloc, nullptr, &memory_); }), asked,
                         type);
    held_ = &ctx.held_bytes(type);
    held_size_ = alloc.allocationSize;
    *held_ += held_size_;
    check(vkBindBufferMemory(device_, buffer_, memory_, 0), "vkBindBufferMemory (" + what + ")");
    if (addressed) {
      auto at = init<VkBufferDeviceAddressInfo>(VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO);
      at.buffer = buffer_;
      address_ = vkGetBufferDeviceAddress(device_, &at);
    }

    // Device-local buffers are never mapped, even where they could be (lavapipe, integrated
    // GPUs), so the staging path is exercised everywhere.
    if (memory != plan::Memory::DeviceLocal) {
      VkPhysicalDeviceMemoryProperties props;
      vkGetPhysicalDeviceMemoryProperties(ctx.physical(), &props);
      coherent_ = props.memoryTypes[type].propertyFlags & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
      check(vkMapMemory(device_, memory_, 0, VK_WHOLE_SIZE, 0, &mapped_), "vkMapMemory (" + what + ")");
    }
  } catch (...) {
    release();
    throw;
  }
}

Buffer::~Buffer() { release(); }

Buffer::Buffer(Buffer&& o) noexcept
    : device_(o.device_),
      buffer_(std::exchange(o.buffer_, VK_NULL_HANDLE)),
      memory_(std::exchange(o.memory_, VK_NULL_HANDLE)),
      mapped_(std::exchange(o.mapped_, nullptr)),
      size_(o.size_),
      address_(o.address_),
      coherent_(o.coherent_),
      held_(std::exchange(o.held_, nullptr)),
      held_size_(o.held_size_) {}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    release();
    device_ = o.device_;
    buffer_ = std::exchange(o.buffer_, VK_NULL_HANDLE);
    memory_ = std::exchange(o.memory_, VK_NULL_HANDLE);
    mapped_ = std::exchange(o.mapped_, nullptr);
    size_ = o.size_;
    address_ = o.address_;
    coherent_ = o.coherent_;
    held_ = std::exchange(o.held_, nullptr);
    held_size_ = o.held_size_;
  }
  return *this;
}

void Buffer::release() noexcept {
  // Freeing the memory unmaps it.
  vkDestroyBuffer(device_, buffer_, nullptr);
  vkFreeMemory(device_, memory_, nullptr);
  if (held_) *held_ -= held_size_;
  held_ = nullptr;
  buffer_ = VK_NULL_HANDLE;
  memory_ = VK_NULL_HANDLE;
  mapped_ = nullptr;
}

void Buffer::abandon() noexcept {
  held_ = nullptr;
  buffer_ = VK_NULL_HANDLE;
  memory_ = VK_NULL_HANDLE;
  mapped_ = nullptr;
}

void Buffer::invalidate() const {
  if (!mapped_ || coherent_) return;
  VkMappedMemoryRange range{VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE, nullptr, memory_, 0, VK_WHOLE_SIZE};
  check(vkInvalidateMappedMemoryRanges(device_, 1, &range), "vkInvalidateMappedMemoryRanges");
}

void Buffer::flush() const {
  if (!mapped_ || coherent_) return;
  VkMappedMemoryRange range{VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE, nullptr, memory_, 0, VK_WHOLE_SIZE};
  check(vkFlushMappedMemoryRanges(device_, 1, &range), "vkFlushMappedMemoryRanges");
}

}  // namespace meganeura::vk
