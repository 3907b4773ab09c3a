// A compiled graph on a device. Building a session lowers the graph to kernels, plans its
// memory, creates the pipelines and records one command buffer; step() replays it.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "meganeura/dtype.hpp"
#include "meganeura/graph.hpp"
#include "meganeura/host_tensor.hpp"

namespace meganeura {

class Checkpoint;

// What a session knows of a parameter: its shape, dtype and the default initialiser its graph
// recorded (Init::Kind::none for a plain Graph::parameter).
struct ParameterInfo {
  Shape shape;
  DType dtype = f32;
  Init init;
};

struct MemoryStats {
  uint64_t parameters = 0;         // parameter, constant and state bytes (staged_weights included)
  uint64_t staged_weights = 0;     // weights kept as f16 for the tensor cores (inference on NVIDIA)
  uint32_t parameter_buffers = 1;  // buffers they span (more when past the device's largest)
  uint64_t io = 0;                 // input bytes on the device
  uint64_t arena = 0;              // peak bytes of intermediates and outputs (after reuse)
  uint32_t arena_buffers = 1;      // buffers the arena spans (more when past the device's largest)
  uint64_t arena_unshared = 0;     // what the arena would need with no reuse (sum of all tensors)
  uint64_t total_device = 0;       // all device-local memory the session holds
};

struct SessionStats {
  uint64_t recordings = 0;  // times the step command buffer was recorded (1, forever)
  uint64_t steps = 0;
  uint32_t dispatches = 0;  // per step
  uint32_t barriers = 0;    // per step
};

struct SessionOptions {
  bool reuse_memory = true;  // liveness-based arena reuse (off: every tensor gets its own bytes)
  bool profile = false;      // GPU timestamps around every dispatch (see Session::profile)
  bool optimize =
      true;  // run the e-graph optimizer and fuse elementwise chains (MEGANEURA_OPTIMIZE=0 turns it off everywhere)
  // Programs: extra command lists over the same buffers, each running only what the named
  // outputs need and downloading only them; Session::run(i) replays program i. A model's prefill
  // and decode steps, sharing its weights and KV cache, are two programs of one session.
  std::vector<std::vector<std::string>> programs{};
  // Largest buffer to place parameters or intermediates in (0: what the device allows); larger
  // models span several buffers. Lowered only to test that split on small models.
  uint64_t max_buffer_bytes = 0;
  // The Vulkan device: -1, the default one (MEGANEURA_DEVICE, else the first GPU); n, the n-th of
  // list_devices(). Sessions of one value share a logical device; each value has its own, so -1
  // and 0 are two logical devices even where both name the same GPU (docs/api.md#threads).
  int device = -1;
};

class Session {
 public:
  ~Session();
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;

  // Sets an input or parameter by name. Checks dtype and element count (shape must match in
  // element count; the data is row-major). Unknown names throw NameError listing known names.
  // A parameter with a default initialiser (Graph::parameter's Init, recorded by the nn layers)
  // that nothing set or loaded is drawn from seed 0 on first use — the first step(), run(),
  // evaluate(), read_parameter() or save() — as init::defaults(session, 0) draws it; setting or
  // loading it wins.
  void set_input(std::string_view name, const HostTensor& value);
  void set_input(std::string_view name, std::span<const float> values);
  void set_parameter(std::string_view name, const HostTensor& value);
  void set_parameter(std::string_view name, std::span<const float> values);
  // Sets each parameter in `names` from the checkpoint's tensor of the same name (the shapes must
  // match; float dtypes convert to the parameter's), at the speed of the page cache: several
  // threads convert from the memory-mapped files straight into reused staging buffers while
  // the GPU copies (models::load_weights uses this). Everything is checked before any byte moves.
  void set_parameters(const Checkpoint& checkpoint, std::span<const std::string> names);

  void step();               // runs the recorded command buffer once and waits for it
  void run(size_t program);  // runs SessionOptions::programs[program] (recorded once, too)
  // Training sessions: the forward pass alone (outputs updated, parameters untouched).
  void evaluate();

  HostTensor read_output(std::string_view name) const;
  HostTensor read_parameter(std::string_view name) const;
  ParameterInfo parameter_info(std::string_view name) const;  // shape, dtype, default initialiser

  // Training sessions (build_session): the loss of the last step, a parameter's gradient from
  // the last step (zeros for frozen or unused parameters), optimizer steps taken so far.
  float read_loss() const;
  HostTensor read_grad(std::string_view name) const;
  int64_t optimizer_steps() const;
  bool is_training() const;
  // Parameters (and, for training sessions, optimizer state and step count) as safetensors.
  // save() is atomic: an interrupted save leaves the previous file intact. load() checks names,
  // shapes and dtypes; a tensor the session lacks, or a missing one, is an error.
  void save(const std::string& path) const;
  void load(const std::string& path);

  std::vector<std::string> input_names() const;
  std::vector<std::string> parameter_names() const;
  std::vector<std::string> output_names() const;

  MemoryStats memory() const;
  SessionStats stats() const;
  // One line per command of the recorded step: dispatch labels, copies, barriers.
  std::string listing() const;
  // The same for SessionOptions::programs[program], as run(program) records it.
  std::string listing(size_t program) const;
  // With SessionOptions::profile: (label, GPU ns) of each dispatch in the last step.
  std::vector<std::pair<std::string, double>> profile() const;
  // The same for the last run(program) (empty before the first).
  std::vector<std::pair<std::string, double>> profile(size_t program) const;

  struct Impl;

 private:
  friend Session build_inference_session(const Graph&, const SessionOptions&);
  friend Session make_session(std::unique_ptr<Impl>);
  friend class Trainer;            // completes a Cosine schedule's total_steps
  friend Impl& impl_of(Session&);  // the library's own stages (runtime/session_impl.hpp)
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

Session build_inference_session(const Graph& graph, const SessionOptions& options = {});

}  // namespace meganeura
