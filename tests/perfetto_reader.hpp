// A reader of the Perfetto traces MEGANEURA_TRACE writes, written from the perfetto.protos field
// numbers independently of src/trace/: it decodes the wire format, checks what the Perfetto UI
// relies on (tracks described before use, begin/end balanced and nested per track, time never
// going back on a track) and returns each track's slices.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mntest {

struct TraceArg {
  std::optional<std::string> str;
  std::optional<int64_t> integer;
  std::optional<double> real;
};

struct TraceSlice {
  std::string name;
  uint64_t begin = 0, end = 0;
  int depth = 0;
  int parent = -1;  // index into the track's slices
  std::map<std::string, TraceArg> args;
  bool instant = false;
};

struct TraceTrack {
  uint64_t uuid = 0, parent_uuid = 0;
  std::string name;
  std::optional<int64_t> process_pid, thread_pid, thread_tid;
  std::string process_name, thread_name;
  std::vector<TraceSlice> slices;  // in begin order
};

struct DecodedTrace {
  std::map<uint64_t, TraceTrack> tracks;
  size_t packets = 0;
  // The depth-0 slices of a track (its children: slices with `parent` pointing at them).
  static std::vector<int> roots(const TraceTrack& t);
  static std::vector<int> children(const TraceTrack& t, int parent);
};

// Decodes `bytes` (a perfetto.protos.Trace); every violation is a gtest failure.
DecodedTrace decode_trace(const std::string& bytes);

}  // namespace mntest
