// The checked layout of a safetensors file: its tensors' names, dtypes, shapes and byte ranges,
// shared by read_safetensors (which copies everything) and Checkpoint (which reads on demand).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "io/file.hpp"
#include "meganeura/graph.hpp"

namespace meganeura::io {

// The safetensors dtypes meganeura reads, for messages.
inline constexpr const char* kReadableDtypes = "F32, F16, BF16, I32, U32";

struct SafetensorsEntry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin, end;  // relative to the data buffer
  // A standard safetensors dtype meganeura does not read ("I64": PyTorch's num_batches_tracked),
  // kept so that the rest of its file loads; empty for the dtypes it reads (then `dtype` holds it).
  std::string foreign;
};

// Parses and checks the header of a mapped safetensors file (every malformed field is an Error
// naming the file and the tensor); data_start gets the data buffer's file offset. A tensor of a
// foreign dtype is an Error unless `keep_foreign`.
std::vector<SafetensorsEntry> read_layout(const std::string& path, const MappedFile& file, uint64_t& data_start,
                                          std::map<std::string, std::string>* metadata = nullptr,
                                          bool keep_foreign = false);

}  // namespace meganeura::io
