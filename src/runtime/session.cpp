// Sessions: build (lower -> plan -> record) and the per-step API by name.
#include "meganeura/session.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <sstream>

#include "kernels/spirv.hpp"
#include "lower/lowered.hpp"
#include "meganeura/error.hpp"
#include "meganeura/init.hpp"
#include "optimize/optimize.hpp"
#include "plan/planner.hpp"
#include "runtime/optimize_options.hpp"
#include "runtime/session_impl.hpp"
#include "runtime/stage_options.hpp"
#include "util/env.hpp"
#include "vulkan/executable.hpp"

namespace meganeura {

void Session::Impl::check_status() {
  auto* st = static_cast<kernels::Status*>(exe->mapped(planned.program.status_buffer));
  if (st->code == kernels::STATUS_OK) return;
  kernels::Status s = *st;
  std::memset(st, 0, sizeof(*st));
  std::string node = s.node < node_labels.size() ? node_labels[s.node] : "%" + std::to_string(s.node);
  bool label = s.node < node_ops.size() &&
               (node_ops[s.node] == Op::CrossEntropy || node_ops[s.node] == Op::CrossEntropyBackward);
  if (s.code == kernels::STATUS_INDEX_OUT_OF_RANGE && s.node < node_ops.size() && node_ops[s.node] == Op::CacheWrite)
    throw RuntimeDataError("cache_write in node \"" + node + "\": position " + std::to_string(s.value) +
                           " is outside [0, " + std::to_string(s.limit) +
                           "], the last position its rows fit at (the cache is full: " + "build it with more slots)");
  if (s.code == kernels::STATUS_INDEX_OUT_OF_RANGE && label)
    throw RuntimeDataError("label " + std::to_string(s.value) + " is out of range in node \"" + node +
                           "\": labels must be in [0, " + std::to_string(s.limit) + ") or equal the ignore_index");
  if (s.code == kernels::STATUS_INDEX_OUT_OF_RANGE)
    throw RuntimeDataError("index " + std::to_string(s.value) + " is out of range in node \"" + node +
                           "\": valid indices are [" + std::to_string(-static_cast<int64_t>(s.limit)) + ", " +
                           std::to_string(s.limit) + ")");
  if (s.code == kernels::STATUS_SUBGROUP_SIZE)
    throw DeviceError("the device ran the GEMV kernel with subgroups of " + std::to_string(s.value) + ", not the " +
                      std::to_string(s.limit) + " it reports; MEGANEURA_GEMV_SUBGROUP=0 runs the kernel without them");
  throw RuntimeDataError("kernel reported status " + std::to_string(s.code) + " in node \"" + node + "\"");
}

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

Session make_session(std::unique_ptr<Session::Impl> impl) { return Session(std::move(impl)); }

Session::Impl& impl_of(Session& session) { return *session.impl_; }

uint64_t Session::Impl::largest_buffer(const SessionOptions& options) {
  const auto ctx = vk::Context::get(options.device);
  const uint64_t largest = std::min<uint64_t>(ctx->max_allocation_size(), ctx->limits().maxStorageBufferRange);
  return options.max_buffer_bytes ? std::min(options.max_buffer_bytes, largest) : largest;
}

// MEGANEURA_SCHEDULE: level (default: independent calls recorded together, plan/schedule.hpp)
// or program (lowering's order).
static bool schedule_by_level() { return util::env_choice("MEGANEURA_SCHEDULE", {"level", "program"}) != "program"; }

std::unique_ptr<Session::Impl> Session::Impl::build(const Graph& g, const lower::Lowered& low,
                                                    const SessionOptions& options) {
  auto impl = std::make_unique<Session::Impl>();
  impl->options = options;
  impl->ctx = vk::Context::get(options.device);
  impl->trace_hold = std::make_unique<trace::SessionHold>(impl->ctx->info().name);
  const uint64_t split = largest_buffer(options);
  {
    trace::Scope phase("plan");
    impl->planned = plan::plan_program(
        low, g,
        {.reuse_memory = options.reuse_memory, .max_buffer_bytes = split, .schedule_by_level = schedule_by_level()});
  }
  {
    trace::Scope phase("pipelines", {{"dispatches", static_cast<int64_t>(impl->planned.dispatches)}});
    const bool timestamps = options.profile || trace::global();  // a trace shows every dispatch's GPU time
    impl->exe = std::make_unique<vk::Executable>(impl->ctx, impl->planned.program,
                                                 vk::ExecutableOptions{.timestamps = timestamps});
  }

  const plan::Planned& p = impl->planned;
  const auto& words = p.params_words;
  impl->exe->write({plan::kParamsBuffer, 0, words.size() * 4}, std::as_bytes(std::span(words)));
  // Optimizer state starts at zero; what derived calls write (weights staged for the tensor
  // cores, gigabytes at 1.7B parameters) is written whole before any step reads it.
  std::vector<bool> derived(low.tensors.size(), false);
  for (const lower::KernelCall& c : low.calls)
    for (const lower::Access& a : c.tensors)
      if (c.derived && a.write) derived[static_cast<size_t>(a.tensor)] = true;
  for (size_t t = 0; t < low.tensors.size(); ++t) {
    if (derived[t]) impl->staged_weight_bytes += p.tensor[t].size;
    if (low.tensors[t].role == lower::Role::State && !derived[t])
      impl->exe->write(p.tensor[t], std::vector<std::byte>(p.tensor[t].size));
  }
  for (int id = 0; id < g.size(); ++id) {
    const Node& n = g.node(id);
    impl->node_labels.push_back(g.label(id) + " (" + std::string(op_name(n.op)) + ")");
    impl->node_ops.push_back(n.op);
    Session::Impl::Named named{id, n.shape, n.dtype, false, n.init};
    if (n.op == Op::Input)
      impl->inputs.emplace(n.name, named);
    else if (n.op == Op::Parameter)
      impl->parameters.emplace(n.name, named);
    else if (n.op == Op::State)
      impl->states.emplace(n.name, named);
    else if (n.op == Op::Constant && !n.constant.empty())
      impl->exe->write(first_bytes(p.tensor[static_cast<size_t>(id)], n.constant.size()), n.constant);
  }
  for (auto& [name, id] : g.outputs())
    impl->outputs.emplace_back(name, Session::Impl::Named{id, g.node(id).shape, g.node(id).dtype});
  return impl;
}

// Each program of the options becomes an extra command list: the calls of the nodes its outputs
// depend on, downloading only those outputs. Returns the inputs each program reads.
static std::vector<std::vector<std::string>> add_programs(const Graph& g, lower::Lowered& low,
                                                          const SessionOptions& options) {
  std::vector<std::vector<std::string>> inputs;
  for (const std::vector<std::string>& program : options.programs) {
    lower::Lowered::CommandList list;
    for (const std::string& name : program) {
      auto it = std::find_if(g.outputs().begin(), g.outputs().end(), [&](const auto& o) { return o.first == name; });
      if (it == g.outputs().end())
        throw NameError("SessionOptions::programs names \"" + name + "\", which is not an output of the graph");
      list.outputs.push_back(it->second);
    }
    const std::vector<bool> needed = lower::reaching(g, list.outputs);
    for (size_t i = 0; i < low.calls.size(); ++i)
      if (low.calls[i].node >= 0 && needed[static_cast<size_t>(low.calls[i].node)]) list.calls.push_back(i);
    low.extra_lists.push_back(std::move(list));
    inputs.emplace_back();
    for (int id = 0; id < g.size(); ++id)
      if (needed[static_cast<size_t>(id)] && g.node(id).op == Op::Input) inputs.back().push_back(g.node(id).name);
  }
  return inputs;
}

std::unique_ptr<Session::Impl> Session::Impl::compile(const Graph& g, const std::vector<int>& keep, const Compile& how,
                                                      const SessionOptions& options) {
  lower::Lowered low;
  std::vector<std::vector<std::string>> program_inputs;
  {
    trace::Scope phase("lower");
    lower::LowerOptions lowering = runtime::lower_options(vk::Context::get(options.device)->info(), how.optimizing);
    lowering.update_pack_bytes = runtime::update_pack_bytes(largest_buffer(options));
    low = lower::lower(g, keep, lowering);
    if (how.forward_end > 0) {
      lower::Lowered::CommandList forward;
      for (size_t i = 0; i < low.calls.size() && low.calls[i].node < how.forward_end; ++i) forward.calls.push_back(i);
      low.extra_lists.push_back(std::move(forward));
    }
    program_inputs = add_programs(g, low, options);
  }
  lower::Lowered::CommandList derived;
  derived.derived = true;
  for (size_t i = 0; i < low.calls.size(); ++i)
    if (low.calls[i].derived) derived.calls.push_back(i);
  size_t derived_list = 0;  // run_list's number for it: extra list i is list 1 + i
  if (!derived.calls.empty()) {
    low.extra_lists.push_back(std::move(derived));
    derived_list = low.extra_lists.size();
  }
  std::unique_ptr<Session::Impl> impl = build(g, low, options);
  impl->program_inputs = std::move(program_inputs);
  impl->derived_list = derived_list;
  return impl;
}

Session build_inference_session(const Graph& g, const SessionOptions& options) {
  trace::Scope build("build inference session", {{"nodes", static_cast<int64_t>(g.size())}});
  const bool optimizing = runtime::optimizing(options.optimize);
  std::unique_ptr<Graph> opt;
  if (optimizing) {
    trace::Scope phase("optimize");
    optimize::Report report;
    opt = optimize::optimize(g, &report);
    runtime::log_optimize(report.to_string());
  }
  return Session(Session::Impl::compile(optimizing ? *opt : g, {}, {.optimizing = optimizing}, options));
}

void Session::set_input(std::string_view name, const HostTensor& value) {
  auto& n = impl_->find(impl_->inputs, name, "input", impl_->parameters, "a parameter", "set_parameter");
  Impl::check_value(n, name, "input", value);
  const plan::Slice& s = impl_->planned.upload[static_cast<size_t>(n.tensor)];
  std::memcpy(static_cast<std::byte*>(impl_->exe->mapped(s.buffer)) + s.offset, value.bytes.data(), value.bytes.size());
  n.set = true;
}

void Session::set_input(std::string_view name, std::span<const float> values) {
  auto& n = impl_->find(impl_->inputs, name, "input", impl_->parameters, "a parameter", "set_parameter");
  set_input(name, HostTensor{n.shape,
                             f32,
                             {reinterpret_cast<const std::byte*>(values.data()),
                              reinterpret_cast<const std::byte*>(values.data() + values.size())}});
}

void Session::set_parameter(std::string_view name, const HostTensor& value) {
  auto& n = impl_->find(impl_->parameters, name, "parameter", impl_->inputs, "an input", "set_input");
  Impl::check_value(n, name, "parameter", value);
  impl_->exe->write(first_bytes(impl_->planned.tensor[static_cast<size_t>(n.tensor)], value.bytes.size()), value.bytes);
  impl_->wrote_parameter(n);
}

void Session::set_parameter(std::string_view name, std::span<const float> values) {
  auto& n = impl_->find(impl_->parameters, name, "parameter", impl_->inputs, "an input", "set_input");
  set_parameter(name, HostTensor{n.shape,
                                 f32,
                                 {reinterpret_cast<const std::byte*>(values.data()),
                                  reinterpret_cast<const std::byte*>(values.data() + values.size())}});
}

void Session::Impl::fill_default(const std::string& name, Named& parameter) {
  if (parameter.set || parameter.init.kind == Init::Kind::none) return;
  const std::vector<float> values = init::draw(parameter.init, parameter.shape, name, 0);
  exe->write(first_bytes(planned.tensor[static_cast<size_t>(parameter.tensor)], values.size() * sizeof(float)),
             std::as_bytes(std::span(values)));
  wrote_parameter(parameter);
}

void Session::Impl::refresh_derived() {
  if (derived_list == 0 || !derived_stale) return;
  run_list(derived_list);
  derived_stale = false;
}

void Session::Impl::fill_defaults() {
  for (auto& [name, parameter] : parameters) fill_default(name, parameter);
}

void Session::Impl::check_inputs_set(std::string_view call, const std::vector<std::string>* only) const {
  std::string unset;
  for (auto* m : {&inputs, &parameters})
    for (auto& [name, n] : *m) {
      const bool read = m != &inputs || !only || std::find(only->begin(), only->end(), name) != only->end();
      if (read && !n.set)
        unset +=
            (unset.empty() ? "" : ", ") + (std::string(m == &inputs ? "input" : "parameter") + " \"" + name + "\"");
    }
  if (!unset.empty()) throw Error(std::string(call) + " before these were set: " + unset);
}

// Executable list 1 + program (run(program)'s), or an Error naming the call.
static size_t program_list(const Session::Impl& m, size_t program, const char* what) {
  if (program >= m.program_inputs.size())
    throw Error(std::string(what) + "(" + std::to_string(program) + "): the session has " +
                std::to_string(m.program_inputs.size()) + " programs (SessionOptions::programs)");
  return 1 + program;
}

void Session::run(size_t program) {
  const size_t list = program_list(*impl_, program, "run");
  impl_->fill_defaults();
  // Only the inputs this program reads.
  impl_->check_inputs_set("run(" + std::to_string(program) + ")", &impl_->program_inputs[program]);
  impl_->refresh_derived();
  impl_->run_list(list);
  ++impl_->steps;
  impl_->check_status();
}

void Session::step() {
  impl_->fill_defaults();
  impl_->check_inputs_set("step()");
  impl_->refresh_derived();
  impl_->run_list(0);
  ++impl_->steps;
  impl_->check_status();
}

HostTensor Session::read_output(std::string_view name) const {
  for (size_t i = 0; i < impl_->outputs.size(); ++i) {
    auto& [oname, n] = impl_->outputs[i];
    if (oname != name) continue;
    if (impl_->steps == 0 && !impl_->evaluated)
      throw Error("read_output(\"" + std::string(name) + "\") before any step()");
    const plan::Slice& s = impl_->planned.readback[i];
    HostTensor t{n.shape, n.dtype, std::vector<std::byte>(static_cast<size_t>(numel(n.shape)) * dtype_size(n.dtype))};
    std::memcpy(t.bytes.data(), static_cast<const std::byte*>(impl_->exe->mapped(s.buffer)) + s.offset, t.bytes.size());
    return t;
  }
  std::string names;
  for (auto& [oname, n] : impl_->outputs) names += (names.empty() ? "\"" : ", \"") + oname + "\"";
  throw NameError("unknown output \"" + std::string(name) + "\"; the session's outputs are: " + names);
}

HostTensor Session::read_parameter(std::string_view name) const {
  auto& n = impl_->find(impl_->parameters, name, "parameter", impl_->inputs, "an input", "read_output");
  if (!n.set) impl_->fill_default(std::string(name), n);
  HostTensor t{n.shape, n.dtype, std::vector<std::byte>(static_cast<size_t>(numel(n.shape)) * dtype_size(n.dtype))};
  impl_->exe->read(first_bytes(impl_->planned.tensor[static_cast<size_t>(n.tensor)], t.bytes.size()), t.bytes);
  return t;
}

ParameterInfo Session::parameter_info(std::string_view name) const {
  const auto& n = impl_->find(impl_->parameters, name, "parameter", impl_->inputs, "an input", "input_names");
  return {n.shape, n.dtype, n.init};
}

static std::vector<std::string> names_of(const std::map<std::string, Session::Impl::Named, std::less<>>& m) {
  std::vector<std::string> v;
  for (auto& [name, n] : m) v.push_back(name);
  return v;
}
std::vector<std::string> Session::input_names() const { return names_of(impl_->inputs); }
std::vector<std::string> Session::parameter_names() const { return names_of(impl_->parameters); }
std::vector<std::string> Session::output_names() const {
  std::vector<std::string> v;
  for (auto& [name, n] : impl_->outputs) v.push_back(name);
  return v;
}

MemoryStats Session::memory() const {
  const plan::Planned& p = impl_->planned;
  const auto& b = p.program.buffers;
  MemoryStats m;
  for (uint32_t i : p.parameter_buffers) m.parameters += b[i].size;
  for (uint32_t i : p.arena_buffers) m.arena += b[i].size;
  m.parameter_buffers = static_cast<uint32_t>(p.parameter_buffers.size());
  m.arena_buffers = static_cast<uint32_t>(p.arena_buffers.size());
  m.io = b[plan::kInputBuffer].size;
  m.arena_unshared = impl_->planned.arena_unshared;
  m.staged_weights = impl_->staged_weight_bytes;
  m.total_device = impl_->exe->device_bytes();
  return m;
}

SessionStats Session::stats() const {
  return {impl_->exe->recordings(), impl_->steps, impl_->planned.dispatches, impl_->planned.barriers};
}

static std::string listing_of(const Session::Impl& m, size_t list) {
  static const char* kBarrier[] = {"transfer -> compute", "compute -> compute", "compute -> transfer",
                                   "transfer -> host"};
  std::ostringstream o;
  for (const plan::Command& c : m.planned.program.list(list)) {
    if (auto* d = std::get_if<plan::Dispatch>(&c))
      o << "dispatch " << (d->generated >= 0 ? "generated" : kernels::kernel_name(d->kernel)) << " (" << d->groups[0]
        << "," << d->groups[1] << "," << d->groups[2] << ")  " << d->label << "\n";
    else if (auto* cp = std::get_if<plan::Copy>(&c))
      o << "copy     " << m.planned.program.buffers[cp->src.buffer].name << " -> "
        << m.planned.program.buffers[cp->dst.buffer].name << " (" << cp->src.size << " bytes)\n";
    else
      o << "barrier  " << kBarrier[std::get<plan::Barrier>(c).kind] << "\n";
  }
  return o.str();
}

static std::vector<std::pair<std::string, double>> profile_of(const Session::Impl& m, size_t list) {
  if (!m.options.profile) throw Error("profile() needs SessionOptions{.profile = true}");
  const std::vector<plan::Command>& commands = m.planned.program.list(list);
  std::vector<vk::DispatchTime> times = m.exe->dispatch_intervals_ns(list);
  std::vector<std::pair<std::string, double>> out;
  size_t i = 0;
  for (const plan::Command& c : commands)
    if (auto* d = std::get_if<plan::Dispatch>(&c)) {
      out.emplace_back(d->label, i < times.size() ? times[i].end_ns - times[i].begin_ns : 0.0);
      ++i;
    }
  return out;
}

std::string Session::listing() const { return listing_of(*impl_, 0); }
std::string Session::listing(size_t program) const {
  return listing_of(*impl_, program_list(*impl_, program, "listing"));
}
std::vector<std::pair<std::string, double>> Session::profile() const { return profile_of(*impl_, 0); }
std::vector<std::pair<std::string, double>> Session::profile(size_t program) const {
  return profile_of(*impl_, program_list(*impl_, program, "profile"));
}

}  // namespace meganeura
