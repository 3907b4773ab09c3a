// A plan::Program made real: buffers, one descriptor set per dispatch, and the step's commands
// recorded once into a command buffer that run() submits as it is.
#include "vulkan/executable.hpp"

#include <cstring>
#include <functional>
#include <string>

#include "meganeura/error.hpp"
#include "vulkan/executable_impl.hpp"
#include "vulkan/fault.hpp"
#include "vulkan/memory.hpp"
#include "vulkan/util.hpp"

namespace meganeura::vk {

void Executable::Impl::create_pools(const plan::Program& program, bool timestamps) {
  uint32_t descriptors = 0, sets = 0;
  auto count = [&](const std::vector<plan::Command>& list) {
    first_query.push_back(sets * 2);
    dispatches.push_back(0);
    for (const auto& c : list)
      if (auto* d = std::get_if<plan::Dispatch>(&c)) {
        ++dispatches.back();
        ++sets;
        descriptors += 2 + static_cast<uint32_t>(d->tensors.size());
      }
  };
  count(program.commands);
  for (const auto& list : program.extra) count(list);
  ran.assign(dispatches.size(), false);
  if (sets) {
    // One params block a set (a uniform or a storage buffer), the rest storage buffers.
    const VkDescriptorType params = ctx->params_descriptor();
    std::vector<VkDescriptorPoolSize> sizes{{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, descriptors - sets}};
    if (params == VK_DESCRIPTOR_TYPE_STORAGE_BUFFER)
      sizes[0].descriptorCount = descriptors;
    else
      sizes.push_back({params, sets});
    auto info = init<VkDescriptorPoolCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO);
    info.maxSets = sets;
    info.poolSizeCount = static_cast<uint32_t>(sizes.size());
    info.pPoolSizes = sizes.data();
    ctx->check_allocation(
        fault::allocate([&] { return vkCreateDescriptorPool(device, &info, nullptr, &descriptor_pool); }),
        "the descriptor pool (" + std::to_string(sets) + " sets, " + std::to_string(descriptors) + " descriptors)");
  }

  auto pool = init<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
  pool.queueFamilyIndex = ctx->queue_family();
  ctx->check_allocation(fault::allocate([&] { return vkCreateCommandPool(device, &pool, nullptr, &command_pool); }),
                        "the command pool");
  auto alloc = init<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
  alloc.commandPool = command_pool;
  alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cbs.resize(1 + program.extra.size());
  alloc.commandBufferCount = static_cast<uint32_t>(cbs.size());
  ctx->check_allocation(fault::allocate([&] { return vkAllocateCommandBuffers(device, &alloc, cbs.data()); }),
                        std::to_string(cbs.size()) + " command buffers");
  auto fence_info = init<VkFenceCreateInfo>(VK_STRUCTURE_TYPE_FENCE_CREATE_INFO);
  ctx->check_allocation(fault::allocate([&] { return vkCreateFence(device, &fence_info, nullptr, &fence); }),
                        "the step's fence");

  // Timestamps need a queue that has them; without, dispatch_times_ns() stays empty.
  uint32_t n = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(ctx->physical(), &n, nullptr);
  std::vector<VkQueueFamilyProperties> families(n);
  vkGetPhysicalDeviceQueueFamilyProperties(ctx->physical(), &n, families.data());
  const uint32_t bits = families.at(ctx->queue_family()).timestampValidBits;
  if (timestamps && sets && bits) {
    timestamp_mask = bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
    auto info = init<VkQueryPoolCreateInfo>(VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO);
    info.queryType = VK_QUERY_TYPE_TIMESTAMP;
    info.queryCount = 2 * sets;  // one pair per dispatch of every list
    ctx->check_allocation(fault::allocate([&] { return vkCreateQueryPool(device, &info, nullptr, &queries); }),
                          "the timestamp query pool (" + std::to_string(info.queryCount) + " queries)");
  }
}

