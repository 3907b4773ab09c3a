// MEGANEURA_TRACE: the Perfetto trace of a process, decoded by an independent reader
// (perfetto_reader.cpp). MEGANEURA_TRACE is read once per process, so the traced runs happen in
// child processes (this binary again, running one DISABLED_ test) with the variable set.
#include "trace/trace.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "file_fixtures.hpp"
#include "meganeura/meganeura.hpp"
#include "perfetto_reader.hpp"
#include "test_util.hpp"
#include "trace/proto_writer.hpp"

namespace mntest {
namespace {

using namespace meganeura;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

constexpr const char* kLimitName = "trace: step limit reached (MEGANEURA_TRACE_STEPS)";

std::vector<float> ramp(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>((i * 7) % 11) - 0.5f;
  return v;
}

// A small regression: tanh(x w + b) against t.
struct Regression {
  Graph g;
  Tensor loss;
  Regression() {
    Tensor x = g.input("x", {8, 6}), t = g.input("t", {8, 5});
    Tensor y = tanh(matmul(x, g.parameter("w", {6, 5})) + g.parameter("b", {5}));
    g.output("y", y);
    Tensor d = y - t;
    loss = mean(d * d);
  }
  void feed(Session& s) const {
    s.set_parameter("w", ramp(30, 0.1f));
    s.set_parameter("b", ramp(5, 0.05f));
    s.set_input("x", ramp(48, 0.2f));
    s.set_input("t", ramp(40, 0.1f));
  }
};

// An inference graph with two outputs, so that a program ("y" alone) runs fewer dispatches.
struct TwoOutputs {
  Graph g;
  TwoOutputs() {
    Tensor y = relu(matmul(g.input("x", {4, 6}), g.parameter("w", {6, 3})));
    g.output("y", y);
    g.output("z", softmax(y * 2.0f, -1));
  }
  void feed(Session& s) const {
    s.set_parameter("w", ramp(18, 0.1f));
    s.set_input("x", ramp(24, 0.3f));
  }
};

std::vector<std::string> names(const TraceTrack& t, const std::vector<int>& slices) {
  std::vector<std::string> out;
  for (int i : slices) out.push_back(t.slices[static_cast<size_t>(i)].name);
  return out;
}

std::vector<std::string> labels(const std::vector<std::pair<std::string, double>>& profile) {
  std::vector<std::string> out;
  for (const auto& [label, ns] : profile) out.push_back(label);
  return out;
}

int64_t int_arg(const TraceSlice& s, const std::string& name) {
  auto it = s.args.find(name);
  if (it == s.args.end() || !it->second.integer) {
    ADD_FAILURE() << "slice \"" << s.name << "\" has no integer argument \"" << name << "\"";
    return -1;
  }
  return *it->second.integer;
}

// The three tracks of a traced process: its own, the calling thread's CPU track, the GPU's.
struct Tracks {
  const TraceTrack *process = nullptr, *cpu = nullptr, *gpu = nullptr;
};

Tracks find_tracks(const DecodedTrace& trace) {
  Tracks t;
  for (const auto& [uuid, track] : trace.tracks) {
    if (track.process_pid)
      t.process = &track;
    else if (track.thread_tid)
      t.cpu = &track;
    else if (track.name.rfind("GPU: ", 0) == 0)
      t.gpu = &track;
    else
      ADD_FAILURE() << "unexpected track \"" << track.name << "\"";
  }
  EXPECT_EQ(trace.tracks.size(), 3u);
  if (!t.process || !t.cpu || !t.gpu) {
    ADD_FAILURE() << "the trace lacks the process, CPU or GPU track";
    return {};
  }
  EXPECT_EQ(t.cpu->parent_uuid, t.process->uuid);
  EXPECT_EQ(t.gpu->parent_uuid, t.process->uuid);
  return t;
}

// Each dispatch of a GPU step: a child slice named by its label, with its kernel, workgroups and
// index; returns the names.
std::vector<std::string> check_dispatches(const TraceTrack& gpu, int step) {
  std::vector<int> kids = DecodedTrace::children(gpu, step);
  EXPECT_FALSE(kids.empty()) << "GPU step " << gpu.slices[static_cast<size_t>(step)].name << " has no dispatches";
  for (size_t i = 0; i < kids.size(); ++i) {
    const TraceSlice& d = gpu.slices[static_cast<size_t>(kids[i])];
    EXPECT_FALSE(d.instant);
    EXPECT_GE(d.end, d.begin) << d.name;
    EXPECT_EQ(int_arg(d, "dispatch"), static_cast<int64_t>(i)) << d.name;
    const auto kernel = d.args.find("kernel"), groups = d.args.find("workgroups");
    EXPECT_TRUE(kernel != d.args.end() && kernel->second.str && !kernel->second.str->empty()) << d.name;
    EXPECT_TRUE(groups != d.args.end() && groups->second.str) << d.name;
    if (groups != d.args.end() && groups->second.str) {
      EXPECT_EQ(std::count(groups->second.str->begin(), groups->second.str->end(), 'x'), 2) << d.name;
    }
    EXPECT_TRUE(DecodedTrace::children(gpu, kids[i]).empty()) << "dispatches do not nest";
  }
  return names(gpu, kids);
}

// ---- run in a child process with MEGANEURA_TRACE and MEGANEURA_TRACE_STEPS=6 --------------------

TEST(Trace, DISABLED_TracedSessionsChild) {
  const char* path = std::getenv("MEGANEURA_TRACE");
  if (!path) GTEST_SKIP() << "run by Trace.RecordsBuildPhasesStepsAndEveryDispatch";
  ASSERT_NE(trace::global(), nullptr);
  std::vector<std::vector<std::pair<std::string, double>>> train_profiles;
  std::vector<std::pair<std::string, double>> inference_profile;
  {
    Regression r;
    Session train = build_session(r.g, r.loss, TrainConfig{.profile = true});
    r.feed(train);
    for (int i = 0; i < 3; ++i) {
      train.step();
      train_profiles.push_back(train.profile());
    }
    train.evaluate();

    TwoOutputs m;
    Session infer = build_inference_session(m.g, {.profile = true, .programs = {{"y"}}});
    m.feed(infer);
    infer.step();
    inference_profile = infer.profile();
    infer.run(0);
    infer.step();  // past MEGANEURA_TRACE_STEPS: not traced
    infer.step();
    EXPECT_FALSE(std::filesystem::exists(path)) << "written while sessions were alive";
  }  // the last session goes: the trace is written
  const DecodedTrace trace = decode_trace(read_bytes(path));
  const Tracks t = find_tracks(trace);
  ASSERT_TRUE(t.cpu);
  EXPECT_EQ(*t.process->process_pid, ::getpid());
  EXPECT_EQ(*t.cpu->thread_tid, ::gettid());

  // CPU: two builds with their phases, six steps, then the step limit.
  const TraceTrack& cpu = *t.cpu;
  const std::vector<int> cpu_roots = DecodedTrace::roots(cpu);
  ASSERT_THAT(names(cpu, cpu_roots), ElementsAre("build training session", "train step", "train step", "train step",
                                                 "evaluate", "build inference session", "step", "run y", kLimitName));
  EXPECT_THAT(names(cpu, DecodedTrace::children(cpu, cpu_roots[0])),
              ElementsAre("optimize forward", "autodiff", "optimize", "lower", "plan", "pipelines"));
  EXPECT_THAT(names(cpu, DecodedTrace::children(cpu, cpu_roots[5])),
              ElementsAre("optimize", "lower", "plan", "pipelines"));
  const TraceSlice& limit = cpu.slices[static_cast<size_t>(cpu_roots[8])];
  EXPECT_TRUE(limit.instant);
  EXPECT_EQ(int_arg(limit, "MEGANEURA_TRACE_STEPS"), 6);
  const std::vector<int> cpu_steps{cpu_roots[1], cpu_roots[2], cpu_roots[3], cpu_roots[4], cpu_roots[6], cpu_roots[7]};
  const std::vector<int64_t> session_of{1, 1, 1, 1, 2, 2}, step_of{0, 1, 2, 3, 0, 1};
  for (size_t i = 0; i < cpu_steps.size(); ++i) {
    const TraceSlice& s = cpu.slices[static_cast<size_t>(cpu_steps[i])];
    EXPECT_EQ(int_arg(s, "session"), session_of[i]) << s.name;
    EXPECT_EQ(int_arg(s, "step"), step_of[i]) << s.name;
  }

  // GPU: one slice per traced step, inside its CPU step, holding one slice per dispatch.
  const TraceTrack& gpu = *t.gpu;
  const std::vector<int> gpu_steps = DecodedTrace::roots(gpu);
  ASSERT_EQ(names(gpu, gpu_steps), names(cpu, cpu_steps));
  for (size_t i = 0; i < gpu_steps.size(); ++i) {
    const TraceSlice &g = gpu.slices[static_cast<size_t>(gpu_steps[i])],
                     &c = cpu.slices[static_cast<size_t>(cpu_steps[i])];
    EXPECT_GE(g.begin, c.begin) << "GPU " << g.name << " starts before it was submitted";
    EXPECT_LE(g.end, c.end) << "GPU " << g.name << " ends after the CPU saw it finish";
    EXPECT_EQ(int_arg(g, "session"), session_of[i]);
  }
  for (size_t k = 0; k < 3; ++k) {  // the train steps: the session's labels, the profile's durations
    const int step = gpu_steps[k];
    EXPECT_THAT(check_dispatches(gpu, step), ElementsAreArray(labels(train_profiles[k])));
    const std::vector<int> kids = DecodedTrace::children(gpu, step);
    for (size_t j = 0; j < kids.size() && j < train_profiles[k].size(); ++j) {
      const TraceSlice& d = gpu.slices[static_cast<size_t>(kids[j])];
      EXPECT_NEAR(static_cast<double>(d.end - d.begin), train_profiles[k][j].second, 2.0) << d.name;
    }
  }
  EXPECT_THAT(check_dispatches(gpu, gpu_steps[4]), ElementsAreArray(labels(inference_profile)));
  // evaluate and run y: command lists of their own, fewer dispatches, each one of the step's.
  const std::pair<int, std::vector<std::string>> partial[] = {{gpu_steps[3], labels(train_profiles[0])},
                                                              {gpu_steps[5], labels(inference_profile)}};
  for (const auto& [step, all] : partial) {
    const std::vector<std::string> ran = check_dispatches(gpu, step);
    EXPECT_LT(ran.size(), all.size());
    for (const std::string& label : ran) EXPECT_THAT(all, ::testing::Contains(label));
  }
}

// A Generator decoding with the persistent dispatch (MEGANEURA_PERSISTENT=1 from the parent):
// each decoding step is a CPU slice holding one GPU step of one dispatch, decode_step.
TEST(Trace, DISABLED_PersistentDecodingChild) {
  const char* path = std::getenv("MEGANEURA_TRACE");
  if (!path) GTEST_SKIP() << "run by Trace.PersistentDecodingIsOneDispatchAStep";
  uint32_t grid = 0;
  {
    models::LlamaConfig c;
    c.vocab_size = 50;
    c.hidden_size = 16;
    c.intermediate_size = 24;
    c.num_hidden_layers = 1;
    c.num_attention_heads = c.num_key_value_heads = 2;
    c.head_dim = 8;
    mntest::ScopedEnv high("MEGANEURA_MATMUL_PRECISION", "high");  // f16 weights: their copy is traced
    models::Generator gen(c, {.max_seq = 8});
    ASSERT_TRUE(gen.persistent());
    ASSERT_EQ(gen.persistent_weights(), "f16");
    grid = gen.persistent_grid();
    gen.prefill({1, 2});
    gen.decode(3);
    gen.decode(4);
  }
  const DecodedTrace trace = decode_trace(read_bytes(path));
  const Tracks t = find_tracks(trace);
  ASSERT_TRUE(t.gpu);
  std::vector<int> steps;
  for (int i : DecodedTrace::roots(*t.gpu))
    if (t.gpu->slices[static_cast<size_t>(i)].name == "decode step (persistent)") steps.push_back(i);
  ASSERT_EQ(steps.size(), 2u) << "one GPU step a decoded token";
  for (int step : steps) {
    const std::vector<std::string> dispatches = check_dispatches(*t.gpu, step);
    ASSERT_EQ(dispatches.size(), 1u);
    EXPECT_EQ(dispatches[0], "decode_step (persistent, " + std::to_string(grid) + " workgroups, f16 weights)");
  }
  int copies = 0;
  for (int i : DecodedTrace::roots(*t.gpu))
    copies += t.gpu->slices[static_cast<size_t>(i)].name == "persistent decoding's weights to f16";
  EXPECT_EQ(copies, 1) << "the weights are copied once: no parameter was written between the steps";
  int cpu_steps = 0;
  for (const TraceSlice& slice : t.cpu->slices) cpu_steps += slice.name == "decode step (persistent)";
  EXPECT_EQ(cpu_steps, 2);
}

// A session that is never destroyed: the trace is written at exit. Held by a static, so that
// LeakSanitizer sees it reachable, not leaked (this child must exit 0 in sanitizer builds too).
TEST(Trace, DISABLED_SessionAliveAtExitChild) {
  if (!std::getenv("MEGANEURA_TRACE")) GTEST_SKIP() << "run by Trace.WrittenAtExitWhileASessionLives";
  TwoOutputs m;
  static Session* leaked = nullptr;
  leaked = new Session(build_inference_session(m.g));
  m.feed(*leaked);
  leaked->step();
}

TEST(Trace, DISABLED_UntracedStepChild) {
  if (!std::getenv("MEGANEURA_TRACE")) GTEST_SKIP() << "run by Trace.UnwritablePathWarnsAndRunsUntraced";
  EXPECT_EQ(trace::global(), nullptr);
  TwoOutputs m;
  Session s = build_inference_session(m.g);
  m.feed(s);
  s.step();
  EXPECT_EQ(s.read_output("y").to_f32().size(), 12u);
}

ChildRun run_child(const std::string& test, const std::string& trace_path, const std::string& log) {
  return run_self_child(test, {"MEGANEURA_TRACE=", "MEGANEURA_TRACE_STEPS=", "MEGANEURA_OPTIMIZE="},
                        {"MEGANEURA_TRACE=" + trace_path, "MEGANEURA_TRACE_STEPS=6"}, log);
}

// ---- the tests ----------------------------------------------------------------------------------

TEST(Trace, RecordsBuildPhasesStepsAndEveryDispatch) {
  TempDir dir;
  const ChildRun child = run_child("Trace.DISABLED_TracedSessionsChild", dir / "run.pftrace", dir / "child.log");
  ASSERT_GT(child.pid, 0);
  EXPECT_EQ(child.status, 0) << read_bytes(dir / "child.log");
  EXPECT_THAT(read_bytes(dir / "child.log"), HasSubstr("[  PASSED  ] 1 test")) << "the child did not run its test";
}

TEST(Trace, PersistentDecodingIsOneDispatchAStep) {
  TempDir dir;
  const ChildRun child = run_self_child(
      "Trace.DISABLED_PersistentDecodingChild", {"MEGANEURA_TRACE=", "MEGANEURA_PERSISTENT="},
      {"MEGANEURA_TRACE=" + std::string(dir / "run.pftrace"), "MEGANEURA_PERSISTENT=1"}, dir / "child.log");
  ASSERT_GT(child.pid, 0);
  EXPECT_EQ(child.status, 0) << read_bytes(dir / "child.log");
  EXPECT_THAT(read_bytes(dir / "child.log"), HasSubstr("[  PASSED  ] 1 test")) << "the child did not run its test";
}

TEST(Trace, WrittenAtExitWhileASessionLives) {
  TempDir dir;
  const ChildRun child = run_child("Trace.DISABLED_SessionAliveAtExitChild", dir / "exit.pftrace", dir / "child.log");
  ASSERT_EQ(child.status, 0) << read_bytes(dir / "child.log");
  ASSERT_TRUE(std::filesystem::exists(dir / "exit.pftrace")) << read_bytes(dir / "child.log");
  const DecodedTrace trace = decode_trace(read_bytes(dir / "exit.pftrace"));
  const Tracks t = find_tracks(trace);
  ASSERT_TRUE(t.cpu);
  EXPECT_THAT(names(*t.cpu, DecodedTrace::roots(*t.cpu)), ElementsAre("build inference session", "step"));
  EXPECT_THAT(names(*t.gpu, DecodedTrace::roots(*t.gpu)), ElementsAre("step"));
}

TEST(Trace, UnwritablePathWarnsAndRunsUntraced) {
  TempDir dir;
  const std::string bad = dir / "no-such-dir/run.pftrace";
  const ChildRun child = run_child("Trace.DISABLED_UntracedStepChild", bad, dir / "child.log");
  const std::string log = read_bytes(dir / "child.log");
  EXPECT_EQ(child.status, 0) << log;
  EXPECT_THAT(log, HasSubstr("MEGANEURA_TRACE=" + bad));
  EXPECT_THAT(log, HasSubstr("tracing is off"));
  EXPECT_THAT(log, HasSubstr("[  PASSED  ] 1 test"));
}

// The wire format against the examples of the protobuf encoding guide, so that the writer and
// the test's reader cannot agree on a mistake.
TEST(Trace, ProtoWriterEncodesAsProtobufDoes) {
  trace::ProtoWriter w;
  w.uint(1, 150);
  EXPECT_EQ(w.bytes(), std::string("\x08\x96\x01", 3));
  trace::ProtoWriter s;
  s.str(2, "testing");
  EXPECT_EQ(s.bytes(), std::string("\x12\x07testing", 9));
  trace::ProtoWriter n;
  n.sint(4, -2);  // int64: ten bytes of two's complement
  EXPECT_EQ(n.bytes(), std::string("\x20\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11));
  trace::ProtoWriter d;
  d.dbl(5, 1.0);
  EXPECT_EQ(d.bytes(), std::string("\x29\x00\x00\x00\x00\x00\x00\xf0\x3f", 9));
  trace::ProtoWriter outer;
  outer.message(3, w);
  EXPECT_EQ(outer.bytes(), std::string("\x1a\x03\x08\x96\x01", 5));
}

// GPU steps are placed at their submit time, after the previous GPU step, and their dispatches
// kept in order without overlap whatever the timestamps say.
TEST(Trace, GpuStepsNestAndNeverOverlap) {
  TempDir dir;
  trace::Collector c(dir / "gpu.pftrace", 10);
  c.session_opened("test device");  // describes the GPU track
  c.gpu_step("a", 1000, {{"d0", 0, 10, {}}, {"d1", 5, 20, {}}, {"d2", 30, 25, {}}});
  c.gpu_step("b", 1015, {{"d0", 0, 4, {}}});  // submitted (by the CPU's clock) before "a" ended
  ASSERT_TRUE(c.write());
  const DecodedTrace trace = decode_trace(read_bytes(dir / "gpu.pftrace"));
  const TraceTrack* gpu = nullptr;
  for (const auto& [uuid, t] : trace.tracks)
    if (t.name == "GPU: test device") gpu = &t;
  ASSERT_TRUE(gpu);
  const std::vector<int> steps = DecodedTrace::roots(*gpu);
  ASSERT_THAT(names(*gpu, steps), ElementsAre("a", "b"));
  using Span = std::pair<uint64_t, uint64_t>;
  auto span = [&](int i) { return Span(gpu->slices[size_t(i)].begin, gpu->slices[size_t(i)].end); };
  EXPECT_EQ(span(steps[0]), (Span(1000, 1030)));
  const std::vector<int> a = DecodedTrace::children(*gpu, steps[0]);
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(span(a[0]), (Span(1000, 1010)));
  EXPECT_EQ(span(a[1]), (Span(1010, 1020)));
  EXPECT_EQ(span(a[2]), (Span(1030, 1030)));
  EXPECT_EQ(span(steps[1]), (Span(1030, 1034)));
}

TEST(Trace, WriteFailureWarnsNamingTheFile) {
  TempDir dir;
  const std::string path = dir / "missing/trace.pftrace";
  trace::Collector c(path, 10);
  c.begin("work");
  c.end();
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(c.write());
  EXPECT_THAT(::testing::internal::GetCapturedStderr(), HasSubstr(path));
  EXPECT_FALSE(std::filesystem::exists(path));
}

}  // namespace
}  // namespace mntest
