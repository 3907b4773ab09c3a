// Tensor files: safetensors (the Hugging Face format) read and written by name.
#pragma once
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "meganeura/host_tensor.hpp"

namespace meganeura {

struct TensorFile {
  std::map<std::string, HostTensor> tensors;
  std::map<std::string, std::string> metadata;  // the header's "__metadata__"
};

// Reads a .safetensors file (F32, F16, BF16, I32, U32; other dtypes are an error naming the
// tensor). Every malformed file — bad header length, bad JSON, offsets out of range or
// overlapping, shape/size mismatch — throws Error naming the file and the tensor.
TensorFile read_safetensors(const std::string& path);

// A checkpoint directory as Hugging Face writes one: model.safetensors when it fits in
// max_shard_bytes, else model-0000i-of-0000N.safetensors shards (tensors in name order, a new
// shard when the next would pass the limit) and model.safetensors.index.json, written last.
// Every file is written atomically (write_safetensors). Checkpoint::open reads either form.
void write_checkpoint(const std::string& dir, const TensorFile& file, uint64_t max_shard_bytes = 5'000'000'000ULL);

// Tensors by name from memory-mapped safetensors files, read on demand: one file, a sharded
// checkpoint (model.safetensors.index.json and the shards its "weight_map" names), or a
// directory holding model.safetensors or that index. Every header is checked when opened (as
// read_safetensors does); a name the checkpoint lacks is a NameError naming the checkpoint.
// Tensors of the format's other dtypes (I64, F64, U8, BOOL, ...: PyTorch's num_batches_tracked)
// are listed and checked but not read: info() and read() of one are a DTypeError naming it.
class Checkpoint {
 public:
  static Checkpoint open(const std::string& path);
  ~Checkpoint();
  Checkpoint(Checkpoint&&) noexcept;
  Checkpoint& operator=(Checkpoint&&) noexcept;

  struct Info {
    DType dtype;
    Shape shape;
    std::string file;  // the safetensors file holding it
  };
  bool contains(std::string_view name) const;
  std::vector<std::string> names() const;  // sorted
  Info info(std::string_view name) const;
  // The tensor converted to `as`: float dtypes convert among themselves (f16/bf16 -> f32 exactly);
  // an integer tensor must be read as its own dtype.
  HostTensor read(std::string_view name, DType as) const;
  // Values [first, first + out.size() / dtype_size(as)) of the tensor, converted as read() does,
  // into `out` (no allocation: Session::set_parameters streams weights through this).
  void read_into(std::string_view name, DType as, uint64_t first, std::span<std::byte> out) const;
  const std::string& path() const;

 private:
  struct Impl;
  explicit Checkpoint(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Writes atomically: to "<path>.tmp-<tid>" (the calling thread's id), fsync, rename over path,
// fsync the directory. An interrupted write leaves any previous file at `path` intact; two
// threads saving one path at once leave one of the two files, whole.
void write_safetensors(const std::string& path, const TensorFile& file);

}  // namespace meganeura
