// Training sessions: differentiate a copy of the graph, lower forward and backward, append the
// optimizer, and record it all once. The forward part alone is a second command list
// (evaluate()).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>

#include "meganeura/autodiff.hpp"
#include "meganeura/io.hpp"
#include "meganeura/train.hpp"
#include "runtime/session_impl.hpp"
#include "runtime/stage_options.hpp"
#include "optimize/optimize.hpp"
#include "train/optimizer_calls.hpp"
#include "train/training_graph.hpp"

namespace meganeura {

Session build_session(const Graph& user_graph, Tensor loss, const TrainConfig& config) {
  trace::Scope build("build training session", {{"nodes", static_cast<int64_t>(user_graph.size())}});
  train::TrainingGraph tg = train::build_training_graph(user_graph, loss, config);
  const Graph& g = *tg.graph;
  lower::Lowered low;
  Session::Impl::Training tr;
  {
    trace::Scope phase("lower");
    // Lowering's fusions belong to the optimizer: off with it.
    low = lower::lower(g, tg.grads,
                       runtime::lower_options(vk::Context::get(config.device)->info(), optimize::enabled(config.optimize)));
    size_t forward_calls = 0;
    while (forward_calls < low.calls.size() && low.calls[forward_calls].node < tg.forward_end) ++forward_calls;
    lower::Lowered::CommandList forward;
    for (size_t i = 0; i < forward_calls; ++i) forward.calls.push_back(i);
    low.extra_lists = {std::move(forward)};

    tr.config = config;
    std::vector<train::ParamGrad> pg;
    for (size_t i = 0; i < tg.params.size(); ++i) pg.push_back({tg.params[i], tg.grads[i]});
    train::append_optimizer_calls(g, low, pg, tr, train::update_pack_bytes(Session::Impl::largest_buffer(config.device)));
    tr.loss_output = g.outputs().size() - 1;
  }
  auto impl = Session::Impl::build(g, low, {.reuse_memory = config.reuse_memory, .profile = config.profile, .device = config.device});
  impl->train = std::move(tr);
  return make_session(std::move(impl));
}

// The per-step scalars: the scheduled lr, Adam's bias corrections, whether this step applies.
void Session::Impl::before_train_step() {
  Training& tr = *train;
  const TrainConfig& cfg = tr.config;
  const int64_t t = tr.optimizer_steps;
  kernels::Hyper h{};
  float lr = std::visit([](const auto& o) { return o.lr; }, cfg.optimizer);
  h.lr = lr * schedule_factor(cfg.schedule, t);
  std::visit(
      [&](const auto& o) {
        if constexpr (!std::is_same_v<std::decay_t<decltype(o)>, SGD>) {
          h.bias1 = 1.0f - static_cast<float>(std::pow(static_cast<double>(o.beta1), static_cast<double>(t + 1)));
          h.bias2 = 1.0f - static_cast<float>(std::pow(static_cast<double>(o.beta2), static_cast<double>(t + 1)));
        }
      },
      cfg.optimizer);
  h.clip_scale = 1.0f;
  h.apply = (tr.micro_steps + 1) % std::max(cfg.accumulation_steps, 1) == 0 ? 1u : 0u;
  const plan::Slice& s = planned.upload[static_cast<size_t>(tr.hyper)];
  std::memcpy(static_cast<std::byte*>(exe->mapped(s.buffer)) + s.offset, &h, sizeof(h));
}

void Session::Impl::after_train_step() {
  Training& tr = *train;
  ++tr.micro_steps;
  if (tr.micro_steps % std::max(tr.config.accumulation_steps, 1) == 0) ++tr.optimizer_steps;
}

void Session::evaluate() {
  if (!impl_->train) throw Error("evaluate() is for training sessions; an inference session's step() is already forward-only");
  impl_->fill_defaults();
  impl_->check_inputs_set();
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

int64_t Session::optimizer_steps() const { return impl_->train ? impl_->train->optimizer_steps : 0; }
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
    f.metadata["optimizer_steps"] = std::to_string(impl_->train->optimizer_steps);
    f.metadata["micro_steps"] = std::to_string(impl_->train->micro_steps);
  }
  write_safetensors(path, f);
}

void Session::load(const std::string& path) {
  TensorFile f = read_safetensors(path);
  // Everything the session holds, by checkpoint name: parameters and optimizer state.
  struct Slot { plan::Slice slice; Shape shape; DType dtype; };
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
      throw ShapeError(path + ": tensor \"" + name + "\" is " + std::string(dtype_name(t.dtype)) + " " + shape_str(t.shape) +
                       ", the session needs " + std::string(dtype_name(s->second.dtype)) + " " + shape_str(s->second.shape));
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
      if (ec != std::errc() || end != s.data() + s.size() || v < 0)
        throw Error(path + ": __metadata__ entry \"" + key + "\" is \"" + (s.size() > 40 ? s.substr(0, 40) + "..." : s) +
                    "\", not a step count (a non-negative decimal integer)");
      return v;
    };
    optimizer_steps = number("optimizer_steps");
    micro_steps = number("micro_steps");
  }
  // Checked in full before anything is written: a bad file leaves the session as it was.
  for (const auto& [name, t] : f.tensors) {
    impl_->exe->write(first_bytes(slots[name].slice, t.bytes.size()), t.bytes);
    if (auto p = impl_->parameters.find(name); p != impl_->parameters.end()) p->second.set = true;
  }
  if (impl_->train) {
    impl_->train->optimizer_steps = optimizer_steps;
    impl_->train->micro_steps = micro_steps;
  }
}

}  // namespace meganeura
