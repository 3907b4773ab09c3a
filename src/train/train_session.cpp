// Training sessions: differentiate a copy of the graph, append the update ops (update_graph.hpp),
// and compile it all once, like any graph. The forward part alone is a second command list
// (evaluate()).
#include "train/train_session.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <span>

#include "meganeura/autodiff.hpp"
#include "meganeura/io.hpp"
#include "meganeura/train.hpp"
#include "optimize/optimize.hpp"
#include "runtime/session_impl.hpp"
#include "train/training_graph.hpp"
#include "train/update_graph.hpp"

namespace meganeura {

Session build_session(const Graph& user_graph, Tensor loss, const TrainConfig& config) {
  trace::Scope build("build training session", {{"nodes", static_cast<int64_t>(user_graph.size())}});
  train::TrainingGraph tg = train::build_training_graph(user_graph, loss, config);
  Graph& g = *tg.graph;
  const train::UpdateGraph update = train::append_update_graph(g, tg.params, tg.grads, config);
  std::vector<int> keep = tg.grads;
  keep.insert(keep.end(), update.roots.begin(), update.roots.end());
  // Lowering's fusions belong to the optimizer: off with it. The forward pass alone is the
  // second command list (evaluate()).
  const SessionOptions options{.reuse_memory = config.reuse_memory,
                               .profile = config.profile,
                               .max_buffer_bytes = config.max_buffer_bytes,
                               .device = config.device};
  auto impl = Session::Impl::compile(g, keep, {.optimizing = tg.optimized, .forward_end = tg.forward_end}, options);
  Session::Impl::Training tr;
  tr.config = config;
  for (const train::UpdateGraph::Param& p : update.params) tr.params.push_back({p.name, p.grad, p.state});
  tr.counters = update.counters;
  tr.settings = update.settings;
  tr.loss_output = g.outputs().size() - 1;
  impl->train = std::move(tr);
  return make_session(std::move(impl));
}

namespace train {

void set_schedule(Session::Impl& impl, const Schedule& schedule) {
  Session::Impl::Training& tr = *impl.train;
  tr.config.schedule = schedule;
  const std::vector<float> values = step_settings(tr.config);
  impl.exe->write(first_bytes(impl.planned.tensor[static_cast<size_t>(tr.settings)], values.size() * 4),
                  std::as_bytes(std::span(values)));
}

}  // namespace train

// The step counters on the device: micro-steps and optimizer steps.
static std::array<uint32_t, 2> read_counters(const Session::Impl& impl) {
  std::array<uint32_t, 2> c{};
  std::vector<std::byte> bytes(sizeof c);
  impl.exe->read(first_bytes(impl.planned.tensor[static_cast<size_t>(impl.train->counters)], bytes.size()), bytes);
  std::memcpy(c.data(), bytes.data(), sizeof c);
  return c;
}

void Session::evaluate() {
  if (!impl_->train)
    throw Error("evaluate() is for training sessions; an inference session's step() is already forward-only");
  impl_->fill_defaults();
  impl_->check_inputs_set("evaluate()");
  impl_->refresh_derived();
  impl_->run_list(1);
  impl_->evaluated = true;
  impl_->check_status();
}

float Session::read_loss() const {
  if (!impl_->train) throw Error("read_loss() is for training sessions (build_session); read the output instead");
  return read_output(train::kTrainingLossOutput).data<float>()[0];
}

HostTensor Session::read_grad(std::string_view name) const {
  if (!impl_->train) throw Error("read_grad() is for training sessions (build_session)");
  const auto& n = impl_->find(impl_->parameters, name, "parameter", impl_->inputs, "an input", "read_output");
  HostTensor t{n.shape, f32, std::vector<std::byte>(static_cast<size_t>(numel(n.shape)) * 4)};
  for (const auto& p : impl_->train->params)
    if (p.name == name && impl_->steps > 0)
      impl_->exe->read(first_bytes(impl_->planned.tensor[static_cast<size_t>(p.grad)], t.bytes.size()), t.bytes);
  return t;  // frozen parameters (and before the first step): zeros
}

int64_t Session::optimizer_steps() const { return impl_->train ? read_counters(*impl_)[1] : 0; }
bool Session::is_training() const { return impl_->train.has_value(); }

// Checkpoints: parameters by name; optimizer state as "optimizer.<param>.<state>"; step
// counters in the metadata.
void Session::save(const std::string& path) const {
  TensorFile f;
  for (const std::string& name : parameter_names()) f.tensors[name] = read_parameter(name);
  f.metadata["format"] = "meganeura";
  if (impl_->train) {
    for (const auto& p : impl_->train->params)
      for (const auto& [state, tensor] : p.state) {
        HostTensor t = read_parameter(p.name);
        t.dtype = f32;
        impl_->exe->read(first_bytes(impl_->planned.tensor[static_cast<size_t>(tensor)], t.bytes.size()), t.bytes);
        f.tensors["optimizer." + p.name + "." + state] = std::move(t);
      }
    const auto [micro_steps, optimizer_steps] = read_counters(*impl_);
    f.metadata["optimizer_steps"] = std::to_string(optimizer_steps);
    f.metadata["micro_steps"] = std::to_string(micro_steps);
  }
  write_safetensors(path, f);
}

void Session::load(const std::string& path) {
  TensorFile f = read_safetensors(path);
  // Everything the session holds, by checkpoint name: parameters and optimizer state.
  struct Slot {
    plan::Slice slice;
    Shape shape;
    DType dtype;
  };
  std::map<std::string, Slot> slots;
  for (const auto& [name, n] : impl_->parameters)
    slots[name] = {impl_->planned.tensor[static_cast<size_t>(n.tensor)], n.shape, n.dtype};
  if (impl_->train)
    for (const auto& p : impl_->train->params)
      for (const auto& [state, tensor] : p.state)
        slots["optimizer." + p.name + "." + state] = {impl_->planned.tensor[static_cast<size_t>(tensor)],
                                                      impl_->parameters.at(p.name).shape, f32};
  for (const auto& [name, slot] : slots)
    if (!f.tensors.count(name)) throw NameError(path + ": the checkpoint has no tensor \"" + name + "\"");
  for (const auto& [name, t] : f.tensors) {
    auto s = slots.find(name);
    if (s == slots.end())
      throw NameError(path + ": tensor \"" + name + "\" matches no parameter or optimizer state of this session");
    if (t.dtype != s->second.dtype || t.shape != s->second.shape)
      throw ShapeError(path + ": tensor \"" + name + "\" is " + std::string(dtype_name(t.dtype)) + " " +
                       shape_str(t.shape) + ", the session needs " + std::string(dtype_name(s->second.dtype)) + " " +
                       shape_str(s->second.shape));
  }
  // The step counters (metadata strings written by save()): decimal, non-negative, whole.
  int64_t optimizer_steps = 0, micro_steps = 0;
  if (impl_->train) {
    auto number = [&](const char* key) {
      auto it = f.metadata.find(key);
      if (it == f.metadata.end()) return int64_t{0};
      const std::string& s = it->second;
      int64_t v = 0;
      auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (ec != std::errc() || end != s.data() + s.size() || v < 0 || v > int64_t{UINT32_MAX})
        throw Error(path + ": __metadata__ entry \"" + key + "\" is \"" +
                    (s.size() > 40 ? s.substr(0, 40) + "..." : s) +
                    "\", not a step count (a decimal integer from 0 to 4294967295)");
      return v;
    };
    optimizer_steps = number("optimizer_steps");
    micro_steps = number("micro_steps");
  }
  // Checked in full before anything is written: a bad file leaves the session as it was.
  for (const auto& [name, t] : f.tensors) {
    impl_->exe->write(first_bytes(slots[name].slice, t.bytes.size()), t.bytes);
    if (auto p = impl_->parameters.find(name); p != impl_->parameters.end()) impl_->wrote_parameter(p->second);
  }
  if (impl_->train) {
    const std::array<uint32_t, 4> counters = {static_cast<uint32_t>(micro_steps),
                                              static_cast<uint32_t>(optimizer_steps), 0, 0};
    impl_->exe->write(first_bytes(impl_->planned.tensor[static_cast<size_t>(impl_->train->counters)], sizeof counters),
                      std::as_bytes(std::span(counters)));
  }
}

}  // namespace meganeura
