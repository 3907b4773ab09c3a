#include "plan/planner.hpp"

#include <algorithm>

#include "meganeura/error.hpp"
#include "plan/arena.hpp"
#include "plan/schedule.hpp"
#include "util/align.hpp"

namespace meganeura::plan {

using lower::Role;

using util::align_up;

// What to call tensor `t` in an error: its graph node, else the call that writes it (a staged
// copy of weights, a kernel's scratch), else what has no node and no writer: packed weights.
static std::string tensor_name(const lower::Lowered& low, const Graph& g, size_t t) {
  const lower::TensorDesc& d = low.tensors[t];
  if (d.node >= 0) return "tensor \"" + g.label(d.node) + "\"";
  for (const lower::KernelCall& c : low.calls)
    for (const lower::Access& a : c.tensors)
      if (a.write && static_cast<size_t>(a.tensor) == t) return "the tensor that \"" + c.label + "\" writes";
  return "tensor \"packed weights\"";
}

// A tensor must fit one buffer: bindings address a single allocation.
static void check_fits(const lower::Lowered& low, const Graph& g, size_t t, uint64_t max_bytes) {
  const uint64_t bytes = low.tensors[t].bytes;
  if (bytes > max_bytes)
    throw OutOfMemoryError(tensor_name(low, g, t) + " needs " + std::to_string(bytes) +
                           " bytes, more than the device's largest buffer (" + std::to_string(max_bytes) + " bytes)");
}

// Persistent tensors (parameters, constants, inputs) are packed one after another; when `more`
// is given, a tensor that would push the buffer past max_bytes starts a new buffer (its index
// and size appended to `more`), so a model larger than one allocation still fits.
static void pack(std::vector<Slice>& where, const lower::Lowered& low, const Graph& g, uint32_t buffer,
                 uint64_t alignment, uint64_t& size, bool (*wanted)(Role), uint64_t max_bytes = UINT64_MAX,
                 std::vector<std::pair<uint32_t, uint64_t>>* more = nullptr) {
  uint64_t* fill = &size;
  for (size_t t = 0; t < low.tensors.size(); ++t) {
    const lower::TensorDesc& d = low.tensors[t];
    if (d.alias_of >= 0 || !wanted(d.role)) continue;
    check_fits(low, g, t, max_bytes);
    if (more && *fill > 0 && *fill + d.bytes > max_bytes) {
      const uint32_t next = more->empty() ? kBufferCount : more->back().first + 1;
      more->push_back({next, 0});
      buffer = next;
      fill = &more->back().second;
    }
    where[t] = {buffer, *fill, d.bytes};
    *fill = align_up(*fill + d.bytes, alignment);
  }
}

// Lifetimes of arena tensors in schedule levels (tensors alive in one level never share bytes,
// so reuse adds no barrier inside a level), then their places: in kArenaBuffer and, past
// max_buffer_bytes, in further arenas, buffers `next_buffer`, `next_buffer` + 1, ... Returns
// each arena's size.
static std::vector<uint64_t> place_arena(std::vector<Slice>& where, const lower::Lowered& low, const Graph& g,
                                         const Schedule& sched, const PlanOptions& opts, uint32_t next_buffer,
                                         uint64_t& unshared) {
  int end = 0;
  std::vector<int> first(low.tensors.size(), -1), last(low.tensors.size(), -1);
  for (size_t c = 0; c < low.calls.size(); ++c) {
    const int level = sched.level[c];
    end = std::max(end, level + 1);
    for (const lower::Access& a : low.calls[c].tensors) {
      auto r = static_cast<size_t>(low.root(a.tensor));
      first[r] = first[r] < 0 ? level : std::min(first[r], level);
      last[r] = std::max(last[r], level);
    }
  }
  std::vector<Lifetime> items;
  std::vector<size_t> ids;
  for (size_t t = 0; t < low.tensors.size(); ++t) {
    const lower::TensorDesc& d = low.tensors[t];
    bool arena = d.role == Role::Intermediate || d.role == Role::Scratch;
    if (d.alias_of >= 0 || !arena || first[t] < 0) continue;
    check_fits(low, g, t, opts.max_buffer_bytes);
    items.push_back({d.bytes, first[t], d.output ? end : last[t]});
    ids.push_back(t);
  }
  const Arenas placed = place(items, opts.alignment, opts.reuse_memory, opts.max_buffer_bytes);
  unshared = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    const uint32_t arena = placed.at[i].arena;
    where[ids[i]] = {arena == 0 ? kArenaBuffer : next_buffer + arena - 1, placed.at[i].offset, items[i].bytes};
    unshared += align_up(items[i].bytes, opts.alignment);
  }
  return placed.size;
}

namespace {

// Byte ranges touched since the last barrier.
struct Hazards {
  struct Range {
    uint32_t buffer;
    uint64_t begin, end;
  };
  std::vector<Range> reads, writes;

