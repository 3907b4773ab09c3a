// Session::set_parameters: a model's weights from a checkpoint, streamed (vk::Executable::
// write_streamed) instead of one staging buffer and one wait per tensor.
#include <string>
#include <vector>

#include "meganeura/io.hpp"
#include "runtime/session_impl.hpp"
#include "runtime/stage_options.hpp"

namespace meganeura {

void Session::set_parameters(const Checkpoint& checkpoint, std::span<const std::string> names) {
  std::vector<vk::StreamedWrite> writes;
  std::vector<Session::Impl::Named*> targets;
  for (const std::string& name : names) {
    auto& n = impl_->find(impl_->parameters, name, "parameter", impl_->inputs, "an input", "set_input");
    if (!checkpoint.contains(name))
      throw NameError(checkpoint.path() + ": has no tensor \"" + name + "\" for parameter \"" + name + "\" " +
                      shape_str(n.shape) + " (weights of another model or configuration?)");
    const Checkpoint::Info info = checkpoint.info(name);
    if (info.shape != n.shape)
      throw ShapeError(info.file + ": tensor \"" + name + "\" is " + shape_str(info.shape) + " but parameter \"" +
                       name + "\" is " + shape_str(n.shape) + " (weights of another model or configuration?)");
    if (info.dtype != n.dtype && !(is_float(info.dtype) && is_float(n.dtype)))
      throw DTypeError(info.file + ": tensor \"" + name + "\" is " + std::string(dtype_name(info.dtype)) +
                       " and cannot be read as " + std::string(dtype_name(n.dtype)) + " for parameter \"" + name +
                       "\"");
    const DType as = n.dtype;
    const uint64_t bytes = static_cast<uint64_t>(numel(n.shape)) * dtype_size(as);
    const plan::Slice dst = first_bytes(impl_->planned.tensor[static_cast<size_t>(n.tensor)], bytes);
    writes.push_back({dst, [&checkpoint, name, as](uint64_t offset, std::span<std::byte> out) {
                        checkpoint.read_into(name, as, offset / dtype_size(as), out);
                      }});
    targets.push_back(&n);
  }
  impl_->exe->write_streamed(writes, runtime::upload_chunk_bytes());
  for (auto* n : targets) impl_->wrote_parameter(*n);
}

}  // namespace meganeura
