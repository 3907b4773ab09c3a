// The trace collector: events encoded as Perfetto TracePackets as they come, kept in memory
// (bounded by MEGANEURA_TRACE_STEPS), sorted by time and written as one `Trace` message.
#include "trace/trace.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>

#include "io/file.hpp"
#include "meganeura/error.hpp"
#include "trace/proto_writer.hpp"
#include "util/env.hpp"

namespace meganeura::trace {

namespace {

// Field numbers of perfetto.protos (protos/perfetto/trace/trace.proto, trace_packet.proto,
// track_event/track_event.proto, track_descriptor.proto, process_descriptor.proto,
// thread_descriptor.proto, debug_annotation.proto).
constexpr uint32_t kTracePacket = 1;  // Trace.packet
namespace packet {
constexpr uint32_t kTimestamp = 8, kSequenceId = 10, kTrackEvent = 11, kSequenceFlags = 13, kTrackDescriptor = 60;
constexpr uint64_t kIncrementalStateCleared = 1;
}  // namespace packet
namespace event {
constexpr uint32_t kDebugAnnotations = 4, kType = 9, kTrackUuid = 11, kName = 23;
}
namespace track {
constexpr uint32_t kUuid = 1, kName = 2, kProcess = 3, kThread = 4, kParentUuid = 5;
constexpr uint32_t kProcessPid = 1, kProcessName = 6;
constexpr uint32_t kThreadPid = 1, kThreadTid = 2, kThreadName = 5;
}  // namespace track
namespace annotation {
constexpr uint32_t kInt = 4, kDouble = 5, kString = 6, kName = 10;
}
constexpr int kSliceBegin = 1, kSliceEnd = 2, kInstant = 3;
constexpr uint32_t kSequence = 1;  // every packet is on one sequence: the collector orders them

std::string packet_with(uint32_t field, const ProtoWriter& body) {
  ProtoWriter p;
  p.uint(packet::kSequenceId, kSequence);
  p.message(field, body);
  return p.take();
}

std::string process_name() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "meganeura" : exe.filename().string();
}

uint64_t env_steps() { return util::env_number("MEGANEURA_TRACE_STEPS", UINT64_MAX, 100, "a whole number of steps"); }

}  // namespace

uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

Collector::Collector(std::string path, uint64_t max_steps)
    : path_(std::move(path)),
      // Track uuids are global to a trace: the pid keeps two processes' traces apart if merged.
      process_track_(static_cast<uint64_t>(::getpid()) << 32 | 1),
      gpu_track_(static_cast<uint64_t>(::getpid()) << 32 | 2),
      max_steps_(max_steps) {
  ProtoWriter process, desc;
  process.sint(track::kProcessPid, ::getpid());
  process.str(track::kProcessName, process_name());
  desc.uint(track::kUuid, process_track_);
  desc.message(track::kProcess, process);
  ProtoWriter p;
  p.uint(packet::kSequenceId, kSequence);
  p.uint(packet::kSequenceFlags, packet::kIncrementalStateCleared);  // the sequence's first packet
  p.message(packet::kTrackDescriptor, desc);
  descriptors_.push_back(p.take());
}

void Collector::add_descriptor(std::string packet) {
  descriptors_.push_back(std::move(packet));
  dirty_ = true;
}

uint64_t Collector::thread_track() {
  const int tid = ::gettid();
  auto it = thread_tracks_.find(tid);
  if (it != thread_tracks_.end()) return it->second;
  const uint64_t uuid = (static_cast<uint64_t>(::getpid()) << 32) + 16 + static_cast<uint32_t>(tid);
  ProtoWriter thread, desc;
  thread.sint(track::kThreadPid, ::getpid());
  thread.sint(track::kThreadTid, tid);
  thread.str(track::kThreadName, tid == ::getpid() ? "main thread (CPU)" : "thread " + std::to_string(tid) + " (CPU)");
  desc.uint(track::kUuid, uuid);
  desc.uint(track::kParentUuid, process_track_);
  desc.message(track::kThread, thread);
  add_descriptor(packet_with(packet::kTrackDescriptor, desc));
  thread_tracks_.emplace(tid, uuid);
  return uuid;
}

void Collector::add_event(uint64_t ts, uint64_t track_uuid, int type, std::string_view name, const Args& args) {
  ProtoWriter e;
  e.uint(event::kType, static_cast<uint64_t>(type));
  e.uint(event::kTrackUuid, track_uuid);
  if (!name.empty()) e.str(event::kName, name);
  for (const Arg& a : args) {
    ProtoWriter d;
    d.str(annotation::kName, a.name);
    if (auto* s = std::get_if<std::string>(&a.value))
      d.str(annotation::kString, *s);
    else if (auto* i = std::get_if<int64_t>(&a.value))
      d.sint(annotation::kInt, *i);
    else
      d.dbl(annotation::kDouble, std::get<double>(a.value));
    e.message(event::kDebugAnnotations, d);
  }
  ProtoWriter p;
  p.uint(packet::kTimestamp, ts);
  p.uint(packet::kSequenceId, kSequence);
  p.message(packet::kTrackEvent, e);
  events_.push_back({ts, p.take()});
  dirty_ = true;
}

