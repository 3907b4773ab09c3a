// The few protobuf encodings a Perfetto trace needs (varints, fixed64 doubles, length-delimited
// strings and sub-messages), so that writing one costs no dependency on libprotobuf.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace meganeura::trace {

// Appends fields to a byte string in protobuf wire format. A sub-message is built in a writer of
// its own and added with message(): its length must be known before its bytes.
class ProtoWriter {
 public:
  void uint(uint32_t field, uint64_t value);         // uint32/uint64/enum/bool (wire type 0)
  void sint(uint32_t field, int64_t value);          // int32/int64: two's complement, as protobuf does
  void dbl(uint32_t field, double value);            // double (wire type 1)
  void str(uint32_t field, std::string_view value);  // string/bytes (wire type 2)
  void message(uint32_t field, const ProtoWriter& m) { str(field, m.bytes_); }  // sub-message

  const std::string& bytes() const { return bytes_; }
  std::string take() { return std::move(bytes_); }

 private:
  void varint(uint64_t v);
  void tag(uint32_t field, uint32_t wire_type) { varint(uint64_t{field} << 3 | wire_type); }
  std::string bytes_;
};

}  // namespace meganeura::trace
