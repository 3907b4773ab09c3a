// A .safetensors file — header length, JSON header, dtypes, shapes, data offsets — read by both
// readers: read_safetensors (copies everything) and Checkpoint (maps, reads on demand). They
// share the header check, so they must agree: both fail, or both give the same tensors — except
// that a Checkpoint also lists tensors of the format's dtypes meganeura does not read (I64, U8,
// ...; info() and read() of one are a DTypeError), which make read_safetensors refuse the file.
#include <optional>

#include "input_file.hpp"
#include "meganeura/io.hpp"

namespace mn = meganeura;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = mn::fuzz::write_input("input.safetensors", data, size);
  mn::TensorFile file;
  std::optional<mn::Checkpoint> checkpoint;
  const bool whole = mn::fuzz::reads([&] { file = mn::read_safetensors(path); });
  const bool mapped = mn::fuzz::reads([&] { checkpoint.emplace(mn::Checkpoint::open(path)); });
  if (whole && !mapped) mn::fuzz::fail("only read_safetensors accepts the file");
  if (!mapped) return 0;
  bool unreadable = false;  // a tensor of a dtype meganeura does not read
  for (const std::string& name : checkpoint->names()) {
    std::optional<mn::Checkpoint::Info> info;
    try {
      info = checkpoint->info(name);
    } catch (const mn::DTypeError&) {
      unreadable = true;
      continue;
    }
    const mn::HostTensor t = checkpoint->read(name, info->dtype);
    if (mn::is_float(info->dtype)) (void)checkpoint->read(name, mn::f32);  // f16/bf16 -> f32 conversion
    if (!whole) continue;
    const auto it = file.tensors.find(name);
    if (it == file.tensors.end() || it->second.shape != t.shape || it->second.dtype != t.dtype ||
        it->second.bytes != t.bytes)
      mn::fuzz::fail("the readers disagree on tensor \"" + name + "\"");
  }
  if (whole == unreadable)
    mn::fuzz::fail(whole ? "read_safetensors read a tensor of a dtype Checkpoint does not"
                         : "only Checkpoint accepts the file, and it can read every tensor");
  if (whole && checkpoint->names().size() != file.tensors.size())
    mn::fuzz::fail("the readers see different tensor counts");
  return 0;
}
