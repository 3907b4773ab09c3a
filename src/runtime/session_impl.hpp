// Session internals, shared by inference sessions (src/runtime/session.cpp) and training sessions
// (src/train/): the plan, the executable, the names of inputs, parameters and outputs.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lower/lowered.hpp"
#include "meganeura/error.hpp"
#include "meganeura/session.hpp"
#include "meganeura/train.hpp"
#include "plan/planner.hpp"
#include "trace/trace.hpp"
#include "vulkan/executable.hpp"

namespace meganeura {

// The first n bytes of a slice: tensors are padded to whole 32-bit words, host data is not.
inline plan::Slice first_bytes(plan::Slice s, size_t n) {
  s.size = n;
  return s;
}

struct Session::Impl {
  struct Named {
    int tensor;
    Shape shape;
    DType dtype;
    bool set = false;
    Init init{};  // parameters: the default initialiser the graph recorded
  };
  std::map<std::string, Named, std::less<>> inputs, parameters;
  std::map<std::string, Named, std::less<>> states;    // by Graph::state's name (KV caches, ...)
  std::vector<std::pair<std::string, Named>> outputs;  // Graph::outputs order
  std::vector<std::string> node_labels;                // for run-time errors
  std::vector<Op> node_ops;
  plan::Planned planned;
  std::shared_ptr<vk::Context> ctx;
  std::unique_ptr<vk::Executable> exe;
  SessionOptions options;
  uint64_t steps = 0;
  std::unique_ptr<trace::SessionHold> trace_hold;  // MEGANEURA_TRACE: this session's number

  static std::string known(const std::map<std::string, Named, std::less<>>& m) {
    std::string s;
    for (auto& [name, v] : m) s += (s.empty() ? "" : ", ") + ("\"" + name + "\"");
    return s.empty() ? "none" : s;
  }

  Named& find(std::map<std::string, Named, std::less<>>& m, std::string_view name, const char* what,
              const std::map<std::string, Named, std::less<>>& other, const char* other_what, const char* other_call) {
    auto it = m.find(name);
    if (it != m.end()) return it->second;
    std::string msg = "unknown " + std::string(what) + " \"" + std::string(name) + "\"";
    if (other.count(name))
      msg += ": it is " + std::string(other_what) + "; use " + other_call;
    else
      msg += "; the session's " + std::string(what) + "s are: " + known(m);
    throw NameError(msg);
  }

  static void check_value(const Named& n, std::string_view name, const char* what, const HostTensor& v) {
    if (v.dtype != n.dtype)
      throw DTypeError(std::string(what) + " \"" + std::string(name) + "\" is " + std::string(dtype_name(n.dtype)) +
                       " " + shape_str(n.shape) + ", got " + std::string(dtype_name(v.dtype)) + " data");
    uint64_t want = static_cast<uint64_t>(numel(n.shape)) * dtype_size(n.dtype);
    if (v.bytes.size() != want)
      throw SizeError(std::string(what) + " \"" + std::string(name) + "\" has shape " + shape_str(n.shape) + " (" +
                      std::to_string(numel(n.shape)) + " " + std::string(dtype_name(n.dtype)) + " values), got " +
                      std::to_string(v.bytes.size() / dtype_size(v.dtype)) + " values");
  }

  // What a training session adds (src/train/): names for what its graph computes. Each step
  // runs on the device alone (train/update_graph.hpp): nothing here runs per step.
  struct Training {
    TrainConfig config;
    struct Param {
      std::string name;
      int grad = -1;                                   // tensor (graph node) of this step's gradient
      std::vector<std::pair<std::string, int>> state;  // ("m", State leaf), ("v", ...), ("momentum", ...)
    };
    std::vector<Param> params;  // the trainable ones, in graph order
    int counters = -1;          // State u32 [4]: micro-steps, optimizer steps
    int settings = -1;          // Constant f32 [8]: the step scalars' settings (schedule, lr, betas)
    size_t loss_output = 0;     // index into outputs
  };
  std::optional<Training> train;

  // Plans `low`, creates the executable, uploads params blocks and constants, indexes names.
  static std::unique_ptr<Impl> build(const Graph& g, const lower::Lowered& low, const SessionOptions& options);
  // Lowers `g` for the session's device (the nodes its outputs and `keep` need), adds the
  // command lists of options.programs and, with forward_end > 0, one of the calls of the nodes
  // below it (a training session's forward pass), then builds.
  struct Compile {
    bool optimizing = false;  // the graph went through the optimizer: lowering fuses too
    int forward_end = 0;
  };
  static std::unique_ptr<Impl> compile(const Graph& g, const std::vector<int>& keep, const Compile& how,
                                       const SessionOptions& options);
  // The largest buffer the device takes and binds (maxMemoryAllocationSize, maxStorageBufferRange),
  // or options.max_buffer_bytes where lower.
  static uint64_t largest_buffer(const SessionOptions& options);
  // Throws the first failure a kernel reported in the status block (and clears it).
  void check_status();
  // Draws the default initialiser of every parameter (or of one) that has one and was never
  // set or loaded: the session's first use of it. Lazily, so loaded weights cost no draws.
  void fill_defaults();
  void fill_default(const std::string& name, Named& parameter);
  // Throws naming every parameter, and every input (or every one in `only`), never set.
  // `call` ("step()", "run(1)") names what was asked in the error.
  void check_inputs_set(std::string_view call, const std::vector<std::string>* only = nullptr) const;
  // Per SessionOptions::programs entry (extra command list 1 + i): the inputs it reads.
  std::vector<std::vector<std::string>> program_inputs;
  // Runs command list `list` (0: the step; 1 + i: extra list i) and, with MEGANEURA_TRACE, traces
  // it: a CPU slice around submit and wait, a GPU slice per dispatch (src/runtime/session_trace.cpp).
  void run_list(size_t list);
  bool evaluated = false;  // evaluate() ran: outputs are readable
  // The command list of the derived calls (KernelCall::derived: weights staged for the tensor
  // cores), 0 if none; run before the next step or program after any parameter was written.
  size_t derived_list = 0;
  bool derived_stale = true;
  uint64_t staged_weight_bytes = 0;  // what the derived calls write (MemoryStats::staged_weights)
  void refresh_derived();
  // A parameter's bytes were written (set, loaded, or default-initialised): it is set, and what
  // the derived list computed from parameters is stale.
  void wrote_parameter(Named& parameter) {
    parameter.set = true;
    derived_stale = true;
    ++parameter_writes;
  }
  // How many times a parameter was written, for copies made from them outside the derived list
  // (the persistent decoder's f16 weights).
  uint64_t parameter_writes = 0;
};

Session make_session(std::unique_ptr<Session::Impl> impl);
// Runs command list `list` of `exe` (made from `program`) and, with MEGANEURA_TRACE, traces it as
// `name`: a CPU slice around submit and wait, a GPU slice per dispatch (the executable's
// timestamps; src/runtime/session_trace.cpp).
void run_traced(vk::Executable& exe, const plan::Program& program, size_t list, const std::string& name,
                const trace::Args& args);
// A session's internals, for stages that work on its buffers (runtime/persistent_decode.cpp).
Session::Impl& impl_of(Session& session);

}  // namespace meganeura