namespace {

struct BarrierScopes {
  VkPipelineStageFlags src_stage;
  VkAccessFlags src_access;
  VkPipelineStageFlags dst_stage;
  VkAccessFlags dst_access;
};

BarrierScopes scopes(plan::Barrier::Kind kind) {
  constexpr auto transfer = VK_PIPELINE_STAGE_TRANSFER_BIT, compute = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT;
  constexpr auto shader_rw = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  switch (kind) {
    case plan::Barrier::TransferToCompute: return {transfer, VK_ACCESS_TRANSFER_WRITE_BIT, compute, shader_rw};
    case plan::Barrier::ComputeToCompute: return {compute, VK_ACCESS_SHADER_WRITE_BIT, compute, shader_rw};
    case plan::Barrier::ComputeToTransfer:
      return {compute, VK_ACCESS_SHADER_WRITE_BIT, transfer, VK_ACCESS_TRANSFER_READ_BIT};
    case plan::Barrier::TransferToHost:
      return {transfer, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT};
  }
  throw Error("program error: unknown barrier kind " + std::to_string(static_cast<int>(kind)));
}

}  // namespace

void Executable::Impl::record(size_t list, const std::vector<plan::Command>& commands, uint32_t status_buffer) {
  const VkCommandBuffer cb = cbs[list];
  auto begin = init<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
  check(vkBeginCommandBuffer(cb, &begin), "vkBeginCommandBuffer");
  ++recordings;
  leading_barrier(cb);
  const uint32_t first = first_query[list];
  if (queries && dispatches[list]) vkCmdResetQueryPool(cb, queries, first, 2 * dispatches[list]);

  const plan::Slice status{status_buffer, 0, descs.at(status_buffer).size};
  uint32_t index = 0;  // of the dispatch
  for (const auto& command : commands) {
    if (const auto* copy = std::get_if<plan::Copy>(&command)) {
      check_slice(copy->src, "a copy");
      check_slice(copy->dst, "a copy");
      if (copy->src.size != copy->dst.size)
        throw Error("program error: a copy from the " + descs[copy->src.buffer].name + " to the " +
                    descs[copy->dst.buffer].name + " has sizes " + std::to_string(copy->src.size) + " and " +
                    std::to_string(copy->dst.size));
      if (copy->src.size == 0) continue;  // Vulkan has no empty copies
      VkBufferCopy region{copy->src.offset, copy->dst.offset, copy->src.size};
      vkCmdCopyBuffer(cb, buffers[copy->src.buffer].handle(), buffers[copy->dst.buffer].handle(), 1, &region);
    } else if (const auto* barrier = std::get_if<plan::Barrier>(&command)) {
      const BarrierScopes s = scopes(barrier->kind);
      memory_barrier(cb, s.src_stage, s.src_access, s.dst_stage, s.dst_access);
    } else {
      const auto& d = std::get<plan::Dispatch>(command);
      const std::string use = "dispatch " + std::to_string(index) + " (" + d.label + ")";
      const auto bindings = static_cast<uint32_t>(d.tensors.size());
      if (d.generated >= static_cast<int>(generated.size()))
        throw Error("program error: " + use + " names generated kernel " + std::to_string(d.generated) + " of " +
                    std::to_string(generated.size()));
      const Pipeline& p = d.generated >= 0 ? ctx->pipeline(generated[static_cast<size_t>(d.generated)], bindings)
                                           : ctx->pipeline(d.kernel, d.spec, bindings);
      auto alloc = init<VkDescriptorSetAllocateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO);
      alloc.descriptorPool = descriptor_pool;
      alloc.descriptorSetCount = 1;
      alloc.pSetLayouts = &p.set_layout;
      VkDescriptorSet set = VK_NULL_HANDLE;
      ctx->check_allocation(fault::allocate([&] { return vkAllocateDescriptorSets(device, &alloc, &set); }),
                            "the descriptor set of " + use);
      std::vector<VkDescriptorBufferInfo> infos{params_binding(d.params, use), binding(status, use)};
      for (const auto& t : d.tensors) infos.push_back(binding(t, use));
      std::vector<VkWriteDescriptorSet> writes(infos.size());
      for (uint32_t i = 0; i < writes.size(); ++i) {
        writes[i] = init<VkWriteDescriptorSet>(VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET);
        writes[i].dstSet = set;
        writes[i].dstBinding = i;
        writes[i].descriptorCount = 1;
        writes[i].descriptorType = i == 0 ? ctx->params_descriptor() : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        writes[i].pBufferInfo = &infos[i];
      }
      vkUpdateDescriptorSets(device, static_cast<uint32_t>(writes.size()), writes.data(), 0, nullptr);

      vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
      vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &set, 0, nullptr);
      // Both timestamps at the compute stage: the first waits for earlier dispatches, so each
      // interval covers one dispatch.
      if (queries) vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, queries, first + 2 * index);
      vkCmdDispatch(cb, d.groups[0], d.groups[1], d.groups[2]);
      if (queries) vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, queries, first + 2 * index + 1);
      ++index;
    }
  }
  // Every device write visible to the host once the fence signals: a fence alone makes none so,
  // and the status block (written by shaders, read by the host) has no barrier in the program.
  memory_barrier(cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_ACCESS_MEMORY_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                 VK_ACCESS_HOST_READ_BIT);
  check(vkEndCommandBuffer(cb), "vkEndCommandBuffer");
}