  static bool overlaps(const std::vector<Range>& rs, const Range& x) {
    return std::any_of(rs.begin(), rs.end(),
                       [&](const Range& r) { return r.buffer == x.buffer && r.begin < x.end && x.begin < r.end; });
  }
  bool conflicts(const std::vector<Range>& rd, const std::vector<Range>& wr) const {
    for (auto& r : rd)
      if (overlaps(writes, r)) return true;  // read after write
    for (auto& w : wr)
      if (overlaps(writes, w) || overlaps(reads, w)) return true;  // write after write/read
    return false;
  }
  void clear() {
    reads.clear();
    writes.clear();
  }
};

}  // namespace

// The buffers past kBufferCount: further parameter buffers (their indices chosen when packing),
// then further arenas (place_arena's next_buffer onwards), in that order.
static void add_further_buffers(Planned& out, const std::vector<std::pair<uint32_t, uint64_t>>& more_persistent,
                                const std::vector<uint64_t>& arenas) {
  std::vector<BufferDesc>& buffers = out.program.buffers;
  out.parameter_buffers.push_back(kPersistentBuffer);
  for (const auto& [index, size] : more_persistent) {
    buffers.push_back({"parameters " + std::to_string(index - kBufferCount + 2), size, Memory::DeviceLocal});
    out.parameter_buffers.push_back(index);
  }
  out.arena_buffers.push_back(kArenaBuffer);
  for (size_t a = 1; a < arenas.size(); ++a) {
    out.arena_buffers.push_back(static_cast<uint32_t>(buffers.size()));
    buffers.push_back({"activation arena " + std::to_string(a + 1), arenas[a], Memory::DeviceLocal});
  }
}

// The calls of the step, then of each extra list, in the schedule's order. Derived calls
// (KernelCall::derived) run in the derived list only: not in the step, not in a program.
static std::vector<std::vector<size_t>> list_calls(const lower::Lowered& low, const Schedule& sched) {
  std::vector<std::vector<size_t>> lists(1 + low.extra_lists.size());
  for (size_t i : sched.order)
    if (!low.calls[i].derived) lists[0].push_back(i);
  std::vector<size_t> position(low.calls.size());
  for (size_t i = 0; i < sched.order.size(); ++i) position[sched.order[i]] = i;
  for (size_t l = 0; l < low.extra_lists.size(); ++l) {
    const lower::Lowered::CommandList& list = low.extra_lists[l];
    for (size_t i : list.calls)
      if (low.calls[i].derived == list.derived) lists[l + 1].push_back(i);
    std::sort(lists[l + 1].begin(), lists[l + 1].end(), [&](size_t a, size_t b) { return position[a] < position[b]; });
  }
  return lists;
}

