// Tensor files: safetensors (the Hugging Face format) read and written by name.
#pragma once
#include <map>
#include <string>

#include "meganeura/session.hpp"

namespace meganeura {

struct TensorFile {
  std::map<std::string, HostTensor> tensors;
  std::map<std::string, std::string> metadata;  // the header's "__metadata__"
};

// Reads a .safetensors file (F32, F16, BF16, I32, U32; other dtypes are an error naming the
// tensor). Every malformed file — bad header length, bad JSON, offsets out of range or
// overlapping, shape/size mismatch — throws Error naming the file and the tensor.
TensorFile read_safetensors(const std::string& path);

// Writes atomically: to "<path>.tmp-<pid>", fsync, rename over path, fsync the directory. An
// interrupted write leaves any previous file at `path` intact.
void write_safetensors(const std::string& path, const TensorFile& file);

}  // namespace meganeura