Executable::Executable(std::shared_ptr<Context> ctx, const plan::Program& program, ExecutableOptions opts)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.ctx = std::move(ctx);
  if (!m.ctx) throw Error("Executable needs a Vulkan context (got none)");
  m.device = m.ctx->device();
  m.descs = program.buffers;
  m.generated = program.generated;
  if (program.status_buffer >= m.descs.size())
    throw Error("program error: the status buffer is " + std::to_string(program.status_buffer) + " of " +
                std::to_string(m.descs.size()) + " buffers");
  m.buffers.reserve(m.descs.size());
  for (const auto& d : m.descs) m.buffers.emplace_back(*m.ctx, d.name, d.size, d.memory);
  // Host-visible buffers start zeroed (Vulkan leaves memory undefined): the status block must
  // read STATUS_OK before the first step.
  for (const auto& b : m.buffers)
    if (b.mapped()) {
      std::memset(b.mapped(), 0, b.size());
      b.flush();
    }
  m.create_pools(program, opts.timestamps);
  // Every pipeline the lists use, made in parallel before recording asks for them one by one.
  std::vector<PipelineWant> wants;
  auto want = [&](const std::vector<plan::Command>& commands) {
    for (const auto& command : commands)
      if (const auto* d = std::get_if<plan::Dispatch>(&command)) {
        if (d->generated >= static_cast<int>(m.generated.size())) continue;  // record() reports it
        const kernels::GeneratedKernel* g =
            d->generated >= 0 ? &m.generated[static_cast<size_t>(d->generated)] : nullptr;
        wants.push_back({d->kernel, g, d->spec, static_cast<uint32_t>(d->tensors.size())});
      }
  };
  want(program.commands);
  for (const auto& list : program.extra) want(list);
  m.ctx->prepare_pipelines(wants);
  m.record(0, program.commands, program.status_buffer);
  for (size_t i = 0; i < program.extra.size(); ++i) m.record(1 + i, program.extra[i], program.status_buffer);
  m.ctx->save_pipeline_cache();  // the next process starts with this session's pipelines compiled
}

Executable::~Executable() = default;

void Executable::run(size_t list) {
  if (list >= impl_->cbs.size())
    throw Error("program error: command list " + std::to_string(list) + " of " + std::to_string(impl_->cbs.size()));
  impl_->ctx->submit(impl_->cbs[list], impl_->fence, impl_->outstanding, list == 0 ? "a step" : "an evaluation pass");
  impl_->ran[list] = true;
  for (const auto& b : impl_->buffers) b.invalidate();  // non-coherent host-visible memory only
}

void* Executable::mapped(uint32_t buffer) const {
  impl_->check_slice({buffer, 0, 0}, "mapped()");
  if (!impl_->buffers[buffer].mapped())
    throw Error("the " + impl_->descs[buffer].name + " is device-local and has no host pointer; use write()/read()");
  return impl_->buffers[buffer].mapped();
}

