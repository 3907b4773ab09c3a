#include "trace/proto_writer.hpp"

#include <bit>

namespace meganeura::trace {

void ProtoWriter::varint(uint64_t v) {
  while (v >= 0x80) {
    bytes_.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  bytes_.push_back(static_cast<char>(v));
}

void ProtoWriter::uint(uint32_t field, uint64_t value) {
  tag(field, 0);
  varint(value);
}

void ProtoWriter::sint(uint32_t field, int64_t value) {
  tag(field, 0);
  varint(static_cast<uint64_t>(value));  // negative values take ten bytes (int64, not sint64)
}

void ProtoWriter::dbl(uint32_t field, double value) {
  tag(field, 1);
  const auto bits = std::bit_cast<uint64_t>(value);
  for (int i = 0; i < 8; ++i) bytes_.push_back(static_cast<char>(bits >> (8 * i)));  // little-endian
}

void ProtoWriter::str(uint32_t field, std::string_view value) {
  tag(field, 2);
  varint(value.size());
  bytes_.append(value);
}

}  // namespace meganeura::trace