Planned plan_program(const lower::Lowered& low, const Graph& g, const PlanOptions& opts) {
  Planned out;
  const size_t n = low.tensors.size();
  out.tensor.assign(n, Slice{});
  out.upload.assign(n, Slice{});

  uint64_t persistent = 0, inputs = 0, upload = 0, readback = 0, params = 0;
  std::vector<std::pair<uint32_t, uint64_t>> more_persistent;  // (buffer index, size)
  pack(
      out.tensor, low, g, kPersistentBuffer, opts.alignment, persistent,
      [](Role r) { return r == Role::Parameter || r == Role::Constant || r == Role::State; }, opts.max_buffer_bytes,
      &more_persistent);
  pack(out.tensor, low, g, kInputBuffer, opts.alignment, inputs, [](Role r) { return r == Role::Input; });
  const Schedule sched = schedule_calls(low, opts.schedule_by_level);
  const auto next_buffer = static_cast<uint32_t>(kBufferCount + more_persistent.size());
  const std::vector<uint64_t> arenas = place_arena(out.tensor, low, g, sched, opts, next_buffer, out.arena_unshared);
  for (size_t t = 0; t < n; ++t)  // views share their root's bytes
    if (low.tensors[t].alias_of >= 0) {
      out.tensor[t] = out.tensor[static_cast<size_t>(low.root(static_cast<int>(t)))];
      out.tensor[t].offset += low.offset_in_root(static_cast<int>(t));
      out.tensor[t].size = low.tensors[t].bytes;
    }

  Program& p = out.program;
  // Each call's params block, shared by every command list that runs the call.
  std::vector<Slice> params_of;
  for (const lower::KernelCall& c : low.calls) {
    params_of.push_back({kParamsBuffer, params, c.params.size() * 4});
    out.params_words.resize(params / 4, 0);
    out.params_words.insert(out.params_words.end(), c.params.begin(), c.params.end());
    params = align_up(params + c.params.size() * 4, opts.alignment);
  }
  // Inputs: the host writes the upload buffer; each list starts by copying it to the device.
  std::vector<Copy> uploads;
  for (size_t t = 0; t < n; ++t)
    if (low.tensors[t].role == Role::Input && low.tensors[t].alias_of < 0) {
      out.upload[t] = {kUploadBuffer, upload, low.tensors[t].bytes};
      upload = align_up(upload + low.tensors[t].bytes, opts.alignment);
      uploads.push_back({out.upload[t], out.tensor[t]});
    }
  // Outputs: copied to the readback buffer at the end of each list (that computes them).
  std::vector<std::pair<int, Copy>> downloads;  // (graph node, copy)
  for (auto& [name, id] : g.outputs()) {
    Slice src = out.tensor[static_cast<size_t>(id)];
    Slice dst{kReadbackBuffer, readback, src.size};
    readback = align_up(readback + src.size, opts.alignment);
    out.readback.push_back(dst);
    downloads.push_back({id, {src, dst}});
  }

  auto commands = [&](const std::vector<size_t>& calls, const std::vector<int>& outputs, uint32_t& barriers,
                      uint32_t& dispatches, bool derived) {
    std::vector<Command> cmds;
    auto barrier = [&](Barrier::Kind k) {
      cmds.emplace_back(std::in_place_type<Barrier>, Barrier{k});
      ++barriers;
    };
    if (!derived)
      for (const Copy& c : uploads) cmds.emplace_back(std::in_place_type<Copy>, c);
    if (!derived && !uploads.empty()) barrier(Barrier::TransferToCompute);
    Hazards pending;
    for (size_t i : calls) {
      const lower::KernelCall& c = low.calls[i];
      Dispatch d;
      d.kernel = c.kernel;
      d.generated = c.generated;
      d.spec = c.spec;
      d.groups = c.groups;
      d.label = c.label;
      d.params = params_of[i];
      std::vector<Hazards::Range> rd, wr;
      for (const lower::Access& a : c.tensors) {
        Slice s = out.tensor[static_cast<size_t>(a.tensor)];
        d.tensors.push_back(s);
        (a.write ? wr : rd).push_back({s.buffer, s.offset, s.offset + s.size});
      }
      if (pending.conflicts(rd, wr)) {
        barrier(Barrier::ComputeToCompute);
        pending.clear();
      }
      pending.reads.insert(pending.reads.end(), rd.begin(), rd.end());
      pending.writes.insert(pending.writes.end(), wr.begin(), wr.end());
      cmds.emplace_back(std::in_place_type<Dispatch>, std::move(d));
      ++dispatches;
    }
    if (derived) {  // what it wrote, for the lists submitted after it
      barrier(Barrier::ComputeToCompute);
      return cmds;
    }
    barrier(Barrier::ComputeToTransfer);
    for (const auto& [node, c] : downloads)
      if (outputs.empty() || std::find(outputs.begin(), outputs.end(), node) != outputs.end())
        cmds.emplace_back(std::in_place_type<Copy>, c);
    barrier(Barrier::TransferToHost);  // also makes the status block visible
    return cmds;
  };
  const std::vector<std::vector<size_t>> lists = list_calls(low, sched);
  p.commands = commands(lists[0], {}, out.barriers, out.dispatches, false);
  for (size_t l = 0; l < low.extra_lists.size(); ++l) {
    uint32_t unused_barriers = 0, unused_dispatches = 0;
    const lower::Lowered::CommandList& list = low.extra_lists[l];
    p.extra.push_back(commands(lists[l + 1], list.outputs, unused_barriers, unused_dispatches, list.derived));
  }

  p.generated = low.generated;
  p.status_buffer = kStatusBuffer;
  p.buffers.resize(kBufferCount);
  p.buffers[kParamsBuffer] = {"kernel parameters", std::max<uint64_t>(params, 256), Memory::DeviceLocal};
  p.buffers[kStatusBuffer] = {"status block", sizeof(kernels::Status), Memory::HostShared};
  p.buffers[kPersistentBuffer] = {"parameters", std::max<uint64_t>(persistent, 256), Memory::DeviceLocal};
  p.buffers[kInputBuffer] = {"inputs", std::max<uint64_t>(inputs, 256), Memory::DeviceLocal};
  p.buffers[kArenaBuffer] = {"activation arena", std::max<uint64_t>(arenas[0], 256), Memory::DeviceLocal};
  p.buffers[kUploadBuffer] = {"input staging", std::max<uint64_t>(upload, 256), Memory::Upload};
  p.buffers[kReadbackBuffer] = {"output staging", std::max<uint64_t>(readback, 256), Memory::Readback};
  add_further_buffers(out, more_persistent, arenas);
  out.params_words.resize(p.buffers[kParamsBuffer].size / 4, 0);
  return out;
}

}  // namespace meganeura::plan
