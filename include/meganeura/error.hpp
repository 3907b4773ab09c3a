// Every error meganeura raises is a meganeura::Error whose message starts with "meganeura: " and
// names the node, tensor, file or Vulkan call at fault. Subclasses let callers catch one class.
#pragma once
#include <stdexcept>
#include <string>

namespace meganeura {

struct Error : std::runtime_error {
  explicit Error(const std::string& what) : std::runtime_error("meganeura: " + what) {}
};
// A shape or rank that an op cannot take (raised while the graph is built).
struct ShapeError : Error {
  using Error::Error;
};
// A dtype that an op or a buffer cannot take.
struct DTypeError : Error {
  using Error::Error;
};
// An input, parameter or output name that the session does not know.
struct NameError : Error {
  using Error::Error;
};
// Host data whose size does not match the tensor it is meant for.
struct SizeError : Error {
  using Error::Error;
};
// A device-side failure: a Vulkan call failed, the device was lost, memory ran out.
struct DeviceError : Error {
  using Error::Error;
};
struct OutOfMemoryError : DeviceError {
  using DeviceError::DeviceError;
};
// A kernel found bad data at run time (for example a gather index out of range).
struct RuntimeDataError : Error {
  using Error::Error;
};
// A Hugging Face Hub download failed (hub.hpp): the network, an HTTP status, a size or sha256
// check, or offline mode without a cached copy. The message names the repository, file and URL.
struct HubError : Error {
  using Error::Error;
};
// The repository or revision does not exist on the Hub (HTTP 404).
struct HubNotFoundError : HubError {
  using HubError::HubError;
};
// The repository exists but has no such file at that revision (HTTP 404 for the file alone).
struct HubFileNotFoundError : HubNotFoundError {
  using HubNotFoundError::HubNotFoundError;
};
// HTTP 401/403: a gated or private repository (or one that does not exist) and no token with
// access to it; the message says to set HF_TOKEN.
struct HubAuthError : HubError {
  using HubError::HubError;
};

}  // namespace meganeura
