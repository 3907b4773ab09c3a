#include "perfetto_reader.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <string_view>

namespace mntest {

namespace {

// One field of a message: varint (wire 0), fixed64 (1), length-delimited (2); fixed32 (5) too.
struct Field {
  uint32_t number = 0;
  int wire = 0;
  uint64_t value = 0;      // wire 0, 1, 5
  std::string_view bytes;  // wire 2
};

uint64_t read_varint(std::string_view m, size_t& i) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (i >= m.size()) throw std::runtime_error("varint runs past the end of its message");
    const auto b = static_cast<uint8_t>(m[i++]);
    v |= uint64_t{b & 0x7fu} << shift;
    if (!(b & 0x80)) return v;
  }
  throw std::runtime_error("varint longer than 10 bytes");
}

std::vector<Field> parse(std::string_view m) {
  std::vector<Field> out;
  size_t i = 0;
  while (i < m.size()) {
    const uint64_t key = read_varint(m, i);
    Field f{static_cast<uint32_t>(key >> 3), static_cast<int>(key & 7)};
    if (f.number == 0) throw std::runtime_error("field number 0");
    if (f.wire == 0) {
      f.value = read_varint(m, i);
    } else if (f.wire == 1 || f.wire == 5) {
      const size_t n = f.wire == 1 ? 8 : 4;
      if (m.size() - i < n) throw std::runtime_error("fixed-size field runs past the end");
      for (size_t k = 0; k < n; ++k) f.value |= uint64_t{static_cast<uint8_t>(m[i + k])} << (8 * k);
      i += n;
    } else if (f.wire == 2) {
      const uint64_t n = read_varint(m, i);
      if (n > m.size() - i) throw std::runtime_error("length-delimited field runs past the end");
      f.bytes = m.substr(i, n);
      i += n;
    } else {
      throw std::runtime_error("wire type " + std::to_string(f.wire) + " (groups are not used)");
    }
    out.push_back(f);
  }
  return out;
}

const Field* find(const std::vector<Field>& fs, uint32_t number, int wire) {
  const Field* found = nullptr;
  for (const Field& f : fs)
    if (f.number == number) {
      EXPECT_EQ(f.wire, wire) << "field " << number;
      EXPECT_EQ(found, nullptr) << "field " << number << " appears twice";
      found = &f;
    }
  return found;
}

std::optional<uint64_t> uint_field(const std::vector<Field>& fs, uint32_t n) {
  const Field* f = find(fs, n, 0);
  return f ? std::optional(f->value) : std::nullopt;
}

std::optional<std::string> str_field(const std::vector<Field>& fs, uint32_t n) {
  const Field* f = find(fs, n, 2);
  return f ? std::optional(std::string(f->bytes)) : std::nullopt;
}

// perfetto.protos.DebugAnnotation: name 10, int_value 4, double_value 5, string_value 6.
std::pair<std::string, TraceArg> annotation(std::string_view m) {
  const auto fs = parse(m);
  TraceArg a;
  if (auto v = uint_field(fs, 4)) a.integer = static_cast<int64_t>(*v);
  if (const Field* d = find(fs, 5, 1)) std::memcpy(&a.real.emplace(), &d->value, 8);
  a.str = str_field(fs, 6);
  const auto name = str_field(fs, 10);
  EXPECT_TRUE(name) << "a debug annotation without a name";
  EXPECT_EQ(a.integer.has_value() + a.real.has_value() + a.str.has_value(), 1) << "annotation " << name.value_or("?");
  return {name.value_or(""), a};
}

// perfetto.protos.TrackDescriptor: uuid 1, name 2, process 3 {pid 1, process_name 6},
// thread 4 {pid 1, tid 2, thread_name 5}, parent_uuid 5.
TraceTrack track_descriptor(std::string_view m) {
  const auto fs = parse(m);
  TraceTrack t;
  t.uuid = uint_field(fs, 1).value_or(0);
  t.name = str_field(fs, 2).value_or("");
  t.parent_uuid = uint_field(fs, 5).value_or(0);
  if (const Field* p = find(fs, 3, 2)) {
    const auto ps = parse(p->bytes);
    if (auto pid = uint_field(ps, 1)) t.process_pid = static_cast<int64_t>(*pid);
    t.process_name = str_field(ps, 6).value_or("");
  }
  if (const Field* th = find(fs, 4, 2)) {
    const auto ts = parse(th->bytes);
    if (auto pid = uint_field(ts, 1)) t.thread_pid = static_cast<int64_t>(*pid);
    if (auto tid = uint_field(ts, 2)) t.thread_tid = static_cast<int64_t>(*tid);
    t.thread_name = str_field(ts, 5).value_or("");
  }
  return t;
}

}  // namespace

