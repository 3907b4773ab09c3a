// A session's steps in the MEGANEURA_TRACE trace: each run of a command list is a slice on the
// CPU track, and its dispatches, timed by the executable's timestamp queries, slices on the GPU
// track under a slice of the same name.
#include <algorithm>
#include <cmath>

#include "kernels/spirv.hpp"
#include "runtime/session_impl.hpp"

namespace meganeura {

namespace {

// "train step", "evaluate", "step", or the program's outputs: "run prefill.logits".
std::string list_name(const Session::Impl& s, size_t list) {
  if (list == 0) return s.train ? "train step" : "step";
  if (list == s.derived_list) return "stage weights";
  if (s.train) return "evaluate";
  std::string name = "run";
  for (const std::string& out : s.options.programs.at(list - 1)) name += " " + out;
  return name;
}

std::vector<trace::GpuSlice> gpu_slices(const std::vector<plan::Command>& commands,
                                        const std::vector<vk::DispatchTime>& times) {
  std::vector<trace::GpuSlice> out;
  for (const plan::Command& c : commands) {
    const auto* d = std::get_if<plan::Dispatch>(&c);
    if (!d || out.size() >= times.size()) continue;
    const vk::DispatchTime& t = times[out.size()];
    const std::string groups =
        std::to_string(d->groups[0]) + "x" + std::to_string(d->groups[1]) + "x" + std::to_string(d->groups[2]);
    trace::Args args{{"kernel", std::string(d->generated >= 0 ? "generated" : kernels::kernel_name(d->kernel))},
                     {"workgroups", groups},
                     {"dispatch", static_cast<int64_t>(out.size())}};
    auto ns = [](double v) { return static_cast<uint64_t>(std::llround(std::max(v, 0.0))); };
    out.push_back({d->label, ns(t.begin_ns), ns(t.end_ns), std::move(args)});
  }
  return out;
}

}  // namespace

void run_traced(vk::Executable& exe, const plan::Program& program, size_t list, const std::string& name,
                const trace::Args& args) {
  trace::Collector* tc = trace::global();
  if (!tc || !tc->take_step()) return exe.run(list);
  uint64_t submit = 0;
  {
    trace::Scope cpu(name, args);
    submit = trace::now_ns();  // inside the CPU slice, so the GPU step starts within it
    exe.run(list);
  }
  tc->gpu_step(name, submit, gpu_slices(program.list(list), exe.dispatch_intervals_ns(list)), args);
}

void Session::Impl::run_list(size_t list) {
  if (!trace::global()) return exe->run(list);
  run_traced(*exe, planned.program, list, list_name(*this, list),
             {{"session", static_cast<int64_t>(trace_hold->id())}, {"step", static_cast<int64_t>(steps)}});
}

}  // namespace meganeura