void Executable::write(plan::Slice dst, std::span<const std::byte> bytes) {
  Impl& m = *impl_;
  m.check_slice(dst, "write()");
  if (bytes.size() != dst.size)
    throw SizeError("writing " + std::to_string(bytes.size()) + " bytes into " + std::to_string(dst.size) +
                    " bytes of the " + m.descs[dst.buffer].name);
  if (bytes.empty()) return;
  const Buffer& target = m.buffers[dst.buffer];
  if (target.mapped()) {
    std::memcpy(static_cast<std::byte*>(target.mapped()) + dst.offset, bytes.data(), bytes.size());
    target.flush();
    return;
  }
  Buffer staging(*m.ctx, "staging buffer for the " + m.descs[dst.buffer].name, dst.size, plan::Memory::Upload);
  std::memcpy(staging.mapped(), bytes.data(), bytes.size());
  staging.flush();
  m.transfer(staging, [&](VkCommandBuffer cb) {
    VkBufferCopy region{0, dst.offset, dst.size};
    vkCmdCopyBuffer(cb, staging.handle(), target.handle(), 1, &region);
  });
}

void Executable::read(plan::Slice src, std::span<std::byte> bytes) {
  Impl& m = *impl_;
  m.check_slice(src, "read()");
  if (bytes.size() != src.size)
    throw SizeError("reading " + std::to_string(src.size) + " bytes of the " + m.descs[src.buffer].name + " into " +
                    std::to_string(bytes.size()) + " bytes");
  if (bytes.empty()) return;
  const Buffer& source = m.buffers[src.buffer];
  if (source.mapped()) {
    source.invalidate();
    std::memcpy(bytes.data(), static_cast<const std::byte*>(source.mapped()) + src.offset, bytes.size());
    return;
  }
  Buffer staging(*m.ctx, "staging buffer for the " + m.descs[src.buffer].name, src.size, plan::Memory::Readback);
  m.transfer(staging, [&](VkCommandBuffer cb) {
    VkBufferCopy region{src.offset, 0, src.size};
    vkCmdCopyBuffer(cb, source.handle(), staging.handle(), 1, &region);
    memory_barrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                   VK_ACCESS_HOST_READ_BIT);
  });
  staging.invalidate();
  std::memcpy(bytes.data(), staging.mapped(), bytes.size());
}

uint64_t Executable::recordings() const { return impl_->recordings; }

std::vector<DispatchTime> Executable::dispatch_intervals_ns(size_t list) const {
  const Impl& m = *impl_;
  if (!m.queries || list >= m.ran.size() || !m.ran[list] || !m.dispatches[list]) return {};
  const uint32_t n = m.dispatches[list];
  std::vector<uint64_t> ticks(2 * n);
  check(vkGetQueryPoolResults(m.device, m.queries, m.first_query[list], 2 * n, ticks.size() * sizeof(uint64_t),
                              ticks.data(), sizeof(uint64_t), VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
        "vkGetQueryPoolResults");
  const double period = m.ctx->limits().timestampPeriod;
  // Relative to the first tick, through the valid bits: a counter that wrapped stays right.
  auto since_first = [&](uint64_t t) { return static_cast<double>((t - ticks[0]) & m.timestamp_mask) * period; };
  std::vector<DispatchTime> out(n);
  for (uint32_t i = 0; i < n; ++i) out[i] = {since_first(ticks[2 * i]), since_first(ticks[2 * i + 1])};
  return out;
}

std::vector<double> Executable::dispatch_times_ns() const {
  std::vector<double> ns;
  for (const DispatchTime& t : dispatch_intervals_ns(0)) ns.push_back(t.end_ns - t.begin_ns);
  return ns;
}

uint64_t Executable::device_bytes() const {
  uint64_t total = 0;
  for (size_t i = 0; i < impl_->descs.size(); ++i)
    if (impl_->descs[i].memory == plan::Memory::DeviceLocal) total += impl_->buffers[i].size();
  return total;
}

uint64_t Executable::device_address(plan::Slice s) const {
  impl_->check_slice(s, "a device address");
  const uint64_t base = impl_->buffers[s.buffer].device_address();
  if (base == 0)
    throw DeviceError("the " + impl_->descs[s.buffer].name + " has no device address on " + impl_->ctx->info().name +
                      " (bufferDeviceAddress is not offered, or the buffer is host memory)");
  return base + s.offset;
}

}  // namespace meganeura::vk
