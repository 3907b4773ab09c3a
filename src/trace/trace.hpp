// MEGANEURA_TRACE=file.pftrace: a Perfetto trace of the process (open it in ui.perfetto.dev).
// A CPU track per thread holds the session builds' phases and every step; a GPU track holds each
// traced step's dispatches, placed by their Vulkan timestamps. The runtime and the build phases
// call in here; one collector serves every session of the process and writes one file.
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace meganeura::trace {

// A debug annotation: shown as the slice's arguments in the UI.
struct Arg {
  std::string name;
  std::variant<std::string, int64_t, double> value;
};
using Args = std::vector<Arg>;

// Nanoseconds of CLOCK_BOOTTIME, Perfetto's default trace clock.
uint64_t now_ns();

// One dispatch as the GPU ran it, in ns after the start of its step's first dispatch.
struct GpuSlice {
  std::string name;
  uint64_t begin_ns = 0, end_ns = 0;
  Args args;
};

class Collector {
 public:
  // `max_steps`: how many steps (of all sessions) are traced; later ones cost nothing.
  Collector(std::string path, uint64_t max_steps);
  const std::string& path() const { return path_; }

  // A slice on the calling thread's CPU track; ends must match begins, innermost first.
  void begin(std::string_view name, const Args& args = {});
  void end();

  // Counts a step; false (and then nothing of the step is recorded) once max_steps were traced.
  bool take_step();
  bool tracing_steps();
  // One step's dispatches on the GPU track, under a slice named `name`. The GPU clock is not the
  // CPU's: the first dispatch is placed at `cpu_submit_ns` (the step was submitted then, so it
  // cannot have started earlier), or at the end of the previous GPU step if that is later.
  void gpu_step(std::string_view name, uint64_t cpu_submit_ns, std::vector<GpuSlice> dispatches, const Args& args = {});

  // Sessions alive: the trace is written when the last one is destroyed (and at exit).
  uint64_t session_opened(std::string_view device);  // returns the session's number, from 1
  void session_closed();
  // Writes everything so far to path() atomically, if anything changed since the last write.
  // On failure: false, and a warning on stderr naming the file; never throws.
  bool write();

 private:
  struct Event {
    uint64_t ts;
    std::string packet;  // an encoded TracePacket
  };
  uint64_t thread_track();  // of the calling thread, described on first use
  void add_event(uint64_t ts, uint64_t track, int type, std::string_view name, const Args& args);
  void add_descriptor(std::string packet);

  std::string path_;
  std::mutex mu_;
  std::vector<std::string> descriptors_;   // TrackDescriptor packets, written before the events
  std::vector<Event> events_;              // sorted by time when written
  std::map<int, uint64_t> thread_tracks_;  // tid -> track uuid
  uint64_t process_track_, gpu_track_;
  bool gpu_described_ = false;
  uint64_t gpu_end_ = 0;  // a track's slices must nest: a GPU step starts after the previous one
  uint64_t steps_ = 0, max_steps_;
  uint64_t sessions_ = 0;
  int live_sessions_ = 0;
  bool dirty_ = false;
};

// The process's collector, or null when MEGANEURA_TRACE is unset or its directory cannot be
// written (a warning says so). Read once, at the first call.
Collector* global();

// A CPU slice for the lifetime of the scope on the global collector; nothing when tracing is off.
// `per_step`: recorded only while steps are still traced (MEGANEURA_TRACE_STEPS), for scopes
// that repeat with every step (a Generator's decode).
class Scope {
 public:
  explicit Scope(std::string_view name, const Args& args = {}, bool per_step = false);
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  Collector* c_;
};

// Held by each session, so that the trace is written when the last session goes.
class SessionHold {
 public:
  explicit SessionHold(std::string_view device);
  ~SessionHold();
  SessionHold(const SessionHold&) = delete;
  SessionHold& operator=(const SessionHold&) = delete;
  uint64_t id() const { return id_; }  // 0 when tracing is off

 private:
  Collector* c_;
  uint64_t id_ = 0;
};

}  // namespace meganeura::trace
