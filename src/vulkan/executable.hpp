// A plan::Program made real on a device: its buffers allocated, its pipelines and descriptor
// sets created, and its commands recorded ONCE into a command buffer that run() replays.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "plan/program.hpp"
#include "vulkan/context.hpp"

namespace meganeura::vk {

struct ExecutableOptions {
  bool timestamps = false;  // a timestamp query before and after every dispatch, in every list
};

// A device-local slice whose bytes a function produces piece by piece: fill(offset, out) writes
// bytes [offset, offset + out.size()) of it. Offsets are multiples of 256 (whole elements of
// every dtype), and fill is called from several threads at once, for disjoint pieces.
struct StreamedWrite {
  plan::Slice dst;
  std::function<void(uint64_t offset, std::span<std::byte> out)> fill;
};

// When one dispatch ran on the GPU, in ns after the start of its list's first dispatch.
struct DispatchTime {
  double begin_ns = 0, end_ns = 0;
};

class Executable {
 public:
  Executable(std::shared_ptr<Context> ctx, const plan::Program& program, ExecutableOptions opts = {});
  ~Executable();
  Executable(const Executable&) = delete;
  Executable& operator=(const Executable&) = delete;

  // Submits a recorded command buffer (0: Program::commands, 1 + i: Program::extra[i]) and
  // waits for it (Context::wait semantics).
  void run(size_t list = 0);

  // Host pointer of an Upload, Readback or HostShared buffer (persistently mapped).
  void* mapped(uint32_t buffer) const;
  // Copies host bytes into / out of a device-local buffer through a staging buffer, now.
  void write(plan::Slice dst, std::span<const std::byte> bytes);
  void read(plan::Slice src, std::span<std::byte> bytes);
  // Many writes at memory speed (loading a model's weights): two staging buffers of at most
  // `chunk` bytes, reused; while the GPU copies one, util::worker_count() threads fill the other.
  void write_streamed(std::span<const StreamedWrite> writes, uint64_t chunk = uint64_t{64} << 20);

  // How many times command buffers were recorded (one per list at construction, forever).
  uint64_t recordings() const;
  // GPU time of each dispatch of the last run, in nanoseconds, in command order (timestamps on).
  // Empty before the first run, with timestamps off, or where the queue has no timestamps.
  std::vector<double> dispatch_times_ns() const;
  // Begin and end of each dispatch of the last run of command list `list` (as run() numbers
  // them), in command order; empty as dispatch_times_ns() is.
  std::vector<DispatchTime> dispatch_intervals_ns(size_t list) const;
  uint64_t device_bytes() const;  // total bytes of device-local buffers
  // Where a slice of a device-local buffer starts, for shaders that reach tensors through
  // addresses (Context::device_addresses() must hold: a DeviceError otherwise).
  uint64_t device_address(plan::Slice s) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace meganeura::vk