std::vector<int> DecodedTrace::roots(const TraceTrack& t) { return children(t, -1); }

std::vector<int> DecodedTrace::children(const TraceTrack& t, int parent) {
  std::vector<int> out;
  for (size_t i = 0; i < t.slices.size(); ++i)
    if (t.slices[i].parent == parent) out.push_back(static_cast<int>(i));
  return out;
}

DecodedTrace decode_trace(const std::string& bytes) {
  DecodedTrace out;
  std::map<uint64_t, std::vector<int>> open;  // per track: the stack of unfinished slices
  std::map<uint64_t, uint64_t> last_ts;       // per track
  try {
    // perfetto.protos.Trace: repeated TracePacket packet = 1.
    for (const Field& pf : parse(bytes)) {
      EXPECT_EQ(pf.number, 1u) << "a Trace holds only packets (field 1)";
      EXPECT_EQ(pf.wire, 2);
      const size_t index = out.packets++;
      // TracePacket: timestamp 8, trusted_packet_sequence_id 10, track_event 11,
      // sequence_flags 13, track_descriptor 60.
      const auto fs = parse(pf.bytes);
      EXPECT_GT(uint_field(fs, 10).value_or(0), 0u) << "packet " << index << " has no trusted_packet_sequence_id";
      if (index == 0) {
        EXPECT_EQ(uint_field(fs, 13).value_or(0) & 1, 1u) << "the first packet must clear incremental state";
      }
      const Field* desc = find(fs, 60, 2);
      const Field* event = find(fs, 11, 2);
      EXPECT_NE(!desc, !event) << "packet " << index << " is neither a track descriptor nor a track event";
      if (desc) {
        TraceTrack t = track_descriptor(desc->bytes);
        EXPECT_NE(t.uuid, 0u) << "track descriptor without a uuid";
        EXPECT_FALSE(out.tracks.count(t.uuid)) << "track " << t.uuid << " described twice";
        if (t.parent_uuid) {
          EXPECT_TRUE(out.tracks.count(t.parent_uuid)) << "track " << t.uuid << "'s parent is not described before it";
        }
        out.tracks[t.uuid] = t;
        continue;
      }
      if (!event) continue;
      const auto ts = uint_field(fs, 8);
      EXPECT_TRUE(ts) << "track event packet " << index << " has no timestamp";
      // TrackEvent: debug_annotations 4, type 9, track_uuid 11, name 23.
      const auto es = parse(event->bytes);
      const uint64_t uuid = uint_field(es, 11).value_or(0);
      auto track = out.tracks.find(uuid);
      if (track == out.tracks.end()) {
        ADD_FAILURE() << "event in packet " << index << " on track " << uuid << ", which is not described before it";
        continue;
      }
      TraceTrack& t = track->second;
      const uint64_t time = ts.value_or(0);
      EXPECT_GE(time, last_ts[uuid]) << "time goes back on track \"" << t.name << "\" at packet " << index;
      last_ts[uuid] = time;
      const auto type = uint_field(es, 9);
      const auto name = str_field(es, 23);
      auto& stack = open[uuid];
      if (type == 1u || type == 3u) {  // TYPE_SLICE_BEGIN, TYPE_INSTANT
        EXPECT_TRUE(name && !name->empty()) << "a slice without a name on track \"" << t.name << "\"";
        TraceSlice s{name.value_or(""), time, time, static_cast<int>(stack.size()), stack.empty() ? -1 : stack.back()};
        for (const Field& f : es)
          if (f.number == 4) s.args.insert(annotation(f.bytes));
        s.instant = type == 3u;
        t.slices.push_back(s);
        if (type == 1u) stack.push_back(static_cast<int>(t.slices.size() - 1));
      } else if (type == 2u) {  // TYPE_SLICE_END
        EXPECT_FALSE(name) << "an end event names a slice; ends match the innermost begin";
        if (stack.empty()) {
          ADD_FAILURE() << "an end without a begin on track \"" << t.name << "\" at packet " << index;
          continue;
        }
        t.slices[static_cast<size_t>(stack.back())].end = time;
        stack.pop_back();
      } else {
        ADD_FAILURE() << "event type " << type.value_or(0) << " at packet " << index;
      }
    }
  } catch (const std::exception& e) {
    ADD_FAILURE() << "malformed trace: " << e.what();
  }
  for (auto& [uuid, stack] : open)
    for (int i : stack)
      ADD_FAILURE() << "slice \"" << out.tracks[uuid].slices[static_cast<size_t>(i)].name << "\" never ends";
  return out;
}

}  // namespace mntest