void Collector::begin(std::string_view name, const Args& args) {
  const uint64_t ts = now_ns();
  std::lock_guard lock(mu_);
  add_event(ts, thread_track(), kSliceBegin, name, args);
}

void Collector::end() {
  const uint64_t ts = now_ns();
  std::lock_guard lock(mu_);
  add_event(ts, thread_track(), kSliceEnd, {}, {});
}

bool Collector::take_step() {
  const uint64_t ts = now_ns();
  std::lock_guard lock(mu_);
  if (steps_ < max_steps_) return ++steps_, true;
  if (steps_++ == max_steps_)  // say once, on the timeline, where the trace stops
    add_event(ts, thread_track(), kInstant, "trace: step limit reached (MEGANEURA_TRACE_STEPS)",
              {{"MEGANEURA_TRACE_STEPS", static_cast<int64_t>(max_steps_)}});
  return false;
}

bool Collector::tracing_steps() {
  std::lock_guard lock(mu_);
  return steps_ < max_steps_;
}

void Collector::gpu_step(std::string_view name, uint64_t cpu_submit_ns, std::vector<GpuSlice> dispatches,
                         const Args& args) {
  std::lock_guard lock(mu_);
  const uint64_t anchor = std::max(cpu_submit_ns, gpu_end_);
  add_event(anchor, gpu_track_, kSliceBegin, name, args);
  // Timestamps are in command order and each waits for the previous dispatch, so they do not
  // overlap; clamping keeps the slices nested even where a driver's clock says otherwise.
  uint64_t t = anchor;
  for (const GpuSlice& d : dispatches) {
    const uint64_t b = std::max(anchor + d.begin_ns, t);
    t = std::max(anchor + d.end_ns, b);
    add_event(b, gpu_track_, kSliceBegin, d.name, d.args);
    add_event(t, gpu_track_, kSliceEnd, {}, {});
  }
  add_event(t, gpu_track_, kSliceEnd, {}, {});
  gpu_end_ = t;
}

uint64_t Collector::session_opened(std::string_view device) {
  std::lock_guard lock(mu_);
  if (!gpu_described_) {
    ProtoWriter desc;
    desc.uint(track::kUuid, gpu_track_);
    desc.str(track::kName, "GPU: " + std::string(device));
    desc.uint(track::kParentUuid, process_track_);
    add_descriptor(packet_with(packet::kTrackDescriptor, desc));
    gpu_described_ = true;
  }
  ++live_sessions_;
  return ++sessions_;
}

void Collector::session_closed() {
  bool last;
  {
    std::lock_guard lock(mu_);
    last = --live_sessions_ == 0;
  }
  if (last) write();
}

bool Collector::write() {
  std::lock_guard lock(mu_);
  if (!dirty_) return true;
  // Stable: events of one time keep the order they were recorded in (a begin before its end).
  std::stable_sort(events_.begin(), events_.end(), [](const Event& a, const Event& b) { return a.ts < b.ts; });
  try {
    io::write_atomic(path_, [&](io::AtomicWriter& w) {
      auto put = [&](const std::string& packet) {
        ProtoWriter field;
        field.str(kTracePacket, packet);
        w.write(field.bytes());
      };
      for (const std::string& d : descriptors_) put(d);
      for (const Event& e : events_) put(e.packet);
    });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "meganeura: MEGANEURA_TRACE: %s (trace not written)\n", e.what());
    return false;
  }
  dirty_ = false;
  return true;
}

Collector* global() {
  // Never destroyed: sessions in static storage may close after static destructors ran.
  static Collector* const collector = []() -> Collector* {
    const char* path = std::getenv("MEGANEURA_TRACE");
    if (!path || !*path) return nullptr;
    const uint64_t steps = env_steps();
    const std::filesystem::path p(path);
    const std::string dir = p.has_parent_path() ? p.parent_path().string() : ".";
    std::error_code ec;
    std::string problem;
    if (std::filesystem::is_directory(p, ec))
      problem = "it is a directory";
    else if (!std::filesystem::is_directory(dir, ec))
      problem = "no directory " + dir;
    else if (::access(dir.c_str(), W_OK) != 0)
      problem = "cannot write into " + dir;
    if (!problem.empty()) {  // a bad path must not stop the work it would have traced
      std::fprintf(stderr, "meganeura: MEGANEURA_TRACE=%s: %s; tracing is off\n", path, problem.c_str());
      return nullptr;
    }
    auto* c = new Collector(path, steps);
    std::atexit([] { global()->write(); });  // sessions still alive at exit
    return c;
  }();
  return collector;
}

Scope::Scope(std::string_view name, const Args& args, bool per_step) : c_(global()) {
  if (c_ && per_step && !c_->tracing_steps()) c_ = nullptr;
  if (c_) c_->begin(name, args);
}

Scope::~Scope() {
  if (c_) c_->end();
}

SessionHold::SessionHold(std::string_view device) : c_(global()) {
  if (c_) id_ = c_->session_opened(device);
}

SessionHold::~SessionHold() {
  if (c_) c_->session_closed();
}

}  // namespace meganeura::trace
